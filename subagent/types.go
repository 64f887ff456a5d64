package subagent

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/weft-run/weft/internal/frontmatter"
	"github.com/weft-run/weft/internal/realpath"
)

// Type is an agent type: what a sub-agent is for, the tools it may have,
// its model and its instructions. Types are Markdown files in Claude
// Code's agent format: YAML front matter, then the prompt.
//
//	---
//	name: code-reviewer
//	description: Reviews a change for bugs and security problems. Use after writing code.
//	tools: Read, Grep, Glob, Bash
//	model: inherit
//	---
//	You are a senior code reviewer...
type Type struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Tools are the names (or globs, "mcp__github__*") of the parent's
	// tools it may call; nil means all of them.
	Tools []string `json:"tools,omitempty"`
	// DisallowedTools are left out of them (Claude Code's
	// disallowedTools).
	DisallowedTools []string `json:"disallowed_tools,omitempty"`
	// Model is "" or "inherit" (the parent's), an alias (sonnet, opus,
	// haiku) or a model spec (provider:model); see Config.Resolve.
	Model string `json:"model,omitempty"`
	// Prompt is the body: the sub-agent's instructions.
	Prompt string `json:"-"`
	// Source is "builtin" or the file the type was read from.
	Source string `json:"source"`
	// Project: the file is the project's (.weft/agents, .claude/agents
	// of the workspace or above). A project's type may name only a model
	// of the parent's provider, as the model may: a repository must not
	// send the conversation to a provider the user did not choose.
	Project bool `json:"project,omitempty"`
}

// Limits of agent files, which may come from any repository.
const (
	maxTypeFile        = 256 << 10
	maxTypeName        = 64
	maxTypeDescription = 2048
)

//go:embed agents/*.md
var builtinFiles embed.FS

// Builtin returns weft's own types: general, explore, plan, review and
// test, from the files shipped in the binary.
func Builtin() []Type {
	entries, err := builtinFiles.ReadDir("agents")
	if err != nil {
		panic(err) // embedded: cannot fail
	}
	var out []Type
	for _, e := range entries {
		b, err := builtinFiles.ReadFile("agents/" + e.Name())
		if err != nil {
			panic(err)
		}
		t, err := Parse(string(b), "builtin")
		if err != nil {
			panic(fmt.Sprintf("builtin agent %s: %v", e.Name(), err))
		}
		out = append(out, t)
	}
	return out
}

// Parse reads an agent file. source names it in errors and Type.Source;
// the file's base name (without .md) stands in for a missing name.
func Parse(text, source string) (Type, error) {
	meta, body, err := frontmatter.Parse(text)
	if err != nil {
		return Type{}, err
	}
	t := Type{Source: source, Prompt: strings.TrimSpace(body)}
	if t.Name, err = frontmatter.String(meta, "name"); err != nil {
		return Type{}, err
	}
	if t.Name == "" && source != "builtin" {
		t.Name = strings.TrimSuffix(filepath.Base(source), ".md")
	}
	if err := frontmatter.CheckName("agent", t.Name, maxTypeName); err != nil {
		return Type{}, err
	}
	if t.Description, err = frontmatter.String(meta, "description"); err != nil {
		return Type{}, err
	}
	// Claude Code's files often hold examples with escaped newlines in
	// the description; the listing shows it on one line.
	t.Description = strings.Join(strings.Fields(strings.ReplaceAll(t.Description, `\n`, "\n")), " ")
	if t.Description == "" {
		return Type{}, errors.New(`the front matter has no "description": the model picks agent types by their descriptions`)
	}
	if len(t.Description) > maxTypeDescription {
		t.Description = cutUTF8(t.Description, maxTypeDescription) + "..."
	}
	if t.Tools, err = toolList(meta, "tools"); err != nil {
		return Type{}, err
	}
	if t.DisallowedTools, err = toolList(meta, "disallowedTools"); err != nil {
		return Type{}, err
	}
	if t.Model, err = frontmatter.String(meta, "model"); err != nil {
		return Type{}, err
	}
	if t.Prompt == "" {
		return Type{}, errors.New("the file has no prompt after the front matter")
	}
	return t, nil
}

// claudeToolNames maps Claude Code tool names weft does not have to the
// weft tool that does the job, so that agent files written for Claude
// Code keep their meaning.
var claudeToolNames = map[string]string{
	"MultiEdit":    "Edit",
	"LS":           "Glob",
	"NotebookRead": "Read",
}

