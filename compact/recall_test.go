package compact_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/weft-run/weft/compact"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/tool"
)

type recaller map[string]llm.Block

func (r recaller) Recall(id string) (llm.Block, bool) { b, ok := r[id]; return b, ok }
func (r recaller) RecallBudget() int                  { return 100 }

// TestRecallPages: the Recall tool reads a kept output back in pages of
// at most the budget, says where each page is and how to read on, and
// refuses ids it does not keep and calls outside a run that keeps outputs.
func TestRecallPages(t *testing.T) {
	t.Parallel()
	text := strings.Repeat("0123456789", 25) // 250 characters
	r := recaller{"call_1": llm.ToolResult("call_1", false, llm.Text(text))}
	reg, err := tool.NewRegistry(compact.Recall())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		ctx   context.Context
		input string
		want  []string
		isErr bool
	}{
		{"first page", compact.WithRecaller(context.Background(), r), `{"id":"call_1"}`,
			[]string{"characters 0-100 of 250", "offset 100 to read on"}, false},
		{"last page", compact.WithRecaller(context.Background(), r), `{"id":"call_1","offset":200,"limit":500}`,
			[]string{"characters 200-250 of 250]\n0123456789"}, false},
		{"unknown id", compact.WithRecaller(context.Background(), r), `{"id":"nope"}`, []string{`no output of a tool call with id "nope"`}, true},
		{"no recaller", context.Background(), `{"id":"call_1"}`, []string{"not available"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := reg.Execute(tt.ctx, &tool.Call{ID: "x", Name: compact.RecallName, Input: json.RawMessage(tt.input)})
			got := ""
			for _, b := range res.Content {
				got += b.Text
			}
			if res.IsError != tt.isErr {
				t.Fatalf("is_error %v: %s", res.IsError, got)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Fatalf("%q lacks %q", got, w)
				}
			}
			if !tt.isErr && len(got) > 100+200 {
				t.Fatalf("a page of %d bytes for a budget of 100", len(got))
			}
		})
	}
}
