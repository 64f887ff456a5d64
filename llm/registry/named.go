package registry

import (
	"context"
	"errors"
	"iter"

	"github.com/weft-run/weft/llm"
)

// namedProvider is a provider built on another's codec under a name of its
// own (MiniMax on the Anthropic codec, the Chinese services on OpenAI's):
// it reports that name, in Name and in its errors, and a refused key's
// hint names the service's other region.
type namedProvider struct {
	llm.Provider
	name, otherRegion string
}

func named(p llm.Provider, name string, b builtin) llm.Provider {
	return namedProvider{Provider: p, name: name, otherRegion: b.otherRegion}
}

func (p namedProvider) Name() string { return p.name }

func (p namedProvider) Stream(ctx context.Context, req *llm.Request) iter.Seq[llm.Event] {
	return func(yield func(llm.Event) bool) {
		for ev := range p.Provider.Stream(ctx, req) {
			if ev.Kind == llm.EventOutcome {
				ev.Outcome = p.outcome(ev.Outcome)
			}
			if !yield(ev) {
				return
			}
		}
	}
}

// outcome renames the error's provider; the error is copied, never
// changed in place.
func (p namedProvider) outcome(o llm.Outcome) llm.Outcome {
	var e *llm.Error
	if !errors.As(o.Err, &e) {
		return o
	}
	ne := *e
	ne.Provider = p.name
	if ne.Category == llm.CategoryAuth && p.otherRegion != "" {
		ne.Hint += " Keys of one region do not work in the other: for a key from the other platform set " +
			weftVar(p.name, "BASE_URL") + "=" + p.otherRegion + "."
	}
	o.Err = &ne
	o.Message = ne.Error()
	return o
}
