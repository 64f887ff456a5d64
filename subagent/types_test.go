package subagent_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/weft-run/weft/subagent"
)

func TestBuiltinTypes(t *testing.T) {
	t.Parallel()
	byName := map[string]subagent.Type{}
	for _, ty := range subagent.Builtin() {
		byName[ty.Name] = ty
		if ty.Description == "" || ty.Prompt == "" || ty.Source != "builtin" {
			t.Errorf("builtin %+v", ty)
		}
	}
	for _, name := range []string{"general", "explore", "plan", "review", "test"} {
		if _, ok := byName[name]; !ok {
			t.Fatalf("no builtin %q", name)
		}
	}
	// explore and plan are read-only.
	for _, name := range []string{"explore", "plan"} {
		for _, tl := range byName[name].Tools {
			if slices.Contains([]string{"Bash", "Write", "Edit"}, tl) {
				t.Errorf("%s may call %s", name, tl)
			}
		}
		if byName[name].Tools == nil {
			t.Errorf("%s has every tool", name)
		}
	}
	if byName["general"].Tools != nil {
		t.Errorf("general's tools are limited: %v", byName["general"].Tools)
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, text string
		want       subagent.Type // Name, Description, Tools, DisallowedTools, Model, Prompt
		err        string
	}{
		{name: "claude code file", text: "---\nname: code-reviewer\ndescription: Reviews code.\ntools: Read, Grep, Bash(git diff:*), MultiEdit\nmodel: sonnet\n---\nYou review.\n",
			want: subagent.Type{Name: "code-reviewer", Description: "Reviews code.", Tools: []string{"Read", "Grep", "Bash", "Edit"}, Model: "sonnet", Prompt: "You review."}},
		{name: "yaml list and disallowed", text: "---\nname: x\ndescription: d\ntools:\n  - Read\n  - mcp__gh__*\ndisallowedTools: Write\n---\nbody",
			want: subagent.Type{Name: "x", Description: "d", Tools: []string{"Read", "mcp__gh__*"}, DisallowedTools: []string{"Write"}, Prompt: "body"}},
		{name: "star is every tool", text: "---\nname: x\ndescription: d\ntools: \"*\"\n---\nbody",
			want: subagent.Type{Name: "x", Description: "d", Prompt: "body"}},
		{name: "commas inside a permission spec", text: "---\nname: x\ndescription: d\ntools: Bash(git add:*, git commit:*), Read\n---\nbody",
			want: subagent.Type{Name: "x", Description: "d", Tools: []string{"Bash", "Read"}, Prompt: "body"}},
		{name: "loose front matter (a colon in the description)", text: "---\nname: x\ndescription: Use it when: the user asks\n  for a review\n---\nbody",
			want: subagent.Type{Name: "x", Description: "Use it when: the user asks for a review", Prompt: "body"}},
		{name: "escaped newlines in the description", text: "---\nname: x\ndescription: \"one\\\\ntwo\"\n---\nbody",
			want: subagent.Type{Name: "x", Description: "one two", Prompt: "body"}},
		{name: "the file name stands in for a name", text: "---\ndescription: d\n---\nbody",
			want: subagent.Type{Name: "fromfile", Description: "d", Prompt: "body"}},
		{name: "crlf and bom", text: "\uFEFF---\r\nname: x\r\ndescription: d\r\n---\r\nbody\r\n",
			want: subagent.Type{Name: "x", Description: "d", Prompt: "body"}},
		{name: "no front matter", text: "just text", err: "no front matter"},
		{name: "unclosed", text: "---\nname: x\ndescription: d\n", err: "not closed"},
		{name: "no description", text: "---\nname: x\n---\nbody", err: "no \"description\""},
		{name: "no prompt", text: "---\nname: x\ndescription: d\n---\n", err: "no prompt"},
		{name: "bad name", text: "---\nname: ../../etc\ndescription: d\n---\nbody", err: "not valid"},
		{name: "tools not a list", text: "---\nname: x\ndescription: d\ntools: {a: 1}\n---\nbody", err: "tools"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := subagent.Parse(tt.text, "/p/.weft/agents/fromfile.md")
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Name != tt.want.Name || got.Description != tt.want.Description || !slices.Equal(got.Tools, tt.want.Tools) ||
				!slices.Equal(got.DisallowedTools, tt.want.DisallowedTools) || got.Model != tt.want.Model || got.Prompt != tt.want.Prompt {
				t.Fatalf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func write(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func agentFile(name, desc string) string {
	return "---\nname: " + name + "\ndescription: " + desc + "\n---\nprompt of " + desc + "\n"
}

// TestLoad: the user's and the project's files join weft's types; by name
// the project's win over the user's and the user's over weft's, nearer the
// workspace over further up, .weft over .claude; broken, oversized,
// binary, FIFO and linked-outside files are skipped without stopping the
// others; outside a repository only the workspace's own directories
// count.
func TestLoad(t *testing.T) {
	t.Parallel()
	home, root, outside := t.TempDir(), t.TempDir(), t.TempDir()
	ws := filepath.Join(root, "svc", "api")
	write(t, filepath.Join(root, ".git", "HEAD"), "ref: x\n")
	write(t, filepath.Join(home, ".claude", "agents", "mine.md"), agentFile("mine", "user claude"))
	write(t, filepath.Join(home, ".weft", "agents", "mine.md"), agentFile("mine", "user weft"))
	write(t, filepath.Join(home, ".weft", "agents", "explore.md"), agentFile("explore", "user explore"))
	write(t, filepath.Join(root, ".claude", "agents", "shared.md"), agentFile("shared", "root claude"))
	write(t, filepath.Join(root, ".weft", "agents", "shared.md"), agentFile("shared", "root weft"))
	write(t, filepath.Join(ws, ".claude", "agents", "near.md"), agentFile("near", "workspace claude"))
	write(t, filepath.Join(root, ".weft", "agents", "near.md"), agentFile("near", "root weft"))
	write(t, filepath.Join(ws, ".weft", "agents", "explore.md"), agentFile("explore", "project explore"))
	write(t, filepath.Join(ws, ".weft", "agents", "broken.md"), "no front matter")
	write(t, filepath.Join(ws, ".weft", "agents", "big.md"), agentFile("big", "big")+strings.Repeat("x", 300<<10))
	write(t, filepath.Join(ws, ".weft", "agents", "bin.md"), "---\nname: bin\ndescription: d\n---\n\x00\x01")
	write(t, filepath.Join(ws, ".weft", "agents", "notes.txt"), agentFile("notes", "not markdown"))
	write(t, filepath.Join(outside, "secret.md"), agentFile("leak", "outside the project"))
	if err := os.Symlink(filepath.Join(outside, "secret.md"), filepath.Join(ws, ".weft", "agents", "leak.md")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(ws, ".weft", "agents", "fifo.md"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	var names []string
	for _, ty := range subagent.Load(subagent.LoadConfig{Workspace: ws, Home: home}) {
		got[ty.Name] = ty.Description
		names = append(names, ty.Name)
	}
	if !slices.IsSorted(names) {
		t.Errorf("not sorted: %v", names)
	}
	want := map[string]string{"mine": "user weft", "explore": "project explore", "shared": "root weft", "near": "workspace claude"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	for _, k := range []string{"broken", "big", "bin", "notes", "leak", "fifo"} {
		if _, ok := got[k]; ok {
			t.Errorf("%s was loaded", k)
		}
	}
	for _, k := range []string{"general", "plan", "review", "test"} {
		if _, ok := got[k]; !ok {
			t.Errorf("builtin %s missing", k)
		}
	}

	// Outside a repository: a directory above the workspace holds no
	// agent files for it.
	plain := t.TempDir()
	write(t, filepath.Join(plain, ".weft", "agents", "above.md"), agentFile("above", "above"))
	inner := filepath.Join(plain, "inner")
	write(t, filepath.Join(inner, ".weft", "agents", "here.md"), agentFile("here", "here"))
	got = map[string]string{}
	for _, ty := range subagent.Load(subagent.LoadConfig{Workspace: inner}) {
		got[ty.Name] = ty.Description
	}
	if _, ok := got["above"]; ok || got["here"] != "here" {
		t.Errorf("outside a repository: %v", got)
	}
}
