package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/tool"
	"github.com/weft-run/weft/tool/builtin"
)

// textRenderer prints a run as a terminal transcript.
type textRenderer struct {
	out, errw    io.Writer
	midLine      bool // the last text written did not end a line
	showThinking bool
	// subLabels name the sub-agents running under the current tool calls
	// (see renderSubagent).
	subLabels map[string]string
}

func (r *textRenderer) newline() {
	if r.midLine {
		fmt.Fprintln(r.out)
		r.midLine = false
	}
}

func (r *textRenderer) render(ev agent.Event) {
	if r.renderSubagent(ev) {
		return
	}
	switch d := ev.Data.(type) {
	case agent.TextData:
		switch ev.Type {
		case agent.EventTextDelta:
			fmt.Fprint(r.out, d.Text)
			r.midLine = !strings.HasSuffix(d.Text, "\n")
		case agent.EventThinkingDelta:
			if r.showThinking {
				fmt.Fprint(r.errw, d.Text)
			}
		case agent.EventThinking:
			if r.showThinking {
				fmt.Fprintln(r.errw)
			}
		}
	case agent.ToolUseData:
		r.newline()
		fmt.Fprintf(r.out, "● %s\n", summarizeCall(d.ToolName, d.Input))
	case agent.ToolResultData:
		fmt.Fprintf(r.out, "  ⎿ %s\n", summarizeResult(d))
	case agent.NotifyData:
		r.newline()
		switch ev.Type {
		case agent.EventAskUser:
			if qs, ok := d.Payload.([]builtin.Question); ok {
				for _, q := range qs {
					fmt.Fprintf(r.out, "? %s\n", q.Question)
					for i, o := range q.Options {
						fmt.Fprintf(r.out, "  %d. %s — %s\n", i+1, o.Label, o.Description)
					}
				}
			}
		case agent.EventTodos:
			if todos, ok := d.Payload.([]tool.Todo); ok {
				for _, t := range todos {
					mark := map[tool.TodoStatus]string{tool.TodoCompleted: "[x]", tool.TodoInProgress: "[~]"}[t.Status]
					if mark == "" {
						mark = "[ ]"
					}
					fmt.Fprintf(r.out, "  %s %s\n", mark, t.Content)
				}
			}
		}
	case agent.RetryData:
		r.newline()
		// The category says what happened (network, rate_limit, ...); the
		// status (timeout for all of those) says less.
		cause := d.Category
		if cause == "" {
			cause = d.Status
		}
		next := fmt.Sprintf("attempt %d", d.Attempt+1)
		if d.MaxAttempts > 0 {
			next += fmt.Sprintf(" of %d", d.MaxAttempts)
		}
		fmt.Fprintf(r.errw, "model call failed (%s): %s; retrying in %s (%s)\n", cause, d.Error,
			(time.Duration(d.DelayMS) * time.Millisecond).String(), next)
	case agent.GuardrailData:
		// A refused call shows as its tool result; the circuit breaker
		// acts on the run, so it gets a line of its own.
		switch d.Action {
		case "note":
			r.newline()
			fmt.Fprintf(r.errw, "circuit breaker: every tool call failed in %d rounds in a row; asked the model to change approach\n", d.Count)
		case "stop":
			r.newline()
			fmt.Fprintf(r.errw, "circuit breaker: %s\n", d.Reason)
		}
	case agent.CompactionData:
		r.newline()
		fmt.Fprintln(r.errw, describeCompaction(d))
	case agent.TokenWarningData:
		r.newline()
		fmt.Fprintf(r.errw, "context window %.0f%% full (%d of %d tokens); older context will be compacted (/compact to do it now)\n",
			100*float64(d.UsedTokens)/float64(max(d.Limit, 1)), d.UsedTokens, d.Limit)
	case agent.BudgetRequest, agent.BudgetDecision, agent.CostThresholdData:
		r.newline()
		fmt.Fprintln(r.errw, budgetLine(ev))
	case agent.ErrorData:
		r.newline()
		if d.Hint != "" {
			fmt.Fprintf(r.errw, "error: %s\nhint: %s\n", d.Error, d.Hint)
		} else {
			fmt.Fprintf(r.errw, "error: %s\n", d.Error)
		}
	case agent.DoneData:
		r.newline()
		fmt.Fprintf(r.errw, "[%s] %d turns, %d in / %d out tokens (%d cached), $%.4f\n",
			d.StopReason, d.TurnCount, d.TotalInputTokens, d.TotalOutputTokens, d.TotalCacheReadTokens, d.CostUSD)
	}
}

// summarizeCall shows a tool call as Claude Code does: the tool and its
// most telling argument, and whether a command is to keep running in the
// background (which a person approving it should know).
func summarizeCall(name string, input []byte) string {
	var args map[string]any
	_ = json.Unmarshal(input, &args)
	for _, k := range []string{"command", "file_path", "pattern", "url", "path", "description"} {
		if v, ok := args[k].(string); ok && v != "" {
			s := fmt.Sprintf("%s(%s)", name, clip(v, 100))
			if args["run_in_background"] == true {
				s += " in the background"
			}
			return s
		}
	}
	if len(args) == 0 {
		return name
	}
	return fmt.Sprintf("%s(%s)", name, clip(string(input), 100))
}

func summarizeResult(d agent.ToolResultData) string {
	text := strings.TrimSpace(d.Output)
	lines := strings.Split(text, "\n")
	first := clip(lines[0], 120)
	if first == "" {
		first = "(no output)"
	}
	if len(lines) > 1 {
		first += fmt.Sprintf(" (+%d lines)", len(lines)-1)
	}
	if d.IsError {
		return "error: " + first
	}
	return first
}

func clip(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// streamJSON writes one JSON object per event: {"type": ..., payload fields}.
func streamJSON(w io.Writer, ev agent.Event) error {
	b, err := json.Marshal(ev.Data)
	if err != nil {
		return err
	}
	line := `{"type":"` + string(ev.Type) + `"`
	if len(b) > 2 && b[0] == '{' {
		line += "," + string(b[1:])
	} else {
		line += "}"
	}
	_, err = fmt.Fprintln(w, line)
	return err
}
