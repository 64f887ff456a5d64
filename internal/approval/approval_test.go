package approval

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestAnswerOnce(t *testing.T) {
	tests := []struct {
		name    string
		answers int
		closeBy string // "wait", "close", "scope" before the late answer
		want    []error
	}{
		{"first answer wins, second conflicts", 2, "", []error{nil, ErrAnswered}},
		{"after the wait the answer is remembered", 1, "wait", []error{nil, ErrAnswered}},
		{"closed unanswered is not found", 0, "close", []error{ErrNotFound}},
		{"a closed scope remembers its answers", 1, "scope", []error{nil, ErrAnswered}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := New()
			tk, err := b.Open("s", Permission, "")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(tk.ID, "perm_") || len(tk.ID) != len("perm_")+12 {
				t.Fatalf("id %q", tk.ID)
			}
			var got []error
			for range tt.answers {
				got = append(got, b.Answer("s", tk.ID, Answer{Allow: true}))
			}
			switch tt.closeBy {
			case "wait":
				if a, err := tk.Wait(context.Background(), time.Second); err != nil || !a.Allow {
					t.Fatalf("wait: %+v, %v", a, err)
				}
			case "close":
				tk.Close()
			case "scope":
				b.Close("s")
			}
			if tt.closeBy != "" {
				got = append(got, b.Answer("s", tk.ID, Answer{}))
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for i := range got {
				if !errors.Is(got[i], tt.want[i]) {
					t.Errorf("answer %d: %v, want %v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestWaitEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name    string
		ctx     context.Context
		timeout time.Duration
		want    error
	}{
		{"timeout", context.Background(), time.Millisecond, ErrTimeout},
		{"cancelled", ctx, 0, context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := New()
			tk, _ := b.Open("s", Checkpoint, "")
			if _, err := tk.Wait(tt.ctx, tt.timeout); !errors.Is(err, tt.want) {
				t.Fatalf("wait: %v, want %v", err, tt.want)
			}
			if err := b.Answer("s", tk.ID, Answer{Allow: true}); !errors.Is(err, ErrNotFound) {
				t.Fatalf("answer after the wait ended: %v, want not found", err)
			}
			if len(b.scopes) != 0 {
				t.Fatalf("%d scopes kept after the question closed", len(b.scopes))
			}
		})
	}
}

// Gates keyed by the caller: listed in the order opened, one per key, and
// an answer's check runs before it is taken.
func TestKeyedGates(t *testing.T) {
	b := New()
	for _, k := range []string{"b", "a", "c"} {
		if _, err := b.Open("run", Step, k); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := b.Open("run", Step, "a"); !errors.Is(err, ErrExists) {
		t.Fatalf("second open of a key: %v", err)
	}
	var ids []string
	for _, p := range b.Pending("run") {
		ids = append(ids, p.ID)
	}
	if fmt.Sprint(ids) != "[b a c]" {
		t.Fatalf("pending %v", ids)
	}
	bad := errors.New("bad plan")
	if err := b.AnswerIf("run", "a", Answer{Allow: true}, func(Pending) error { return bad }); !errors.Is(err, bad) {
		t.Fatalf("check: %v", err)
	}
	if err := b.Answer("run", "a", Answer{Allow: true}); err != nil {
		t.Fatalf("answer after a failed check: %v", err)
	}
	if len(b.Pending("run")) != 2 {
		t.Fatalf("answered gate still pending: %v", b.Pending("run"))
	}
	if err := b.Answer("other", "a", Answer{}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("answer in another scope: %v", err)
	}
}

// Memory stays bounded: a scope remembers its newest answered ids, and
// closed scopes together at most MaxAnsweredClosed.
func TestBoundedMemory(t *testing.T) {
	b := New()
	for i := range 3 * MaxAnsweredPerScope {
		tk, _ := b.Open("s", Permission, fmt.Sprintf("perm_%d", i))
		if err := b.Answer("s", tk.ID, Answer{}); err != nil {
			t.Fatal(err)
		}
		tk.Close()
	}
	s := b.scopes["s"]
	if len(s.answered) != MaxAnsweredPerScope || len(s.fifo) != MaxAnsweredPerScope {
		t.Fatalf("%d answered ids remembered, want %d", len(s.answered), MaxAnsweredPerScope)
	}
	if !s.answered[fmt.Sprintf("perm_%d", 3*MaxAnsweredPerScope-1)] || s.answered["perm_0"] {
		t.Fatal("not the newest answered ids remembered")
	}
	n := MaxAnsweredClosed/MaxAnsweredPerScope + 3
	for i := range n {
		id := fmt.Sprintf("run%d", i)
		for j := range MaxAnsweredPerScope {
			tk, _ := b.Open(id, Permission, "")
			_ = b.Answer(id, tk.ID, Answer{})
			if j == 0 && i == 0 {
				defer func(id, q string) {
					if err := b.Answer(id, q, Answer{}); !errors.Is(err, ErrNotFound) {
						t.Errorf("oldest closed scope still remembered: %v", err)
					}
				}(id, tk.ID)
			}
			tk.Close()
		}
		b.Close(id)
	}
	if b.closedN > MaxAnsweredClosed {
		t.Fatalf("%d answered ids kept for closed scopes, want at most %d", b.closedN, MaxAnsweredClosed)
	}
	b.Forget("s")
	if _, ok := b.scopes["s"]; ok {
		t.Fatal("forgotten scope kept")
	}
}

// Two people answering at once: exactly one answer is taken.
func TestRacingAnswers(t *testing.T) {
	b := New()
	tk, _ := b.Open("s", Permission, "")
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = b.Answer("s", tk.ID, Answer{Allow: i%2 == 0}) }()
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
		} else if !errors.Is(err, ErrAnswered) {
			t.Fatal(err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d answers taken", ok)
	}
	if _, err := tk.Wait(context.Background(), time.Second); err != nil {
		t.Fatal(err)
	}
}
