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
/clear (forget the conversation), /cost (usage and cost so far), /help.
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
			a, closeModel, err := f.build(env, ask, env.stderr)
			if err != nil {
				return err
			}
			defer closeModel()
			intr := make(chan os.Signal, 1)
			signal.Notify(intr, os.Interrupt)
			defer signal.Stop(intr)
			return chat(cmd.Context(), env, a, lines, showThinking, intr, f.mcpServers)
		},
	}
	f.register(cmd.Flags())
	cmd.Flags().BoolVar(&showThinking, "show-thinking", false, "print the model's thinking to stderr")
	return cmd
}

// exitWindow is how soon a second Ctrl-C at the prompt must follow the
// first to leave the REPL.
const exitWindow = 2 * time.Second

// chat is the REPL. interrupts delivers Ctrl-C (SIGINT); ctx ends on
// SIGTERM only.
func chat(ctx context.Context, env environ, a *agent.Agent, lines *lineReader, showThinking bool, interrupts <-chan os.Signal, mcpServers *mcp.Manager) error {
	s := a.NewSession()
	info := a.ModelInfo()
	fmt.Fprintf(env.stderr, "weft chat with %s:%s. /help for commands, /exit to leave.\n", info.Provider, info.ID)
	tr := &textRenderer{out: env.stdout, errw: env.stderr, showThinking: showThinking}
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
		switch line {
		case "":
			continue
		case "/exit", "/quit":
			return nil
		case "/clear":
			s.Clear()
			fmt.Fprintln(env.stderr, "conversation cleared")
			continue
		case "/cost":
			t := s.Totals()
			fmt.Fprintf(env.stdout, "%d turns, %d in / %d out tokens (%d cache read, %d cache write), $%.4f\n",
				t.Turns, t.Usage.InputTokens, t.Usage.OutputTokens, t.Usage.CacheReadTokens, t.Usage.CacheWriteTokens, t.CostUSD)
			continue
		case "/help":
			fmt.Fprintln(env.stdout, "/exit leave  /clear forget the conversation  /cost usage and cost so far")
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
		go func() {
			defer close(watched)
			select {
			case <-interrupts:
				fmt.Fprintln(env.stderr, "\n^C: stopping the run")
				cancelRun()
			case <-ran:
			}
		}()
		for ev := range s.Run(runCtx, line) {
			tr.render(ev)
		}
		close(ran)
		<-watched
		cancelRun()
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
