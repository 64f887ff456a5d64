package agent_test

import (
	"context"
	"encoding/json"
	"iter"
	"testing"
	"time"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/anthropic"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/observe"
)

// silentProvider breaks the stream contract: its stream ends without an
// outcome.
type silentProvider struct{}

func (silentProvider) Name() string { return "silent" }
func (silentProvider) Stream(context.Context, *llm.Request) iter.Seq[llm.Event] {
	return func(func(llm.Event) bool) {}
}

// runStrict runs prompt and returns the StrictViolation it panicked with,
// if any, and what was collected before.
func runStrict(s *agent.Session, prompt string) (v *agent.StrictViolation, c collected) {
	defer func() {
		if p := recover(); p != nil {
			sv, ok := p.(agent.StrictViolation)
			if !ok {
				panic(p)
			}
			v = &sv
		}
	}()
	return nil, collect(s, context.Background(), prompt)
}

// TestStrictMode: each check turns its silent repair into a panic, and
// without it the run repairs and goes on (the observer hears of the
// history repair).
func TestStrictMode(t *testing.T) {
	t.Parallel()
	orphaned := []llm.Message{
		llm.UserText("first"),
		{Role: llm.RoleAssistant, Content: []llm.Block{llm.ToolUse("orphan", "echo", json.RawMessage(`{}`))}},
	}
	tooLong := llmtest.Script{Status: 400, ErrorMessage: "prompt is too long: 210000 tokens > 200000 maximum"}
	tests := []struct {
		name    string
		strict  *agent.StrictMode
		session func(t *testing.T, cfg agent.Config) *agent.Session
		check   string // the violation; "" for none
	}{
		{name: "pairing repaired", session: func(t *testing.T, cfg agent.Config) *agent.Session {
			cfg.Provider = llmtest.NewScripted("scripted", llmtest.Text("ok"))
			return mustAgent(t, cfg).ResumeSession(orphaned)
		}},
		{name: "pairing strict", strict: &agent.StrictMode{ToolResultPairing: true}, check: "tool_result_pairing",
			session: func(t *testing.T, cfg agent.Config) *agent.Session {
				cfg.Provider = llmtest.NewScripted("scripted", llmtest.Text("ok"))
				return mustAgent(t, cfg).ResumeSession(orphaned)
			}},
		{name: "a clean history is no repair", strict: &agent.StrictMode{ToolResultPairing: true},
			session: func(t *testing.T, cfg agent.Config) *agent.Session {
				cfg.Provider = llmtest.NewScripted("scripted", llmtest.Text("ok"))
				return mustAgent(t, cfg).NewSession()
			}},
		{name: "normalizer strict", strict: &agent.StrictMode{NormalizerError: true}, check: "normalizer_error",
			session: func(t *testing.T, cfg agent.Config) *agent.Session {
				cfg.Provider = silentProvider{}
				return mustAgent(t, cfg).NewSession()
			}},
		{name: "normalizer repaired", session: func(t *testing.T, cfg agent.Config) *agent.Session {
			cfg.Provider = silentProvider{}
			return mustAgent(t, cfg).NewSession()
		}},
		{name: "compaction strict", strict: &agent.StrictMode{CompactFailure: true}, check: "compact_failure",
			session: func(t *testing.T, cfg agent.Config) *agent.Session {
				fake := llmtest.NewAnthropic(t)
				fake.Push(tooLong)
				cfg.Provider = anthropic.New(anthropic.Config{Endpoint: llm.Endpoint{BaseURL: fake.URL, APIKey: "k"}})
				cfg.OnPromptTooLong = func(context.Context, agent.PromptTooLong) ([]llm.Message, bool) { return nil, false }
				return mustAgent(t, cfg).NewSession()
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			obs := &recObserver{}
			info := llm.ModelInfo{ID: "m", MaxOutputTokens: 100}
			cfg := agent.Config{Model: "m", ModelInfo: &info, StrictMode: tt.strict, Observer: obs,
				Retry: agent.RetryPolicy{MaxAttempts: 2, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}}
			v, c := runStrict(tt.session(t, cfg), "go")
			switch {
			case tt.check == "" && v != nil:
				t.Fatalf("panicked: %v", v)
			case tt.check != "" && (v == nil || v.Check != tt.check):
				t.Fatalf("violation = %v, want %s", v, tt.check)
			case tt.check == "":
				if len(c.events) == 0 || c.events[len(c.events)-1].Type != agent.EventDone {
					t.Fatalf("the run did not end with done: %v", c.types())
				}
			}
			if tt.name == "pairing repaired" {
				if r := obs.find(observe.EventHistoryRepaired); len(r) != 1 || r[0]["repairs"] != 1 {
					t.Fatalf("history_repaired = %v", r)
				}
			}
		})
	}
}

