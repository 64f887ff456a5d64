package memory

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/weft-run/weft/tool"
)

type fileRememberInput struct {
	Name        string `json:"name" jsonschema:"short file name for the memory: letters, digits, '-' and '_' (e.g. test-commands); an existing name is replaced"`
	Content     string `json:"content" jsonschema:"the memory itself, in Markdown: the fact, and why it matters"`
	Description string `json:"description,omitempty" jsonschema:"one line for the memory index saying what this memory is about"`
	Type        string `json:"type,omitempty" jsonschema:"user (who the user is), feedback (how they want you to work), project (facts and decisions about the project) or reference (where to find things)"`
	Scope       string `json:"scope,omitempty" jsonschema:"project (this workspace only; the default in a workspace) or user (every project)"`
}

type fileSearchInput struct {
	Query string `json:"query" jsonschema:"words to look for"`
	Limit int    `json:"limit,omitempty" jsonschema:"how many memories to return at most (default 10)"`
}

type fileForgetInput struct {
	Name  string `json:"name" jsonschema:"the memory's name, as the memory index shows it"`
	Scope string `json:"scope,omitempty" jsonschema:"project or user (default: project in a workspace)"`
}

// Tools returns memory_remember, memory_search and memory_forget over the
// store's files: the names of Service's tools, so that prompts and habits
// carry over (a registry holds one set or the other).
func (s *FileStore) Tools() []tool.Tool {
	read := tool.Meta{ReadOnly: true, ConcurrencySafe: true, Effect: tool.EffectRead, Permission: tool.ClassReadOnly}
	return []tool.Tool{
		tool.Func("memory_remember",
			"Saves a memory for later sessions as a Markdown file: facts about the user, how they want you to work, project decisions and where things are. "+
				"Your memories are shown to you at the start of every session. Update an existing memory (same name) rather than adding a near-duplicate. "+
				"Never store secrets (keys, tokens, passwords): such a memory is refused.",
			tool.Meta{Effect: tool.EffectWrite, Permission: tool.ClassGeneric}, s.rememberTool),
		tool.Func("memory_search",
			"Searches your memories (both project and user) by keywords and returns the best matches in full.",
			read, s.searchTool),
		tool.Func("memory_forget",
			"Deletes a memory by name, e.g. one that is wrong or out of date.",
			tool.Meta{Effect: tool.EffectWrite, Permission: tool.ClassGeneric, Destructive: true}, s.forgetTool),
	}
}

func (s *FileStore) rememberTool(ctx context.Context, in fileRememberInput, _ *tool.Call) (tool.Result, error) {
	e, scope, warn, err := s.Remember(ctx, Scope(strings.TrimSpace(in.Scope)),
		Entry{Name: strings.TrimSpace(in.Name), Description: in.Description, Type: Type(strings.TrimSpace(in.Type)), Body: in.Content})
	if err != nil {
		return tool.Errorf("memory_remember: %v", err), nil
	}
	msg := fmt.Sprintf("Saved %s memory %q.", scope, e.Name)
	if warn != "" {
		msg += " " + warn
	}
	res := tool.Text(msg)
	res.Data = map[string]any{"name": e.Name, "scope": scope, "size": e.Size}
	return res, nil
}

func (s *FileStore) searchTool(ctx context.Context, in fileSearchInput, _ *tool.Call) (tool.Result, error) {
	found, err := s.Search(ctx, in.Query, in.Limit)
	if err != nil {
		return tool.Errorf("memory_search: %v", err), nil
	}
	if len(found) == 0 {
		return tool.Result{Content: tool.Text("No memories match.").Content, Data: map[string]any{"memories": found}}, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d memories, best first:", len(found))
	for _, f := range found {
		fmt.Fprintf(&b, "\n\n## %s (%s", f.Name, f.Scope)
		if f.Type != "" {
			fmt.Fprintf(&b, ", %s", f.Type)
		}
		fmt.Fprintf(&b, ", updated %s)\n%s", f.Modified.UTC().Format(time.DateOnly), neutralize(f.Body))
	}
	return tool.Result{Content: tool.Text(b.String()).Content, Data: map[string]any{"memories": found}}, nil
}

func (s *FileStore) forgetTool(ctx context.Context, in fileForgetInput, _ *tool.Call) (tool.Result, error) {
	scope, warn, err := s.Forget(ctx, Scope(strings.TrimSpace(in.Scope)), strings.TrimSpace(in.Name))
	if err != nil {
		return tool.Errorf("memory_forget: %v", err), nil
	}
	msg := fmt.Sprintf("Forgot %s memory %q.", scope, in.Name)
	if warn != "" {
		msg += " " + warn
	}
	return tool.Text(msg), nil
}
