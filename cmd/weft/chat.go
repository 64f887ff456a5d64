package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/weft-run/weft/agent"
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
default 1), /cost (usage and cost so far), /help.
Ctrl-C stops the current run and keeps the session.`,
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
			return chat(cmd.Context(), env, a, lines, showThinking)
		},
	}
	f.register(cmd.Flags())
	cmd.Flags().BoolVar(&showThinking, "show-thinking", false, "print the model's thinking to stderr")
	return cmd
}

func chat(ctx context.Context, env environ, a *agent.Agent, lines *lineReader, showThinking bool) error {
	s := a.NewSession()
	info := a.ModelInfo()
	fmt.Fprintf(env.stderr, "weft chat with %s:%s. /help for commands, /exit to leave.\n", info.Provider, info.ID)
	tr := &textRenderer{out: env.stdout, errw: env.stderr, showThinking: showThinking}
	var turns chatTurns
	for {
		fmt.Fprint(env.stderr, "> ")
		line, err := lines.ReadLine()
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
		case "/help":
			fmt.Fprintln(env.stdout, "/exit leave  /clear forget the conversation  /rewind [N] forget the last N turns  /cost usage and cost so far")
			continue
		}
		if strings.HasPrefix(line, "/") {
			fmt.Fprintf(env.stderr, "unknown command %s (/help lists them)\n", line)
			continue
		}
		// Ctrl-C stops this run only; the REPL goes on.
		runCtx, stop := signal.NotifyContext(ctx, syscall.SIGINT)
		turns.begin(s)
		for ev := range s.Run(runCtx, line) {
			tr.render(ev)
		}
		s = turns.end(a, s, runCtx.Err() != nil)
		stop()
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}
