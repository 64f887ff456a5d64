// Command weft is the terminal front door of the weft agent runtime.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	env := environ{getenv: os.Getenv, stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}
	root := newRootCmd(env)
	// SIGTERM ends every command; SIGINT too, unless the command handles
	// it itself (the chat REPL, where Ctrl-C stops a run, not weft).
	sigs := []os.Signal{syscall.SIGTERM}
	if cmd, _, err := root.Find(os.Args[1:]); err != nil || cmd.Annotations[annotationOwnsInterrupt] == "" {
		sigs = append(sigs, os.Interrupt)
	}
	ctx, stop := signal.NotifyContext(context.Background(), sigs...)
	defer stop()
	if err := root.ExecuteContext(ctx); err != nil {
		var ee *exitError
		if !errors.As(err, &ee) || !ee.quiet {
			fmt.Fprintln(os.Stderr, "weft:", err)
		}
		os.Exit(exitCode(err))
	}
}
