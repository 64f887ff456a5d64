package main

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/registry"
	"github.com/weft-run/weft/subagent"
	"github.com/weft-run/weft/task"
)

// subagentManager is the Agent tool's state for one weft run, chat or
// serve: weft's agent types and the user's (~/.weft/agents,
// ~/.claude/agents) and the project's (.weft/agents, .claude/agents of
// the workspace up to the repository root), background sub-agents as
// tasks of tasks, and models resolved by the same registry as the
// session's (nil: a type's model is taken as a model id of the parent's
// provider).
func subagentManager(env environ, ws string, tasks *task.Registry, models *registry.Registry, log *slog.Logger) *subagent.Manager {
	cfg := subagent.Config{
		Types: subagent.Load(subagent.LoadConfig{Workspace: ws, Home: env.getenv("HOME"), Logger: log}),
		Tasks: tasks, Logger: log,
	}
	if models != nil {
		cfg.Resolve = func(spec string) (llm.Provider, llm.ModelInfo, error) { return models.Resolve(spec) }
	}
	return subagent.New(cfg)
}

// backgroundNotices prints one line to w when a background sub-agent
// starts and when it ends: the run's renderer shows the sub-agents that
// run within a tool call, indented under it, but background ones work
// while the parent goes on. It is called from their goroutines.
func backgroundNotices(w io.Writer) func(agent.Event) {
	var mu sync.Mutex
	return func(ev agent.Event) {
		var line string
		switch d := ev.Data.(type) {
		case agent.SubagentStartData:
			line = fmt.Sprintf("[background sub-agent %s %s started]", d.SubagentID, quoted(d.Description))
		case agent.SubagentEndData:
			line = fmt.Sprintf("[background sub-agent %s %s in %s%s]", d.SubagentID, d.Status, durationOf(d.DurationMS), errSuffix(d.Error))
		default:
			return
		}
		mu.Lock()
		fmt.Fprintln(w, line)
		mu.Unlock()
	}
}

// renderSubagent prints a sub-agent's progress indented under the
// parent's Agent call: its start, its tool calls and their results, its
// errors and its end. Several sub-agents run at once, so each line names
// the one it is about. It reports whether ev was a sub-agent's.
func (r *textRenderer) renderSubagent(ev agent.Event) bool {
	switch d := ev.Data.(type) {
	case agent.SubagentStartData:
		r.newline()
		if r.subLabels == nil {
			r.subLabels = map[string]string{}
		}
		label := d.SubagentID
		if d.Description != "" {
			label = clip(d.Description, 40)
		}
		r.subLabels[d.SubagentID] = label
		fmt.Fprintf(r.out, "  ↳ %s sub-agent %s started (%s)\n", nonEmpty(d.SubagentType, "general"), quoted(label), d.Model)
	case agent.SubagentEventData:
		label := r.subLabels[d.SubagentID]
		if label == "" {
			label = d.SubagentID
		}
		switch in := d.Event.Data.(type) {
		case agent.ToolUseData:
			r.newline()
			fmt.Fprintf(r.out, "    [%s] ● %s\n", label, summarizeCall(in.ToolName, in.Input))
		case agent.ToolResultData:
			fmt.Fprintf(r.out, "    [%s]   ⎿ %s\n", label, summarizeResult(in))
		case agent.ErrorData:
			r.newline()
			fmt.Fprintf(r.out, "    [%s] error: %s\n", label, in.Error)
		}
	case agent.SubagentEndData:
		r.newline()
		label := r.subLabels[d.SubagentID]
		if label == "" {
			label = d.SubagentID
		}
		delete(r.subLabels, d.SubagentID)
		fmt.Fprintf(r.out, "  ↳ sub-agent %s %s in %s%s\n", quoted(label), d.Status, durationOf(d.DurationMS), errSuffix(d.Error))
	default:
		return false
	}
	return true
}

func quoted(s string) string {
	if s == "" {
		return ""
	}
	return `"` + s + `"`
}

func nonEmpty(s, fallback string) string {
	if strings.TrimSpace(s) == "" {
		return fallback
	}
	return s
}

func durationOf(ms int64) string {
	return (time.Duration(ms) * time.Millisecond).Round(100 * time.Millisecond).String()
}

func errSuffix(e string) string {
	if e == "" {
		return ""
	}
	return ": " + clip(e, 200)
}
