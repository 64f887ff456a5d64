package plan

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/tool"
)

func draftTools() []tool.Spec {
	m := testTools()
	return []tool.Spec{m["Read"], m["Write"], m["Fetch"]}
}

func TestDraftRetriesInvalidPlan(t *testing.T) {
	t.Parallel()
	invalid := []string{"Here is the plan:\n", `{"steps": [{"id": "look", "tool": "Telepor`, `t", "args": {}}]}`, "\nDone."}
	valid := []string{"```json\n", `{"steps": [{"id": "read", "tool": "Read", "args": {"file_path": "{{inputs.path}}"}},`,
		` {"tool": "Write", "args": {"file_path": "out.md", "content": "{{steps.read.result}}"}, "dependsOn": ["read"], "requiresApproval": true}]}`, "\n```"}
	prov := llmtest.NewScripted("scripted", llmtest.Text(invalid...), llmtest.Text(valid...))
	var mu sync.Mutex
	var tokens strings.Builder
	p, err := Draft(t.Context(), DraftConfig{
		Provider:    prov,
		Model:       "m1",
		MaxTokens:   4000,
		Goal:        "Copy the file to out.md",
		Tools:       draftTools(),
		InputSchema: json.RawMessage(`{"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}`),
		Memories:    []string{"The user prefers markdown."},
		Files:       []string{"report"},
		OnToken: func(s string) {
			mu.Lock()
			tokens.WriteString(s)
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatalf("Draft: %v", err)
	}
	if len(p.Steps) != 2 || p.Steps[0].ID != "read" || p.Steps[1].ID != "step-2" || !p.Steps[1].RequiresApproval {
		t.Errorf("plan: %+v", p)
	}
	if got, want := tokens.String(), strings.Join(invalid, "")+strings.Join(valid, ""); got != want {
		t.Errorf("streamed tokens:\n got %q\nwant %q", got, want)
	}
	reqs := prov.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want 2", len(reqs))
	}
	for i, r := range reqs {
		if len(r.Tools) != 0 || r.ToolChoice != (llm.ToolChoice{}) {
			t.Errorf("request %d offers tools: %+v %+v", i, r.Tools, r.ToolChoice)
		}
		if r.Model != "m1" || r.MaxTokens != 4000 {
			t.Errorf("request %d: model %q max tokens %d", i, r.Model, r.MaxTokens)
		}
	}
	sys := reqs[0].System[0].Text
	for _, want := range []string{"{{steps.<id>.result}}", "{{last.result}}", "{{inputs.<name>}}", "@file:<name>", `"dependsOn"`,
		"## Read", `"file_path"`, "Read-only.", "Effect: write.", "at most 64 steps"} {
		if !strings.Contains(sys, want) {
			t.Errorf("system prompt lacks %q", want)
		}
	}
	user := reqs[0].Messages[0].Text()
	for _, want := range []string{"Copy the file to out.md", `"path"`, `"report"`, "The user prefers markdown."} {
		if !strings.Contains(user, want) {
			t.Errorf("user prompt lacks %q:\n%s", want, user)
		}
	}
	// The retry carries the rejected answer and the problems.
	msgs := reqs[1].Messages
	if len(msgs) != 3 || msgs[1].Role != llm.RoleAssistant || msgs[2].Role != llm.RoleUser {
		t.Fatalf("retry messages: %+v", msgs)
	}
	if fb := msgs[2].Text(); !strings.Contains(fb, `step 0 ("look"): unknown tool "Teleport"`) {
		t.Errorf("feedback does not quote the problem:\n%s", fb)
	}
}

func TestDraftGivesUp(t *testing.T) {
	t.Parallel()
	bad := llmtest.Text(`{"steps": [{"id": "a", "tool": "Read", "args": {"file_path": 1}}]}`)
	prov := llmtest.NewScripted("scripted", bad, bad)
	_, err := Draft(t.Context(), DraftConfig{Provider: prov, Goal: "g", Tools: draftTools(), MaxAttempts: 2})
	var de *DraftError
	var ve *ValidationError
	if !errors.As(err, &de) || de.Attempts != 2 || !errors.As(err, &ve) {
		t.Fatalf("Draft error = %v, want a *DraftError wrapping a *ValidationError", err)
	}
	if !strings.Contains(err.Error(), `step 0 ("a"): args /file_path: got number, want string`) {
		t.Errorf("error does not name the last problems: %v", err)
	}
	if n := len(prov.Requests()); n != 2 {
		t.Errorf("%d model calls, want 2", n)
	}
}

func TestDraftUnparseableAnswer(t *testing.T) {
	t.Parallel()
	prov := llmtest.NewScripted("scripted",
		llmtest.Text("I would first read the file, then write it."),
		llmtest.Text(`{"steps": [{"id": "r", "tool": "Read", "args": {"file_path": "a"}}]}`))
	p, err := Draft(t.Context(), DraftConfig{Provider: prov, Goal: "g", Tools: draftTools()})
	if err != nil || len(p.Steps) != 1 {
		t.Fatalf("Draft = %+v, %v", p, err)
	}
	if fb := prov.Requests()[1].Messages[2].Text(); !strings.Contains(fb, `no JSON object with a "steps" list`) {
		t.Errorf("feedback: %s", fb)
	}
}

func TestDraftProviderFailure(t *testing.T) {
	t.Parallel()
	prov := llmtest.NewScripted("scripted", llmtest.Script{Status: 401, ErrorMessage: "bad key"})
	_, err := Draft(t.Context(), DraftConfig{Provider: prov, Goal: "g", Tools: draftTools()})
	var pe *ProviderError
	if !errors.As(err, &pe) || pe.Outcome.Status != llm.StatusAuth {
		t.Fatalf("Draft error = %v, want a *ProviderError with status auth", err)
	}
	var le *llm.Error
	if !errors.As(err, &le) {
		t.Errorf("error does not wrap the *llm.Error: %v", err)
	}
	if n := len(prov.Requests()); n != 1 {
		t.Errorf("%d model calls: provider failures must not be retried here", n)
	}

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	prov = llmtest.NewScripted("scripted", llmtest.Text("x"))
	if _, err := Draft(ctx, DraftConfig{Provider: prov, Goal: "g"}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Draft error = %v", err)
	}
}

func TestExtractPlan(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, text string
		steps      int
		wantErr    string
	}{
		{"bare", `{"steps": [{"id": "a", "tool": "t"}]}`, 1, ""},
		{"fenced with prose", "Sure! {not json}\n```json\n{\"steps\": [{\"tool\": \"t\", \"dependsOn\": []}, {\"tool\": \"t\", \"dependsOn\": [0]}]}\n```\nThat's it {", 2, ""},
		{"other objects first", `Config: {"mode": "fast"}. Plan: {"steps": []}`, 0, ""},
		{"numbers and strings in dependsOn", `{"steps": [{"id": "a", "tool": "t"}, {"tool": "t", "dependsOn": ["a", 0]}]}`, 2, ""},
		{"bad dependsOn", `{"steps": [{"tool": "t", "dependsOn": [true]}]}`, 0, "dependsOn entries must be step ids"},
		{"none", "no plan here", 0, `no JSON object with a "steps" list`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := extractPlan(tt.text)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || len(p.Steps) != tt.steps {
				t.Fatalf("got %+v, %v; want %d steps", p, err, tt.steps)
			}
		})
	}
}
