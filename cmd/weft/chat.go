package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/tool/mcp"
)

func newChatCmd(env environ) *cobra.Command {
	var f agentFlags
	var showThinking bool
	cmd := &cobra.Command{
		Use:   "chat [flags]",
		Short: "Chat with an agent on one session, line by line",
		Long: `chat is a line-based REPL on one session: each line you type is a message,
and the agent answers with tools as in "weft run". Commands: /exit (or EOF),
/clear (forget the conversation), /rewind [N] (forget the last N turns,
default 1), /undo [force] (take back the agent's last file change),
/checkpoints (the workspace checkpoints of this chat), /restore ID [force],
/compact [instructions] (summarise the conversation so far to free the
context window, the instructions saying what the summary must keep),
/cost (usage and cost so far), /ratelimit
(the API key pool: masked keys, state, cool-down), /help.
Ctrl-C during a run stops the run and keeps the session; at the prompt it
clears the line, and a second Ctrl-C at the prompt within 2 seconds leaves
(as /exit and Ctrl-D do).`,
		// The REPL handles SIGINT itself: main must not end the command's
		// context on it.
		Annotations: map[string]string{annotationOwnsInterrupt: "true"},
		RunE: func(cmd *cobra.Command, args []string) error {
			lines := newLineReader(env.stdin)
			var ask *lineReader
			if lines.terminal {
				ask = lines // approvals share the REPL's input
			}
			f.budgetFlags.session = true // the limits count the whole chat
			a, closeModel, err := f.build(env, ask, env.stderr)
			if err != nil {
				return err
			}
			defer closeModel()
			intr := make(chan os.Signal, 1)
			signal.Notify(intr, os.Interrupt)
			defer signal.Stop(intr)
			keys := func() (llm.PoolStatus, bool) { return f.reg.KeyStatus(a.ModelInfo().Provider) }
			return chat(cmd.Context(), env, a, lines, showThinking, intr, f.mcpServers, keys, f.ckpt, f.pipe)
		},
	}
	f.register(cmd.Flags())
	f.turnEnd.suggestByDefault()
	cmd.Flags().BoolVar(&showThinking, "show-thinking", false, "print the model's thinking to stderr")
	return cmd
}

// exitWindow is how soon a second Ctrl-C at the prompt must follow the
// first to leave the REPL.
const exitWindow = 2 * time.Second

