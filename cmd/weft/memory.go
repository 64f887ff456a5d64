package main

import (
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
	fs, err := memory.NewFileStore(memory.FileStoreConfig{Home: home, Workspace: ws, Guard: guard, Secrets: set, Logger: log})
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
