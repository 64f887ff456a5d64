// Package compact keeps a conversation inside its model's context window.
//
// It estimates how many tokens a request takes (without a tokenizer,
// calibrated against what the provider reports), and plans the three
// levels of compaction of seed 004 §8, each proportional to the window:
//
//   - tool_cap: a round of tool results enters the history cut to a share
//     of the window (per tool, configurable), its middle replaced by a
//     note saying how to read the rest;
//   - micro: old tool results are replaced by a one-line stub naming the
//     call and how to read it again (the Recall tool);
//   - summary: the middle of the conversation is replaced by a summary a
//     model wrote (goal, decisions, files, open tasks) and the user's own
//     messages, verbatim; the first user message and the recent tail
//     stay, and a tool call is never separated from its result.
//
// Two guards complete them: truncate (a single message too large for the
// window is cut, with a note) and max_messages (at most N messages).
//
// Every compaction is a Marker: a record of how the model's view of the
// conversation changed. A Transcript keeps the original messages and the
// markers in one append-only list, so that the full history (and every
// tool output) stays retrievable, View replays it into what the model
// sees, and cutting the list before a marker undoes that compaction.
//
// The package plans; package agent decides when, calls the model for the
// summary and emits the events. See docs/context.md.
package compact

// Config is how a session manages its context window. The zero value is
// on, with the defaults below; every fraction is of the usable window
// (Budget.Limit: the window minus the reply's reserve).
type Config struct {
	// Off turns every level off: the history grows until the provider
	// refuses it. Accounting (turn_end's context, token_warning) stays.
	Off bool
	// MicroAt is where old tool results are stubbed; 0 means 0.6,
	// negative never (automatically; a summary still stubs what it
	// must to fit its own request).
	MicroAt float64
	// SummaryAt is where the middle of the conversation is summarised;
	// 0 means 0.8, negative never automatically (by hand and on a
	// prompt_too_long error it still runs).
	SummaryAt float64
	// KeepRounds is how many of the latest tool rounds micro never
	// stubs; 0 means 2.
	KeepRounds int
	// ToolShare is the share of the window one round of tool results
	// may take in the history (split between the round's results); 0
	// means 0.3, negative means no window cap (tool.Meta.OutputCap
	// still applies).
	ToolShare float64
	// ToolCaps caps the results of the named tools, in tokens, in place
	// of their ToolShare; a negative cap leaves that tool uncapped.
	ToolCaps map[string]int
	// TailShare is how much of the latest conversation a summary keeps
	// verbatim; 0 means 0.2.
	TailShare float64
	// SummaryShare bounds the summary the model writes (its max_tokens);
	// 0 means 0.15.
	SummaryShare float64
	// UserShare bounds the user's own messages a summary carries over
	// verbatim; 0 means 0.1.
	UserShare float64
	// ReserveShare bounds the reply's reserve (the request's
	// max_tokens) as a share of the whole window; 0 means 0.25. A request
	// whose prompt leaves less room gets a smaller max_tokens.
	ReserveShare float64
}

// Resolved returns c with its zero values replaced by the defaults.
func (c Config) Resolved() Config {
	def := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.MicroAt, 0.6)
	def(&c.SummaryAt, 0.8)
	def(&c.ToolShare, 0.3)
	def(&c.TailShare, 0.2)
	def(&c.SummaryShare, 0.15)
	def(&c.UserShare, 0.1)
	def(&c.ReserveShare, 0.25)
	if c.KeepRounds <= 0 {
		c.KeepRounds = 2
	}
	return c
}

// WarnAt are the shares of the usable window at which a session warns
// (token_warning), once each on the way up.
var WarnAt = [...]float64{0.8, 0.95}