// chat is the REPL. interrupts delivers Ctrl-C (SIGINT); ctx ends on
// SIGTERM only.
func chat(ctx context.Context, env environ, a *agent.Agent, lines *lineReader, showThinking bool, interrupts <-chan os.Signal, mcpServers *mcp.Manager,
	keys func() (llm.PoolStatus, bool), ckpt *cliCheckpoints, te *cliTurnEnd) error {
	s := a.NewSession()
	info := a.ModelInfo()
	fmt.Fprintf(env.stderr, "weft chat with %s:%s. /help for commands, /exit to leave.\n", info.Provider, info.ID)
	tr := &textRenderer{out: env.stdout, errw: env.stderr, showThinking: showThinking}
	var turns chatTurns
	var lastInterrupt time.Time // Ctrl-C at the prompt; zero once a line came
	for {
		fmt.Fprint(env.stderr, "> ")
		line, err := lines.readLineOr(ctx, interrupts)
		if errors.Is(err, errInterrupted) {
			// The terminal has dropped what was typed; a fresh prompt shows it.
			if !lastInterrupt.IsZero() && time.Since(lastInterrupt) < exitWindow {
				fmt.Fprintln(env.stderr)
				return nil
			}
			lastInterrupt = time.Now()
			fmt.Fprintln(env.stderr, "\n(Ctrl-C again to leave, or /exit)")
			continue
		}
		lastInterrupt = time.Time{}
		if errors.Is(err, io.EOF) {
			fmt.Fprintln(env.stderr)
			return nil
		}
		if err != nil {
			return err
		}
		line = strings.TrimSpace(line)
		if cmd, arg, _ := strings.Cut(line, " "); cmd == "/rewind" {
			s = turns.rewind(a, s, arg, env.stderr)
			continue
		} else if cmd == "/compact" {
			compactChat(ctx, s, arg, env.stderr)
			continue
		}
		if ckpt.slash(ctx, line, env.stderr) {
			continue
		}
		switch line {
		case "":
			continue
		case "/exit", "/quit":
			return nil
		case "/clear":
			s.Clear()
			turns.starts = nil
			fmt.Fprintln(env.stderr, "conversation cleared")
			continue
		case "/cost":
			t := turns.totals(s)
			fmt.Fprintf(env.stdout, "%d turns, %d in / %d out tokens (%d cache read, %d cache write), $%.4f\n",
				t.Turns, t.Usage.InputTokens, t.Usage.OutputTokens, t.Usage.CacheReadTokens, t.Usage.CacheWriteTokens, t.CostUSD)
			continue
		case "/ratelimit":
			printKeyPool(env.stdout, info.Provider, keys, time.Now())
			continue
		case "/help":
			fmt.Fprintln(env.stdout, "/exit leave  /clear forget the conversation  /rewind [N] forget the last N turns  /undo [force] take back the last file change  /checkpoints  /restore ID [force]  /compact [instructions] summarise the conversation  /cost usage and cost so far  /ratelimit the API key pool")
			mcpHelp(mcpServers, env.stdout)
			continue
		}
		if strings.HasPrefix(line, "/mcp__") {
			var ok bool
			if line, ok = mcpSlash(ctx, mcpServers, line, env.stderr); !ok {
				continue
			}
		}
		if strings.HasPrefix(line, "/") {
			fmt.Fprintf(env.stderr, "unknown command %s (/help lists them)\n", line)
			continue
		}
		// Ctrl-C stops this run only; the REPL goes on.
		runCtx, cancelRun := context.WithCancel(ctx)
		ran, watched := make(chan struct{}), make(chan struct{})
		interrupted := false
		go func() {
			defer close(watched)
			select {
			case <-interrupts:
				fmt.Fprintln(env.stderr, "\n^C: stopping the run")
				interrupted = true
				cancelRun()
			case <-ran:
			}
		}()
		turns.begin(s)
		stop := ""
		for ev := range s.Run(withUsageRun(runCtx), line) {
			tr.render(ev)
			if d, ok := ev.Data.(agent.DoneData); ok {
				stop = d.StopReason
			}
		}
		close(ran)
		<-watched
		cancelRun()
		s = turns.end(a, s, interrupted || ctx.Err() != nil)
		// Memory extraction and the dream check run on in the background;
		// follow-up suggestions are shown before the next prompt when they
		// come in time (turnend.go).
		printSuggestions(ctx, te.ended(a, s, stop), interrupts, env.stdout)
		// A Ctrl-C pressed while the run was stopping was meant for it,
		// not for the prompt.
		select {
		case <-interrupts:
		default:
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// printKeyPool shows the provider's key pool for /ratelimit: each key
// masked, its state, how long it still cools down, and its last error.
func printKeyPool(w io.Writer, provider string, keys func() (llm.PoolStatus, bool), now time.Time) {
	st, ok := keys()
	if !ok {
		fmt.Fprintf(w, "%s: one API key (no pool); a rate limit is retried after the server's Retry-After. Give several keys, comma-separated, to pool them.\n", provider)
		return
	}
	fmt.Fprintf(w, "%s: %d keys, %d usable now", provider, len(st.Keys), st.Usable)
	if !st.NextReady.IsZero() {
		fmt.Fprintf(w, ", the first back in %s", st.NextReady.Sub(now).Round(time.Second))
	}
	fmt.Fprintln(w)
	for _, k := range st.Keys {
		line := fmt.Sprintf("  %-6s %-13s %-8s", k.ID, k.Key, k.State)
		if k.State == llm.KeyCooling {
			line += fmt.Sprintf(" %s left", k.CoolUntil.Sub(now).Round(time.Second))
		}
		line += fmt.Sprintf("  %d uses", k.Uses)
		if k.LastError != "" {
			line += "; last error: " + clip(k.LastError, 100)
		}
		fmt.Fprintln(w, line)
	}
}