// toolList reads a tools field: a comma-separated string ("Read, Grep")
// or a YAML list. Absent, empty or "*" means nil: every tool. A
// permission spec after a name ("Bash(git diff:*)") is dropped: which
// calls run is the policy's to say, not the agent file's.
func toolList(meta map[string]any, key string) ([]string, error) {
	v, ok := meta[key]
	if !ok || v == nil {
		return nil, nil
	}
	var items []string
	switch x := v.(type) {
	case string:
		items = splitTools(x)
	case []any:
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("the front matter's %q must list tool names, not %T", key, e)
			}
			items = append(items, splitTools(s)...)
		}
	default:
		return nil, fmt.Errorf("the front matter's %q must be a comma-separated string or a list, not %T", key, v)
	}
	var out []string
	for _, s := range items {
		if s == "*" {
			return nil, nil
		}
		if i := strings.IndexByte(s, '('); i > 0 {
			s = strings.TrimSpace(s[:i])
		}
		if alias, ok := claudeToolNames[s]; ok {
			s = alias
		}
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// splitTools splits at commas outside parentheses ("Bash(git add:*,
// git commit:*)" is one entry).
func splitTools(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth <= 0 {
				out = append(out, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	return append(out, strings.TrimSpace(s[start:]))
}

// LoadConfig says where Load looks.
type LoadConfig struct {
	// Workspace: the project's agents are in .weft/agents and
	// .claude/agents of it and of its parents up to the repository root.
	Workspace string
	// Home: the user's are in ~/.weft/agents and ~/.claude/agents.
	Home string
	// Logger is told about files left out; nil discards.
	Logger *slog.Logger
}

// Load returns the builtin types and the user's and the project's agent
// files, by name. When two have one name, the project's wins over the
// user's and the user's over weft's own (so a file can redefine
// "explore"); nearer the workspace wins over further up, .weft over
// .claude. A file with a problem is left out with a warning; it never
// stops the others.
func Load(cfg LoadConfig) []Type {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	byName := map[string]Type{}
	var order []string
	put := func(t Type) {
		key := strings.ToLower(t.Name)
		if _, ok := byName[key]; !ok {
			order = append(order, key)
		}
		byName[key] = t
	}
	for _, t := range Builtin() {
		put(t)
	}
	// Lowest precedence first: later ones replace earlier ones.
	var roots []root
	if cfg.Home != "" {
		roots = append(roots, root{dir: filepath.Join(cfg.Home, ".claude", "agents")}, root{dir: filepath.Join(cfg.Home, ".weft", "agents")})
	}
	if cfg.Workspace != "" {
		dirs := projectDirs(cfg.Workspace, cfg.Home) // the repository root first
		top := dirs[0]
		if r, err := realpath.Resolve(top); err == nil {
			top = r
		}
		for _, d := range dirs {
			roots = append(roots, root{dir: filepath.Join(d, ".claude", "agents"), within: top}, root{dir: filepath.Join(d, ".weft", "agents"), within: top})
		}
	}
	for _, r := range roots {
		entries, err := os.ReadDir(r.dir)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				log.Warn("agent files not read", "dir", r.dir, "error", err)
			}
			continue
		}
		for _, e := range entries {
			if e.IsDir() || strings.HasPrefix(e.Name(), ".") || !strings.HasSuffix(e.Name(), ".md") {
				continue
			}
			p := filepath.Join(r.dir, e.Name())
			t, err := readType(p, r)
			if err != nil {
				log.Warn("agent file not loaded", "path", p, "problem", err.Error())
				continue
			}
			t.Project = r.within != ""
			put(t)
		}
	}
	out := make([]Type, 0, len(order))
	for _, k := range order {
		out = append(out, byName[k])
	}
	slices.SortStableFunc(out, func(a, b Type) int { return strings.Compare(a.Name, b.Name) })
	return out
}

type root struct {
	dir string
	// within, for the project's directories, is where a file must
	// resolve to: a repository must not pull a file from elsewhere on
	// the machine into a prompt through a link.
	within string
}

func readType(p string, r root) (Type, error) {
	if r.within != "" {
		if t, err := realpath.Resolve(p); err != nil || !realpath.Within(r.within, t) {
			return Type{}, fmt.Errorf("it links outside the project (%s); a project's agent files must be files of the project", r.within)
		}
	}
	// O_NONBLOCK: a FIFO in a file's place must not hang the start.
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return Type{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Type{}, err
	}
	if !fi.Mode().IsRegular() {
		return Type{}, errors.New("not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, maxTypeFile+1))
	if err != nil {
		return Type{}, err
	}
	if len(data) > maxTypeFile {
		return Type{}, fmt.Errorf("larger than %d KiB", maxTypeFile>>10)
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return Type{}, errors.New("a binary file, not text")
	}
	return Parse(strings.ToValidUTF8(string(data), "\uFFFD"), p)
}

// projectDirs lists the directories from the repository root (the
// nearest one holding .git) down to the workspace; outside a repository
// only the workspace itself, so that a shared directory above it (/tmp)
// cannot hold agent files for everyone below.
func projectDirs(workspace, home string) []string {
	ws := filepath.Clean(workspace)
	var walked []string
	for dir := ws; ; {
		walked = append(walked, dir)
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			slices.Reverse(walked)
			return walked
		}
		parent := filepath.Dir(dir)
		if parent == dir || parent == filepath.Dir(parent) || (home != "" && parent == filepath.Clean(home)) {
			return []string{ws}
		}
		dir = parent
	}
}

func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
