package llm

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// KeyState is the health of one pooled key.
type KeyState string

const (
	KeyOK      KeyState = "ok"
	KeyCooling KeyState = "cooling" // got a 429; unused until CoolUntil
	KeyDead    KeyState = "dead"    // got a 401/403; never used again
)

// KeyHealth is what callers see of a pooled key. The key itself is masked.
type KeyHealth struct {
	// ID names the key by its place in the pool ("key-1"; set by Status).
	ID        string    `json:"id,omitempty"`
	Key       string    `json:"key"` // masked: "sk-a...wxyz"
	State     KeyState  `json:"state"`
	CoolUntil time.Time `json:"cool_until,omitzero"`
	Uses      int       `json:"uses"`
	LastError string    `json:"last_error,omitempty"`
}

// ErrNoKey is returned by Acquire when every key is dead or cooling.
var ErrNoKey = errors.New("no usable API key")

// DefaultCooldown applies to a 429 that carried no retry hint.
const DefaultCooldown = 30 * time.Second

// KeyPool hands out API keys round-robin (seed 004). A key that got a 429
// cools down for the server's retry delay; a key that got 401 or 403 is
// retired. It is safe for concurrent use.
type KeyPool struct {
	mu   sync.Mutex
	keys []poolKey
	next int
	now  func() time.Time
}

type poolKey struct {
	key       string
	state     KeyState
	coolUntil time.Time
	uses      int
	lastError string
}

// NewKeyPool pools the given keys; empty strings and duplicates are dropped.
func NewKeyPool(keys ...string) *KeyPool {
	p := &KeyPool{now: time.Now}
	seen := map[string]bool{}
	for _, k := range keys {
		if k == "" || seen[k] {
			continue
		}
		seen[k] = true
		p.keys = append(p.keys, poolKey{key: k, state: KeyOK})
	}
	return p
}

// Len is the number of keys in the pool, dead or alive.
func (p *KeyPool) Len() int {
	if p == nil {
		return 0
	}
	return len(p.keys)
}

// Acquire returns the next usable key. When all are cooling, the error says
// how long until the first is back (as an *Error of category rate_limit with
// RetryAfter); when all are dead it is an auth error.
func (p *KeyPool) Acquire() (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	var soonest time.Time
	for range p.keys {
		k := &p.keys[p.next]
		p.next = (p.next + 1) % len(p.keys)
		if k.state == KeyCooling && !now.Before(k.coolUntil) {
			k.state, k.coolUntil = KeyOK, time.Time{}
		}
		switch k.state {
		case KeyOK:
			k.uses++
			return k.key, nil
		case KeyCooling:
			if soonest.IsZero() || k.coolUntil.Before(soonest) {
				soonest = k.coolUntil
			}
		}
	}
	if len(p.keys) == 0 {
		return "", &Error{Category: CategoryAuth, Message: "no API key configured", Hint: hints[CategoryAuth], Err: ErrNoKey}
	}
	if !soonest.IsZero() {
		d := soonest.Sub(now)
		return "", &Error{Category: CategoryRateLimit, Message: fmt.Sprintf("all %d keys are cooling down after rate limits", len(p.keys)),
			RetryAfter: d, Hint: hints[CategoryRateLimit], Err: ErrNoKey}
	}
	return "", &Error{Category: CategoryAuth, Message: fmt.Sprintf("all %d keys were rejected", len(p.keys)), Hint: hints[CategoryAuth], Err: ErrNoKey}
}

// Report tells the pool how a call made with key ended. err may be nil or
// any error; only *Error categories rate_limit, auth and permission change
// the key's state. On a rate limit or a rejected key (auth) it sets
// err's Failover when another key of the pool is usable now, so that the
// engine retries at once with that key instead of waiting out this key's
// Retry-After.
func (p *KeyPool) Report(key string, err error) {
	var e *Error
	if !errors.As(err, &e) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	for i := range p.keys {
		k := &p.keys[i]
		if k.key != key {
			continue
		}
		switch e.Category {
		case CategoryRateLimit:
			d := e.RetryAfter
			if d <= 0 {
				d = DefaultCooldown
			}
			k.state, k.coolUntil = KeyCooling, now.Add(d)
			k.lastError = e.Error()
			e.Failover = p.usable(now) > 0
		case CategoryAuth, CategoryPermission:
			k.state, k.coolUntil = KeyDead, time.Time{}
			k.lastError = e.Error()
			// A 403 may be about the model rather than the key: every key
			// would get it, so only a 401 moves on to the next key.
			e.Failover = e.Category == CategoryAuth && p.usable(now) > 0
		}
		return
	}
}

// usable counts the keys Acquire could hand out at now. p.mu is held.
func (p *KeyPool) usable(now time.Time) int {
	n := 0
	for _, k := range p.keys {
		if k.state == KeyOK || (k.state == KeyCooling && !now.Before(k.coolUntil)) {
			n++
		}
	}
	return n
}

// PoolStatus is a snapshot of a key pool, for GET /v1/keys and weft chat's
// /ratelimit. Keys are masked.
type PoolStatus struct {
	Keys []KeyHealth `json:"keys"`
	// Usable is how many keys can be used now.
	Usable int `json:"usable"`
	// NextReady is when the first cooling key is back, when none is
	// usable now and one is cooling.
	NextReady time.Time `json:"next_ready,omitzero"`
}

// Status reports the pool: every key's health (masked), how many are
// usable now and, when none is, when the first is back.
func (p *KeyPool) Status() PoolStatus {
	if p == nil {
		return PoolStatus{Keys: []KeyHealth{}}
	}
	keys := p.Health()
	st := PoolStatus{Keys: keys}
	for i, k := range keys {
		keys[i].ID = fmt.Sprintf("key-%d", i+1)
		switch k.State {
		case KeyOK:
			st.Usable++
		case KeyCooling:
			if st.NextReady.IsZero() || k.CoolUntil.Before(st.NextReady) {
				st.NextReady = k.CoolUntil
			}
		}
	}
	if st.Usable > 0 {
		st.NextReady = time.Time{}
	}
	return st
}

// Health reports every key's state, keys masked.
func (p *KeyPool) Health() []KeyHealth {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	out := make([]KeyHealth, len(p.keys))
	for i, k := range p.keys {
		st := k.state
		if st == KeyCooling && !now.Before(k.coolUntil) {
			st = KeyOK
		}
		h := KeyHealth{Key: MaskKey(k.key), State: st, Uses: k.uses, LastError: k.lastError}
		if st == KeyCooling {
			h.CoolUntil = k.coolUntil
		}
		out[i] = h
	}
	return out
}

// MaskKey shows the first four and last four characters of a key.
func MaskKey(k string) string {
	if len(k) <= 12 {
		return "****"
	}
	return k[:4] + "..." + k[len(k)-4:]
}
