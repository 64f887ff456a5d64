package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/weft-run/weft/memory"
	"github.com/weft-run/weft/policy/secret"
	"github.com/weft-run/weft/tool"
)

// openMemory opens the file memory of a command working in ws (run, chat
// and serve): ~/.weft/memory/ and ~/.weft/projects/<hash>/memory/. The
// prompt builder made afterwards shows it, and the returned tools
// (memory_remember, memory_search, memory_forget) write it. None with
// --no-memory or without a home directory.
//
// The secret guard is the settings' (their custom rules and exempt
// paths), but never off: a memory is sent to the model in every later
// session, so a settings file that turns the Write/Edit guard off does
// not turn this one off.
func (p *promptFlags) openMemory(env environ, ws string, guard secret.Guard, set *secret.Set, log *slog.Logger) ([]tool.Tool, error) {
	home := env.getenv("HOME")
	if p.noMemory || home == "" {
		return nil, nil
	}
	if _, off := guard.(secret.NoopGuard); off || guard == nil {
		guard = secret.NewDefaultGuard()
	}
	sync, err := memorySync(env, home)
	if err != nil {
		return nil, err
	}
	fs, err := memory.NewFileStore(memory.FileStoreConfig{Home: home, Workspace: ws, Guard: guard, Secrets: set, Logger: log, Sync: sync})
	if err != nil {
		return nil, fmt.Errorf("memory: %w (--no-memory runs without it)", err)
	}
	p.mem = fs
	return fs.Tools(), nil
}

// serveMemory is weft serve's file memory: the same directories as run
// and chat (the server's user and workspace), its tools and its prompt
// section. --memory keeps the per-user keyword store instead (its tools
// have the same names, and it also feeds the planner), so there is no
// file memory then.
func (f *serveFlags) serveMemory(env environ, ws string, guard secret.Guard, set *secret.Set, log *slog.Logger) ([]tool.Tool, error) {
	if f.memory {
		return nil, nil
	}
	return f.promptFlags.openMemory(env, ws, guard, set, log)
}

// memorySync is the user memory's sync, from WEFT_MEMORY_REMOTE (a git
// URL; none: no sync), WEFT_MEMORY_CONFLICT (local-wins, server-wins,
// merge, fail) and WEFT_MEMORY_PULL (session-start, always, never).
func memorySync(env environ, home string) (*memory.Sync, error) {
	remote := env.getenv("WEFT_MEMORY_REMOTE")
	if remote == "" {
		return nil, nil
	}
	conflict, err := memory.ParseConflictPolicy(env.getenv("WEFT_MEMORY_CONFLICT"))
	if err != nil {
		return nil, fmt.Errorf("WEFT_MEMORY_CONFLICT: %w", err)
	}
	pull, err := memory.ParsePullPolicy(env.getenv("WEFT_MEMORY_PULL"))
	if err != nil {
		return nil, fmt.Errorf("WEFT_MEMORY_PULL: %w", err)
	}
	if pull == memory.PullWithTTL {
		return nil, fmt.Errorf("WEFT_MEMORY_PULL: ttl is for the Go API; want session-start, always or never")
	}
	g := memory.NewGitSyncAdapter(memory.GitSyncOptions{})
	if !g.IsAvailable() {
		return nil, fmt.Errorf("WEFT_MEMORY_REMOTE: syncing memory needs git, which is not on PATH")
	}
	// Local commands only (init, remote add): the remote is first reached
	// by the session's first pull.
	if err := g.InitRepo(context.Background(), memory.UserDir(home), remote); err != nil {
		return nil, fmt.Errorf("WEFT_MEMORY_REMOTE: %w", err)
	}
	return &memory.Sync{Adapter: g, Config: memory.SyncConfig{Pull: pull, Conflict: conflict}}, nil
}
