package main

import (
	"errors"
	"io"

	"github.com/spf13/cobra"
)

// environ is everything a command reads from the process, so that tests run
// commands in-process with their own env and streams.
type environ struct {
	getenv func(string) string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

// exitError carries a specific exit code through cobra.
type exitError struct {
	code  int
	err   error
	quiet bool // already shown to the user
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// annotationOwnsInterrupt marks a command that handles SIGINT itself.
const annotationOwnsInterrupt = "weft/owns-interrupt"

func exitCode(err error) int {
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return 1
}

func newRootCmd(env environ) *cobra.Command {
	root := &cobra.Command{
		Use:           "weft",
		Short:         "weft runs LLM agents: a Go SDK, a CLI and an HTTP API over one engine",
		Version:       version(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate(versionLine() + "\n")
	root.SetIn(env.stdin)
	root.SetOut(env.stdout)
	root.SetErr(env.stderr)
	root.AddCommand(newAskCmd(env), newRunCmd(env), newChatCmd(env), newToolsCmd(env), newModelsCmd(env), newServeCmd(env), newMCPCmd(env), newCostCmd(env), newVersionCmd(env), newCheckpointsCmd(env))
	return root
}
