package compact

import (
	"context"
	"fmt"
	"unicode/utf8"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/tool"
)

// RecallName is the Recall tool's name.
const RecallName = "Recall"

// Recaller is what the Recall tool reads from: the conversation of the
// run that called it.
type Recaller interface {
	// Recall returns the original output of the tool call with id,
	// before any compaction cut or removed it.
	Recall(id string) (llm.Block, bool)
	// RecallBudget is how many characters of output one Recall result
	// may hold without being cut again.
	RecallBudget() int
}

type recallerKey struct{}

// WithRecaller returns ctx carrying r, for the Recall tool.
func WithRecaller(ctx context.Context, r Recaller) context.Context {
	return context.WithValue(ctx, recallerKey{}, r)
}

// RecallerFrom returns the Recaller ctx carries.
func RecallerFrom(ctx context.Context) (Recaller, bool) {
	r, ok := ctx.Value(recallerKey{}).(Recaller)
	return r, ok
}

type recallInput struct {
	ID     string `json:"id" jsonschema:"the id of the tool call whose output to read, as the note that replaced it gives it"`
	Offset int    `json:"offset,omitempty" jsonschema:"character to start at (0: the beginning); a cut note gives the offset of what it cut"`
	Limit  int    `json:"limit,omitempty" jsonschema:"characters to read (default: as many as fit)"`
}

// Recall is the tool that reads back a tool call's output that compaction
// cut or removed from the conversation (the agent keeps every output).
// It pages long outputs by character offset. It reads the conversation
// of the run that calls it (WithRecaller, set by package agent).
func Recall() tool.Tool {
	return tool.Func(RecallName,
		"Read again the full output of an earlier tool call that was cut or removed from the conversation to save context space. "+
			"Give the call's id from the note that replaced the output. Long outputs come in pages: pass offset to read on.",
		tool.Meta{ReadOnly: true, ConcurrencySafe: true, Effect: tool.EffectRead, Permission: tool.ClassReadOnly, OutputCap: -1},
		func(ctx context.Context, in recallInput, _ *tool.Call) (tool.Result, error) {
			r, ok := RecallerFrom(ctx)
			if !ok {
				return tool.Errorf("Recall is not available here: this run keeps no earlier outputs."), nil
			}
			b, ok := r.Recall(in.ID)
			if !ok {
				return tool.Errorf("no output of a tool call with id %q is kept in this conversation", in.ID), nil
			}
			return page(b, in, r.RecallBudget()), nil
		})
}

// page is the part of b's text that in asks for, within budget characters,
// with a line saying what it is and how to read on.
func page(b llm.Block, in recallInput, budget int) tool.Result {
	text, images := splitContent(b.Content)
	total := utf8.RuneCountInString(text)
	limit := in.Limit
	if limit <= 0 || limit > budget {
		limit = budget
	}
	limit = max(limit, 1)
	start := min(max(in.Offset, 0), total)
	// Rune offsets to byte offsets.
	from, to, n := len(text), len(text), 0
	for i := range text {
		if n == start {
			from = i
		}
		if n == start+limit {
			to = i
			break
		}
		n++
	}
	if start == total {
		from = len(text)
	}
	end := start + utf8.RuneCountInString(text[from:to])
	head := fmt.Sprintf("[Recall: the output of call %s, characters %d-%d of %d", in.ID, start, end, total)
	if b.IsError {
		head += " (it was an error)"
	}
	if len(images) > 0 {
		head += fmt.Sprintf("; %d images not shown", len(images))
	}
	head += "]\n"
	tail := ""
	if end < total {
		tail = fmt.Sprintf("\n[Recall: %d more characters; call Recall with id %q and offset %d to read on]", total-end, in.ID, end)
	}
	return tool.Text(head + text[from:to] + tail)
}
