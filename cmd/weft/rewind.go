package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/session"
)

// chatTurns is what weft chat remembers for /rewind: where each turn's
// messages began (an agent.Session cannot be cut in place, so a rewind
// resumes a new one on the kept messages, with the same tool state and
// the spend so far: agent.Session.CarryBudget).
type chatTurns struct {
	starts []int
}

// begin records that a turn starts on s.
func (c *chatTurns) begin(s *agent.Session) {
	c.starts = append(c.starts, len(s.Messages()))
}

// totals is the usage of the whole chat.
func (c *chatTurns) totals(s *agent.Session) agent.Totals { return s.Totals() }

// replace resumes a session on msgs in place of s.
func (c *chatTurns) replace(a *agent.Agent, s *agent.Session, msgs []llm.Message) *agent.Session {
	// The new session carries the spend on (budgets and cost alerts
	// count the whole chat), so totals needs nothing of its own.
	ns := a.ResumeSessionWith(msgs, s.ToolState())
	ns.CarryBudget(s)
	return ns
}

// end closes the history of a run that did not finish (cancelled, or it
// failed before the model answered) with an "[interrupted]" answer, as
// weft serve does, so that the next line is not merged into it.
func (c *chatTurns) end(a *agent.Agent, s *agent.Session, cancelled bool) *agent.Session {
	// The history may end with a compaction's marker: what the model
	// sees decides.
	view := s.View()
	n := len(view)
	if n == 0 || view[n-1].Role != llm.RoleUser {
		return s
	}
	msgs := s.Messages()
	unanswered := true // only the prompt: the model never answered
	for _, b := range view[n-1].Content {
		if b.Type == llm.BlockToolResult {
			unanswered = false
		}
	}
	if !cancelled && !unanswered {
		return s // tool results the next line answers (AskUserQuestion)
	}
	return c.replace(a, s, session.CloseInterrupted(msgs))
}

// rewind handles "/rewind [N]": forget the last N turns (default 1).
func (c *chatTurns) rewind(a *agent.Agent, s *agent.Session, arg string, out io.Writer) *agent.Session {
	n := 1
	if arg = strings.TrimSpace(arg); arg != "" {
		v, err := strconv.Atoi(arg)
		if err != nil || v < 1 {
			fmt.Fprintf(out, "/rewind N: N is a number of turns (1 or more), not %q\n", arg)
			return s
		}
		n = v
	}
	if len(c.starts) == 0 {
		fmt.Fprintln(out, "nothing to rewind")
		return s
	}
	n = min(n, len(c.starts))
	keep := c.starts[len(c.starts)-n]
	c.starts = c.starts[:len(c.starts)-n]
	msgs := s.Messages()
	keep = min(keep, len(msgs))
	fmt.Fprintf(out, "rewound %d turn(s): %d of %d messages kept\n", n, keep, len(msgs))
	return c.replace(a, s, msgs[:keep:keep])
}
