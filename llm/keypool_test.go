package llm

import (
	"errors"
	"sync"
	"testing"
	"time"
)

func TestKeyPool(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := NewKeyPool("key-aaaaaaaaaa1", "key-bbbbbbbbbb2", "", "key-aaaaaaaaaa1")
	p.now = func() time.Time { return now }
	if p.Len() != 2 {
		t.Fatalf("Len = %d, want 2 (empty and duplicate dropped)", p.Len())
	}
	k1, _ := p.Acquire()
	k2, _ := p.Acquire()
	if k1 == k2 {
		t.Fatalf("round robin gave %q twice", k1)
	}
	// k1 is rate limited for 10s: only k2 is handed out.
	p.Report(k1, &Error{Category: CategoryRateLimit, RetryAfter: 10 * time.Second})
	for range 3 {
		if k, err := p.Acquire(); err != nil || k != k2 {
			t.Fatalf("Acquire = %q, %v; want %q", k, err, k2)
		}
	}
	// k2 is rejected: retired for good.
	p.Report(k2, &Error{Category: CategoryAuth})
	_, err := p.Acquire()
	var e *Error
	if !errors.As(err, &e) || e.Category != CategoryRateLimit || e.RetryAfter != 10*time.Second || !errors.Is(err, ErrNoKey) {
		t.Fatalf("all cooling/dead: err = %v", err)
	}
	h := p.Health()
	if h[0].State != KeyCooling || h[1].State != KeyDead || h[0].Key != "key-...aaa1" || h[0].LastError == "" {
		t.Fatalf("health = %+v", h)
	}
	// The cool-down ends.
	now = now.Add(11 * time.Second)
	if k, err := p.Acquire(); err != nil || k != k1 {
		t.Fatalf("after cool-down Acquire = %q, %v", k, err)
	}
	// Errors that are not about the key change nothing; nil is fine.
	p.Report(k1, &Error{Category: CategoryServer})
	p.Report(k1, nil)
	p.Report(k1, errors.New("plain"))
	if p.Health()[0].State != KeyOK {
		t.Fatalf("state changed by a server error: %+v", p.Health()[0])
	}
	p.Report(k1, &Error{Category: CategoryPermission})
	if _, err := p.Acquire(); !errors.As(err, &e) || e.Category != CategoryAuth {
		t.Fatalf("all dead: err = %v", err)
	}
}

func TestKeyPoolDefaultCooldownAndEmpty(t *testing.T) {
	t.Parallel()
	now := time.Now()
	p := NewKeyPool("only-key-123456")
	p.now = func() time.Time { return now }
	p.Report("only-key-123456", &Error{Category: CategoryRateLimit})
	if h := p.Health()[0]; !h.CoolUntil.Equal(now.Add(DefaultCooldown)) {
		t.Fatalf("cool until %v, want +%v", h.CoolUntil, DefaultCooldown)
	}
	if _, err := NewKeyPool().Acquire(); !errors.Is(err, ErrNoKey) {
		t.Fatalf("empty pool: %v", err)
	}
}

func TestKeyPoolConcurrent(t *testing.T) {
	t.Parallel()
	p := NewKeyPool("k1-xxxxxxxxxxxx", "k2-xxxxxxxxxxxx", "k3-xxxxxxxxxxxx")
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 200 {
				k, err := p.Acquire()
				if err == nil {
					p.Report(k, nil)
				}
				_ = p.Health()
			}
		})
	}
	wg.Wait()
	total := 0
	for _, h := range p.Health() {
		total += h.Uses
	}
	if total != 1600 {
		t.Fatalf("uses = %d, want 1600", total)
	}
}

func TestEndpointKey(t *testing.T) {
	t.Parallel()
	e := Endpoint{APIKey: "plain"}
	if k, err := e.Key(); k != "plain" || err != nil {
		t.Fatalf("Key = %q %v", k, err)
	}
	e.Keys = NewKeyPool("pooled-key-1234")
	if k, _ := e.Key(); k != "pooled-key-1234" {
		t.Fatalf("pool not preferred: %q", k)
	}
	if (&Endpoint{}).Idle() != DefaultIdleTimeout || (&Endpoint{IdleTimeout: -1}).Idle() != 0 {
		t.Fatal("Idle defaults wrong")
	}
}

// TestKeyPoolFailover: Report marks a rate limit or a rejected key as a
// failover when another key is usable now, and only then; Status shows
// the pool masked, with when the first cooling key is back.
func TestKeyPoolFailover(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := NewKeyPool("key-aaaaaaaaaa1", "key-bbbbbbbbbb2", "key-cccccccccc3")
	p.now = func() time.Time { return now }
	report := func(key string, cat Category, after time.Duration) bool {
		e := &Error{Category: cat, RetryAfter: after}
		p.Report(key, e)
		return e.Failover
	}
	if !report("key-aaaaaaaaaa1", CategoryRateLimit, 20*time.Second) {
		t.Fatal("429 with two healthy keys left: no failover")
	}
	if report("key-bbbbbbbbbb2", CategoryPermission, 0) {
		t.Fatal("403 (maybe about the model) was failed over")
	}
	if report("key-cccccccccc3", CategoryServer, 0) {
		t.Fatal("a server error was failed over")
	}
	st := p.Status()
	if st.Usable != 1 || !st.NextReady.IsZero() || st.Keys[0].ID != "key-1" || st.Keys[0].Key != "key-...aaa1" ||
		st.Keys[0].State != KeyCooling || st.Keys[1].State != KeyDead || st.Keys[2].State != KeyOK {
		t.Fatalf("status = %+v", st)
	}
	if report("key-cccccccccc3", CategoryAuth, 0) {
		t.Fatal("401 on the last usable key was failed over")
	}
	st = p.Status()
	if st.Usable != 0 || !st.NextReady.Equal(now.Add(20*time.Second)) {
		t.Fatalf("status = %+v, want next ready in 20s", st)
	}
	// Once the cool-down ends the key is usable again, and a 429 on
	// another key fails over to it.
	p2 := NewKeyPool("key-aaaaaaaaaa1", "key-bbbbbbbbbb2")
	p2.now = func() time.Time { return now }
	e := &Error{Category: CategoryRateLimit, RetryAfter: time.Second}
	p2.Report("key-aaaaaaaaaa1", e)
	now = now.Add(2 * time.Second)
	e = &Error{Category: CategoryRateLimit, RetryAfter: time.Second}
	p2.Report("key-bbbbbbbbbb2", e)
	if !e.Failover {
		t.Fatal("the key whose cool-down ended does not count as usable")
	}
	if s := (*KeyPool)(nil).Status(); s.Usable != 0 || s.Keys == nil {
		t.Fatalf("nil pool status = %+v", s)
	}
}
