package hook

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"
)

func TestHTTPHooks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		status      int
		body        string
		event       Event
		slow        bool
		wantVerdict Verdict
		wantReason  string
		wantContext string
		wantWarn    string
	}{
		{name: "2xx json deny", status: 200, body: `{"decision":"deny","reason":"policy server says no"}`, wantVerdict: Deny, wantReason: "policy server says no"},
		{name: "2xx hookSpecificOutput allow", status: 200, body: `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}`, wantVerdict: Allow},
		{name: "2xx json ask", status: 201, body: `{"permissionDecision":"ask"}`, wantVerdict: Ask},
		{name: "2xx empty", status: 204, wantVerdict: NoOpinion},
		{name: "2xx text ignored on pre_tool_use", status: 200, body: "ok", wantVerdict: NoOpinion},
		{name: "2xx text is context on user_prompt_submit", status: 200, body: "ticket ABC-1", event: UserPromptSubmit, wantContext: "ticket ABC-1"},
		{name: "500 fails open", status: 500, body: `{"decision":"deny"}`, wantVerdict: NoOpinion, wantWarn: "500"},
		{name: "403 fails open", status: 403, wantVerdict: NoOpinion, wantWarn: "403"},
		{name: "timeout fails open", slow: true, wantVerdict: NoOpinion, wantWarn: "deadline"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			type request struct {
				method, ctype, auth, leak string
				body                      map[string]any
			}
			got := make(chan request, 1)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				req := request{method: r.Method, ctype: r.Header.Get("Content-Type"), auth: r.Header.Get("Authorization"), leak: r.Header.Get("X-Leak")}
				_ = json.Unmarshal(b, &req.body)
				got <- req
				if tt.slow {
					<-r.Context().Done()
					return
				}
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			m, logs := newTestManager(t, Options{HTTPClient: srv.Client()})
			ev := PreToolUse
			if tt.event != "" {
				ev = tt.event
			}
			err := m.Register(Def{
				Name: "remote", Event: ev, URL: srv.URL + "/hook", Timeout: 200 * time.Millisecond,
				Headers:   map[string]string{"Authorization": "Bearer ${HOME}", "X-Leak": "$PATH"},
				HeaderEnv: []string{"HOME"},
			})
			if err != nil {
				t.Fatal(err)
			}
			in := bashInput(t.TempDir(), "ls")
			in.Event = ev
			out := m.Run(context.Background(), in)
			if out.Verdict != tt.wantVerdict || out.Reason != tt.wantReason || out.AdditionalContext != tt.wantContext {
				t.Errorf("got %q %q ctx %q, want %q %q ctx %q", out.Verdict, out.Reason, out.AdditionalContext, tt.wantVerdict, tt.wantReason, tt.wantContext)
			}
			req := <-got
			if req.method != http.MethodPost || req.ctype != "application/json" {
				t.Errorf("request %s %s", req.method, req.ctype)
			}
			if req.body["hook_event_name"] != ev.ClaudeName() || req.body["session_id"] != "s1" {
				t.Errorf("body %v", req.body)
			}
			if req.auth != "Bearer "+os.Getenv("HOME") || req.leak != "" {
				t.Errorf("headers Authorization=%q X-Leak=%q: only allowed variables may expand", req.auth, req.leak)
			}
			if tt.wantWarn != "" && !logs.warned("hook=remote", tt.wantWarn) {
				t.Errorf("no warning with %q:\n%s", tt.wantWarn, logs)
			}
		})
	}
}

func TestHTTPHookUnreachableFailsOpen(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens there any more
	m, logs := newTestManager(t, Options{})
	if err := m.Register(Def{Name: "gone", Event: PreToolUse, URL: url}); err != nil {
		t.Fatal(err)
	}
	if got := m.Run(context.Background(), bashInput(t.TempDir(), "ls")); got.Verdict != NoOpinion {
		t.Errorf("verdict %q", got.Verdict)
	}
	if !logs.warned("hook=gone") {
		t.Errorf("transport error not logged:\n%s", logs)
	}
}

func TestFuncHooks(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	tests := []struct {
		name        string
		fn          Func
		wantVerdict Verdict
		wantReason  string
		wantInput   string
		wantWarn    string
	}{
		{
			name: "deny",
			fn: func(_ context.Context, in Input) (Outcome, error) {
				if in.ToolName != "Bash" {
					return Outcome{}, nil
				}
				return Outcome{Verdict: Deny, Reason: "no shell", Hook: "ignored"}, nil
			},
			wantVerdict: Deny, wantReason: "no shell",
		},
		{
			name: "rewrite and allow",
			fn: func(context.Context, Input) (Outcome, error) {
				return Outcome{Verdict: Allow, UpdatedInput: json.RawMessage(`{"command":"ls -l"}`)}, nil
			},
			wantVerdict: Allow, wantInput: `{"command":"ls -l"}`,
		},
		{
			name:        "deny without reason",
			fn:          func(context.Context, Input) (Outcome, error) { return Outcome{Verdict: Deny}, nil },
			wantVerdict: Deny, wantReason: "blocked by hook go",
		},
		{
			name: "error fails open",
			fn: func(context.Context, Input) (Outcome, error) {
				return Outcome{Verdict: Deny}, io.ErrUnexpectedEOF
			},
			wantVerdict: NoOpinion, wantWarn: "unexpected EOF",
		},
		{
			name:        "panic fails open",
			fn:          func(context.Context, Input) (Outcome, error) { panic("boom") },
			wantVerdict: NoOpinion, wantWarn: "panic: boom",
		},
		{
			name:        "unknown verdict fails open",
			fn:          func(context.Context, Input) (Outcome, error) { return Outcome{Verdict: "perhaps"}, nil },
			wantVerdict: NoOpinion, wantWarn: "unknown verdict",
		},
		{
			name: "ignoring ctx times out",
			fn: func(context.Context, Input) (Outcome, error) {
				<-release
				return Outcome{Verdict: Deny}, nil
			},
			wantVerdict: NoOpinion, wantWarn: "timed out",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, logs := newTestManager(t, Options{})
			if err := m.Register(Def{Name: "go", Event: PreToolUse, Func: tt.fn, Timeout: 150 * time.Millisecond}); err != nil {
				t.Fatal(err)
			}
			got := m.Run(context.Background(), bashInput("/", "rm -rf /"))
			if got.Verdict != tt.wantVerdict || got.Reason != tt.wantReason || string(got.UpdatedInput) != tt.wantInput {
				t.Errorf("got %+v", got)
			}
			if got.Verdict != NoOpinion && got.Hook != "go" {
				t.Errorf("hook %q, want the def's name", got.Hook)
			}
			if tt.wantWarn != "" && !logs.warned("hook=go", tt.wantWarn) {
				t.Errorf("no warning with %q:\n%s", tt.wantWarn, logs)
			}
		})
	}
}
