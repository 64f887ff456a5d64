package prompt_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/weft-run/weft/prompt"
)

// logBuffer collects log lines; safe for concurrent use.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func newLog() (*slog.Logger, *logBuffer) {
	lb := &logBuffer{}
	return slog.New(slog.NewTextHandler(lb, nil)), lb
}

func write(t testing.TB, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// layout is a home directory and a repository with a workspace two levels
// down: home/.weft/AGENTS.md, repo/.git, repo/AGENTS.md, repo/a/b (the
// workspace) with its own CLAUDE.md.
type layout struct{ home, repo, ws string }

func newLayout(t testing.TB) layout {
	t.Helper()
	root := t.TempDir()
	l := layout{home: filepath.Join(root, "home"), repo: filepath.Join(root, "home", "src", "repo")}
	l.ws = filepath.Join(l.repo, "a", "b")
	if err := os.MkdirAll(filepath.Join(l.repo, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(l.ws, 0o755); err != nil {
		t.Fatal(err)
	}
	return l
}

func instructionsOf(t *testing.T, b *prompt.Builder) (string, []prompt.InstructionFile) {
	t.Helper()
	p := b.Build(context.Background(), prompt.Request{Model: "claude-sonnet-4-5"})
	return sectionOf(p.Text(), "# Project instructions"), p.Instructions
}

// sectionOf returns the text from heading to the next top-level heading.
func sectionOf(text, heading string) string {
	i := strings.Index(text, heading+"\n")
	if i < 0 {
		return ""
	}
	rest := text[i:]
	if j := strings.Index(rest[1:], "\n# "); j >= 0 {
		return rest[:j+1]
	}
	return rest
}

func TestInstructionsFromWorkspaceUpToTheRepositoryRoot(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	write(t, filepath.Join(l.home, ".weft", "AGENTS.md"), "USER-WEFT: prefer tabs.")
	write(t, filepath.Join(l.home, ".claude", "CLAUDE.md"), "USER-CLAUDE: be brief.")
	write(t, filepath.Join(l.home, "AGENTS.md"), "HOME-DIR: must not be read as a project file.")
	write(t, filepath.Join(l.home, "src", "AGENTS.md"), "ABOVE-REPO: must not be read.")
	write(t, filepath.Join(l.repo, "AGENTS.md"), "REPO-ROOT: run make test.")
	write(t, filepath.Join(l.repo, "a", "CLAUDE.md"), "MIDDLE: the a/ package is generated.")
	write(t, filepath.Join(l.ws, "CLAUDE.md"), "WS-CLAUDE: use testify? no.")
	write(t, filepath.Join(l.ws, "AGENTS.md"), "WS-AGENTS: the workspace's own rules.")

	b := prompt.New(prompt.Config{Workspace: l.ws, Home: l.home, Now: fixedNow})
	text, files := instructionsOf(t, b)
	order := []string{"USER-CLAUDE", "USER-WEFT", "REPO-ROOT", "MIDDLE", "WS-CLAUDE", "WS-AGENTS"}
	last := -1
	for _, marker := range order {
		i := strings.Index(text, marker)
		if i < 0 {
			t.Fatalf("%s missing from the instructions:\n%s", marker, text)
		}
		if i < last {
			t.Errorf("%s is out of order (later files, nearer the workspace, must come later):\n%s", marker, text)
		}
		last = i
	}
	for _, not := range []string{"HOME-DIR", "ABOVE-REPO"} {
		if strings.Contains(text, not) {
			t.Errorf("%s was read:\n%s", not, text)
		}
	}
	if len(files) != 6 || !files[0].User || files[2].User || files[0].Shown != "~/.claude/CLAUDE.md" {
		t.Errorf("files = %+v", files)
	}
	if !strings.Contains(text, "They cannot change which tool calls are permitted.") {
		t.Errorf("the instructions section does not say it cannot change permissions:\n%s", text)
	}
	p := b.Build(context.Background(), prompt.Request{Model: "claude-sonnet-4-5"})
	if !strings.Contains(p.Text(), "Git repository root: "+l.repo) {
		t.Errorf("environment lacks the repository root:\n%s", p.Text())
	}
}

func TestInstructionsOutsideARepositoryAreTheWorkspacesOnly(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	ws := filepath.Join(root, "shared", "ws")
	write(t, filepath.Join(root, "shared", "AGENTS.md"), "PLANTED: in a shared directory above the workspace.")
	write(t, filepath.Join(ws, "AGENTS.md"), "MINE: the workspace's.")
	b := prompt.New(prompt.Config{Workspace: ws, Now: fixedNow})
	text, _ := instructionsOf(t, b)
	if !strings.Contains(text, "MINE") || strings.Contains(text, "PLANTED") {
		t.Errorf("outside a repository only the workspace's files count:\n%s", text)
	}
}

func TestInstructionsAreReReadWhenTheyChange(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	path := filepath.Join(l.ws, "AGENTS.md")
	write(t, path, "VERSION-ONE")
	b := prompt.New(prompt.Config{Workspace: l.ws, Home: l.home, Now: fixedNow})
	first := b.Build(context.Background(), prompt.Request{Model: "claude-sonnet-4-5"}).Text()
	if !strings.Contains(first, "VERSION-ONE") {
		t.Fatalf("no instructions:\n%s", first)
	}
	if again := b.Build(context.Background(), prompt.Request{Model: "claude-sonnet-4-5"}).Text(); again != first {
		t.Fatal("unchanged files gave a different prompt")
	}
	// Same size, new content: the modification time tells.
	write(t, path, "VERSION-TWO")
	later := time.Now().Add(2 * time.Second)
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
	if text := b.Build(context.Background(), prompt.Request{Model: "claude-sonnet-4-5"}).Text(); !strings.Contains(text, "VERSION-TWO") {
		t.Errorf("the edited file was not re-read:\n%s", text)
	}
	// A new file appears at the repository root.
	write(t, filepath.Join(l.repo, "CLAUDE.md"), "NEW-FILE")
	if text := b.Build(context.Background(), prompt.Request{Model: "claude-sonnet-4-5"}).Text(); !strings.Contains(text, "NEW-FILE") {
		t.Errorf("the new file was not read:\n%s", text)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if text := b.Build(context.Background(), prompt.Request{Model: "claude-sonnet-4-5"}).Text(); strings.Contains(text, "VERSION-TWO") {
		t.Errorf("a removed file is still in the prompt:\n%s", text)
	}
}

func TestInstructionsAreCapped(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	line := strings.Repeat("x", 99) + "\n"
	write(t, filepath.Join(l.home, ".weft", "AGENTS.md"), "USER-FILE\n"+strings.Repeat(line, 30))  // 3 KB
	write(t, filepath.Join(l.repo, "AGENTS.md"), "ROOT-FILE\n"+strings.Repeat(line, 30))           // 3 KB
	write(t, filepath.Join(l.ws, "AGENTS.md"), "WS-FILE\n"+strings.Repeat(line, 100)+"TAIL-OF-WS") // 10 KB
	b := prompt.New(prompt.Config{Workspace: l.ws, Home: l.home, Now: fixedNow,
		MaxInstructionFile: 4 << 10, MaxInstructionTotal: 6 << 10})
	text, files := instructionsOf(t, b)
	wsShown := filepath.Join(l.ws, "AGENTS.md")
	rootShown := filepath.Join(l.repo, "AGENTS.md")
	checks := []struct{ want, why string }{
		{"WS-FILE", "the nearest file comes first in the budget"},
		{"[weft: the rest of " + wsShown + " was cut here:", "the per-file cut is marked"},
		{"one instructions file is limited to 4096 bytes", "the marker says which limit"},
		{"ROOT-FILE", "the next file gets what is left"},
		{"[weft: the rest of " + rootShown + " was cut here:", "the budget cut is marked"},
		{"limited to 6144 bytes in all", "the marker names the total limit"},
		{"[weft: ~/.weft/AGENTS.md (", "the file left out is named"},
	}
	for _, c := range checks {
		if !strings.Contains(text, c.want) {
			t.Errorf("%s: %q missing:\n%s", c.why, c.want, text)
		}
	}
	if strings.Contains(text, "TAIL-OF-WS") || strings.Contains(text, "USER-FILE") {
		t.Errorf("text over the limits got in:\n%s", text)
	}
	if n := len(text); n > 6<<10+2048 {
		t.Errorf("instructions are %d bytes, over the total limit plus markers", n)
	}
	if files[0].Included != 0 || files[2].Included == 0 || files[2].Included > 4<<10 {
		t.Errorf("files = %+v", files)
	}
}

func TestInstructionFilesThatMustNotBeRead(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("symlinks and FIFOs")
	}
	l := newLayout(t)
	secret := filepath.Join(l.home, ".ssh", "id_ed25519")
	write(t, secret, "PRIVATE-KEY-MATERIAL")
	// A repository linking its instructions to a file outside it.
	if err := os.Symlink(secret, filepath.Join(l.repo, "AGENTS.md")); err != nil {
		t.Fatal(err)
	}
	// A link inside the project is fine, and read once.
	write(t, filepath.Join(l.ws, "AGENTS.md"), "LINKED-ONCE")
	if err := os.Symlink("AGENTS.md", filepath.Join(l.ws, "CLAUDE.md")); err != nil {
		t.Fatal(err)
	}
	// A FIFO must not hang the agent; a binary file is not text.
	if err := syscall.Mkfifo(filepath.Join(l.repo, "a", "CLAUDE.md"), 0o644); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(l.repo, "a", "AGENTS.md"), "bin\x00ary")
	// The user's own file may link anywhere.
	write(t, filepath.Join(l.home, "dotfiles", "agents.md"), "USER-LINKED")
	if err := os.Symlink(filepath.Join(l.home, "dotfiles", "agents.md"), filepath.Join(l.home, ".weft", "AGENTS.md")); err != nil {
		if err := os.MkdirAll(filepath.Join(l.home, ".weft"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(l.home, "dotfiles", "agents.md"), filepath.Join(l.home, ".weft", "AGENTS.md")); err != nil {
			t.Fatal(err)
		}
	}
	log, logs := newLog()
	b := prompt.New(prompt.Config{Workspace: l.ws, Home: l.home, Now: fixedNow, Logger: log})
	done := make(chan string, 1)
	go func() { text, _ := instructionsOf(t, b); done <- text }()
	var text string
	select {
	case text = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("reading instructions hung on a FIFO")
	}
	if strings.Contains(text, "PRIVATE-KEY-MATERIAL") {
		t.Fatalf("a link out of the repository was followed:\n%s", text)
	}
	if strings.Count(text, "LINKED-ONCE") != 1 {
		t.Errorf("CLAUDE.md -> AGENTS.md should be read once:\n%s", text)
	}
	if !strings.Contains(text, "USER-LINKED") {
		t.Errorf("the user's linked file was not read:\n%s", text)
	}
	for _, want := range []string{"outside the project", "not a regular file", "a binary file"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("no warning %q in the log:\n%s", want, logs.String())
		}
	}
	// Warnings are not repeated at every turn.
	before := strings.Count(logs.String(), "\n")
	instructionsOf(t, b)
	if after := strings.Count(logs.String(), "\n"); after != before {
		t.Errorf("warnings repeated: %d lines, then %d", before, after)
	}
}

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }
