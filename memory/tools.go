package memory

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/tool"
)

type rememberInput struct {
	Text string   `json:"text" jsonschema:"one fact worth keeping across sessions, stated on its own (who, what, why)"`
	Tags []string `json:"tags,omitempty" jsonschema:"optional keywords that help find it again"`
}

type searchInput struct {
	Query string `json:"query" jsonschema:"words to look for"`
	Limit int    `json:"limit,omitempty" jsonschema:"how many memories to return at most (default 10, at most 100)"`
}

type listInput struct{}

type forgetInput struct {
	ID string `json:"id" jsonschema:"the memory's id, as memory_search or memory_list show it"`
}

// Tools returns memory_remember, memory_search, memory_list and
// memory_forget. They act for UserFrom(ctx) of each call.
func (s *Service) Tools() []tool.Tool {
	read := tool.Meta{ReadOnly: true, ConcurrencySafe: true, Effect: tool.EffectRead, Permission: tool.ClassReadOnly}
	return []tool.Tool{
		tool.Func("memory_remember",
			"Remembers a fact about the user or their work for later sessions (preferences, decisions, names, conventions). "+
				"Keep one fact per memory and do not store secrets.",
			tool.Meta{Effect: tool.EffectWrite, Permission: tool.ClassGeneric}, s.rememberTool),
		tool.Func("memory_search",
			"Searches the user's memories by keywords; results are ranked by how many of the query's words they share, weighted toward recent ones.",
			read, s.searchTool),
		tool.Func("memory_list", "Lists all of the user's memories, newest first.", read, s.listTool),
		tool.Func("memory_forget",
			"Deletes one of the user's memories by id, e.g. one that is wrong or out of date.",
			tool.Meta{Effect: tool.EffectWrite, Permission: tool.ClassGeneric, Destructive: true}, s.forgetTool),
	}
}

func (s *Service) rememberTool(ctx context.Context, in rememberInput, _ *tool.Call) (tool.Result, error) {
	m, err := s.Remember(ctx, UserFrom(ctx), in.Text, in.Tags)
	if err != nil {
		return tool.Errorf("memory_remember: %v", err), nil
	}
	res := tool.Text(fmt.Sprintf("Remembered %s.", m.ID))
	res.Data = map[string]any{"memory": m}
	return res, nil
}

func (s *Service) searchTool(ctx context.Context, in searchInput, _ *tool.Call) (tool.Result, error) {
	found, err := s.Search(ctx, UserFrom(ctx), in.Query, in.Limit)
	if err != nil {
		return tool.Errorf("memory_search: %v", err), nil
	}
	if len(found) == 0 {
		return tool.Result{Content: tool.Text("No memories match.").Content, Data: map[string]any{"memories": found}}, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d memories, best first:", len(found))
	for _, f := range found {
		b.WriteByte('\n')
		line(&b, f.Memory, fmt.Sprintf("score %.2f", f.Score))
	}
	return tool.Result{Content: tool.Text(b.String()).Content, Data: map[string]any{"memories": found}}, nil
}

func (s *Service) listTool(ctx context.Context, _ listInput, _ *tool.Call) (tool.Result, error) {
	ms, err := s.List(ctx, UserFrom(ctx))
	if err != nil {
		return tool.Errorf("memory_list: %v", err), nil
	}
	if len(ms) == 0 {
		return tool.Result{Content: tool.Text("No memories yet.").Content, Data: map[string]any{"memories": ms}}, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d memories, newest first:", len(ms))
	for _, m := range ms {
		b.WriteByte('\n')
		line(&b, m, "")
	}
	return tool.Result{Content: tool.Text(b.String()).Content, Data: map[string]any{"memories": ms}}, nil
}

func (s *Service) forgetTool(ctx context.Context, in forgetInput, _ *tool.Call) (tool.Result, error) {
	if err := s.Forget(ctx, UserFrom(ctx), in.ID); err != nil {
		return tool.Errorf("memory_forget: %v", err), nil
	}
	return tool.Text(fmt.Sprintf("Forgot %s.", in.ID)), nil
}

// line writes "- [id] (date, extra) text #tag ...".
func line(b *strings.Builder, m record.Memory, extra string) {
	fmt.Fprintf(b, "- [%s] (%s", m.ID, m.CreatedAt.UTC().Format(time.DateOnly))
	if extra != "" {
		fmt.Fprintf(b, ", %s", extra)
	}
	fmt.Fprintf(b, ") %s", m.Text)
	for _, t := range m.Tags {
		fmt.Fprintf(b, " #%s", t)
	}
}
