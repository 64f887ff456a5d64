// Command weft is the terminal front door of the weft agent runtime.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	env := environ{getenv: os.Getenv, stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr}
	if err := newRootCmd(env).ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "weft:", err)
		os.Exit(exitCode(err))
	}
}
