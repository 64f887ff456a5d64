// Package builtin holds weft's builtin tools, with the names and argument
// names models already know from Claude Code: Bash, Read, Write, Edit, Glob,
// Grep, WebFetch, TodoWrite and AskUserQuestion.
package builtin

import (
	"net/http"
	"time"

	"github.com/weft-run/weft/policy/secret"
	"github.com/weft-run/weft/tool"
)

// Config is shared by the builtin tools. Zero values are documented per
// field.
type Config struct {
	// Workspace is the directory tools run in and file tools are confined
	// to (after resolving symlinks and ".."); "" means the current directory.
	Workspace string
	// ExtraDirs are further directories file tools may touch.
	ExtraDirs []string
	// Env is added to the environment of Bash commands (the settings'
	// env), on top of the process environment without weft's own
	// variables and provider credentials (secret.ToolEnv); the run's
	// secrets come with each call (tool.Call.Secrets).
	Env []string
	// Guard scans what Write and Edit are about to put on disk; a secret
	// blocks the write. nil means secret.NewDefaultGuard() (scanning is on
	// by default); secret.NoopGuard{} turns it off.
	Guard secret.Guard
	// Background runs Bash commands given run_in_background as background
	// tasks (a *task.Registry, whose task tools read and stop them). nil
	// means Bash offers no run_in_background.
	Background Background

	// WebFetch: AllowPrivateNetworks lets it reach loopback, link-local and
	// private addresses (off by default: an agent must not probe the
	// network it runs in). HTTPClient defaults to a client with the
	// timeouts below. MaxFetchBytes defaults to 5 MiB, FetchTimeout to 30 s.
	AllowPrivateNetworks bool
	HTTPClient           *http.Client
	MaxFetchBytes        int64
	FetchTimeout         time.Duration
}

// Tools returns every builtin tool configured with cfg, in a stable order.
func Tools(cfg Config) []tool.Tool {
	return []tool.Tool{
		NewBash(cfg),
		NewRead(cfg),
		NewWrite(cfg),
		NewEdit(cfg),
		NewGlob(cfg),
		NewGrep(cfg),
		NewWebFetch(cfg),
		NewTodoWrite(),
		NewAskUserQuestion(),
	}
}
