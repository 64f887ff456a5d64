// Package layers holds the check that weft's imports point down
// (/work/shared/DESIGN.md, docs/architecture.md): a package imports only
// packages of its own layer or below, and a few pairs are ruled out by
// name. It runs in `go test ./...`, so in .ci/run.
package layers

import (
	"go/build"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/weft-run/weft"

// ranks are the layers, lowest first, by package path or path prefix
// (the longest match wins). A package may import one of a rank at most
// its own; a package in no entry fails the check, so that a new package
// gets its place here.
var ranks = map[string]int{
	// Records, event names and leaf helpers: import nothing of weft's.
	"record": 1, "event": 1, "internal/realpath": 1, "internal/frontmatter": 1, "internal/netguard": 1, "internal/sse": 1,
	"observe": 1, "observe/otelobs": 2, "observe/promobs": 2, "policy/secret": 1, "policy/shell": 1,
	// The model contract and its providers.
	"llm": 2,
	// Tools, the store contract and its implementations, the approval broker.
	"tool": 3, "tool/workflow": 3, "store": 3, "internal/approval": 3,
	// Leases on the store contract.
	"internal/lease": 4,
	// The policy stages, the tools that need them, plans, prompts, the
	// event log.
	"policy": 4, "tool/builtin": 4, "tool/mcp": 4, "plan": 4, "vision": 4, "prompt": 4, "eventlog": 4, "memory": 4,
	"compact": 4,
	// The agent loop.
	"agent": 5,
	// The turn-end pipeline: memory agents and suggestions after a turn.
	"turnend": 5,
	// Workspace checkpoints: a policy stage over git.
	"checkpoint": 5,
	// The services.
	"session": 6, "run": 6, "task": 6, "schedule": 6,
	// The Agent tool: sub-agents as tools and tasks.
	"subagent": 6,
	// Front doors.
	"server": 7, "web": 7, "mcpserver": 7,
	// The composition root.
	"app": 8,
	// Programs.
	"cmd": 9, "bench": 9, "examples": 9, "web/e2e": 9, "internal/layers": 9,
}

// never are imports ruled out whatever the ranks say (DESIGN.md).
var never = []struct{ from, to string }{
	{"agent", "server"}, {"agent", "store"}, {"agent", "session"}, {"agent", "run"},
	{"server", "store"},
	{"llm/anthropic", "agent"}, {"llm/openai", "agent"}, {"llm/gemini", "agent"},
	{"session", "run"}, {"run", "session"}, // two services, one broker: neither reaches into the other
}

// within reports whether pkg is path or below it.
func within(pkg, path string) bool { return pkg == path || strings.HasPrefix(pkg, path+"/") }

func rank(pkg string) (int, bool) {
	best, r := "", 0
	for p, n := range ranks {
		if within(pkg, p) && len(p) > len(best) {
			best, r = p, n
		}
	}
	return r, best != ""
}

func TestImportsPointDown(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	imports := map[string][]string{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "node_modules") {
			return filepath.SkipDir
		}
		p, err := build.ImportDir(path, build.ImportComment)
		if err != nil {
			if _, ok := err.(*build.NoGoError); ok {
				return nil
			}
			return err
		}
		rel, _ := filepath.Rel(root, path)
		pkg := filepath.ToSlash(rel)
		for _, imp := range p.Imports {
			if within(imp, module) {
				imports[pkg] = append(imports[pkg], strings.TrimPrefix(strings.TrimPrefix(imp, module), "/"))
			}
		}
		if _, ok := imports[pkg]; !ok {
			imports[pkg] = nil // listed, to be ranked
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(imports) < 20 {
		t.Fatalf("found only %d packages under %s", len(imports), root)
	}
	for pkg, imps := range imports {
		r, ok := rank(pkg)
		if !ok {
			t.Errorf("%s has no layer: give it one in ranks", pkg)
			continue
		}
		for _, imp := range imps {
			ir, ok := rank(imp)
			if !ok {
				continue // reported as a package of its own
			}
			if ir > r && !within(imp, pkg) {
				t.Errorf("%s (layer %d) imports %s (layer %d): imports point down", pkg, r, imp, ir)
			}
			for _, n := range never {
				if within(pkg, n.from) && within(imp, n.to) {
					t.Errorf("%s imports %s: DESIGN.md rules that out", pkg, imp)
				}
			}
		}
	}
}

// TestRanksCatchAnUpwardImport: the check itself fails on the imports it
// exists for.
func TestRanksCatchAnUpwardImport(t *testing.T) {
	tests := []struct {
		from, to string
		up       bool
	}{
		{"agent", "server", true},
		{"server", "session", false},
		{"store/sqlite", "session", true},
		{"policy/audit", "record", false},
		{"llm/anthropic", "agent", true},
		{"session", "internal/approval", false},
	}
	for _, tt := range tests {
		r, _ := rank(tt.from)
		ir, _ := rank(tt.to)
		if got := ir > r; got != tt.up {
			t.Errorf("%s -> %s: points up %v, want %v", tt.from, tt.to, got, tt.up)
		}
	}
}