func mustAgent(t *testing.T, cfg agent.Config) *agent.Agent {
	t.Helper()
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestKeyPoolFailover: a 429 on one key of a pool whose other key is
// healthy is retried at once with that key instead of waiting out the
// Retry-After; a 401 likewise; a 403 (which every key would get) is not;
// and with one key the wait is the server's.
func TestKeyPoolFailover(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		keys     []string
		first    llmtest.Script
		requests int
		minTime  time.Duration
		maxTime  time.Duration
		failover bool
		wantErr  bool
	}{
		{name: "rate limit, another key healthy", keys: []string{"sk-key-one-000000", "sk-key-two-000000"},
			first: llmtest.Script{Status: 429, RetryAfter: 30 * time.Second}, requests: 2, maxTime: 5 * time.Second, failover: true},
		{name: "rejected key, another key healthy", keys: []string{"sk-key-one-000000", "sk-key-two-000000"},
			first: llmtest.Script{Status: 401}, requests: 2, maxTime: 5 * time.Second, failover: true},
		{name: "forbidden is not failed over", keys: []string{"sk-key-one-000000", "sk-key-two-000000"},
			first: llmtest.Script{Status: 403}, requests: 1, wantErr: true},
		{name: "one key waits out the Retry-After", keys: []string{"sk-key-one-000000"},
			first: llmtest.Script{Status: 429, RetryAfter: 300 * time.Millisecond}, requests: 2, minTime: 300 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := llmtest.NewAnthropic(t)
			fake.Push(tt.first, llmtest.Text("ok"))
			pool := llm.NewKeyPool(tt.keys...)
			info := llm.ModelInfo{ID: "m", MaxOutputTokens: 100}
			a := mustAgent(t, agent.Config{
				Provider: anthropic.New(anthropic.Config{Endpoint: llm.Endpoint{BaseURL: fake.URL, Keys: pool}}),
				Model:    "m", ModelInfo: &info,
				// The backoff alone would wait 1 s or more.
				Retry: agent.RetryPolicy{BaseDelay: 2 * time.Second, MaxDelay: 2 * time.Second}})
			start := time.Now()
			c := collect(a.NewSession(), context.Background(), "hi")
			took := time.Since(start)
			reqs := fake.Requests()
			if len(reqs) != tt.requests || (c.err != nil) != tt.wantErr {
				t.Fatalf("requests = %d, err = %v", len(reqs), c.err)
			}
			if took < tt.minTime || (tt.maxTime > 0 && took > tt.maxTime) {
				t.Fatalf("took %v, want between %v and %v", took, tt.minTime, tt.maxTime)
			}
			if tt.failover {
				if reqs[0].Header.Get("x-api-key") == reqs[1].Header.Get("x-api-key") {
					t.Fatal("the retry used the same key")
				}
				r := c.of(agent.EventRetry)[0].Data.(agent.RetryData)
				if r.DelayMS != 0 {
					t.Fatalf("retry = %+v, want no delay", r)
				}
				st := pool.Status()
				if st.Usable != 1 || st.Keys[0].ID != "key-1" || st.Keys[0].State == llm.KeyOK {
					t.Fatalf("pool = %+v", st)
				}
			}
		})
	}
}
