package prompt

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/weft-run/weft/internal/realpath"
)

// Default limits of the project instructions. Every byte goes into every
// model call (cached, but counted against the context window), so a
// generated 500 KB AGENTS.md must not take the window over.
const (
	DefaultMaxInstructionFile  = 32 << 10 // per file
	DefaultMaxInstructionTotal = 64 << 10 // all files together
)

// minInstructionPart is the smallest piece of a file worth including when
// the total budget runs out in the middle of it.
const minInstructionPart = 1 << 10

// instructionNames are read in every directory, in this order, so that
// AGENTS.md (weft's own and the tool-neutral name) comes after, and wins
// over, CLAUDE.md.
var instructionNames = []string{"CLAUDE.md", "AGENTS.md"}

// InstructionFile is one file the instructions were read from.
type InstructionFile struct {
	// Path is where the file is; Shown is how the prompt names it ("~/"
	// for the home directory).
	Path, Shown string
	// User marks the user's own files (~/.claude/CLAUDE.md,
	// ~/.weft/AGENTS.md), as against the project's.
	User bool
	// Size is the file's size; Included how many of its bytes made it
	// into the prompt (less when a limit cut it, 0 when it was left out).
	Size, Included int
}

// instructions finds and reads AGENTS.md and CLAUDE.md files, re-reading
// a file only when its size or modification time changed.
type instructions struct {
	workspace, home    string
	maxFile, maxTotal  int
	log                *slog.Logger
	mu                 sync.Mutex
	cache              map[string]readFile // by path
	warned             map[string]string   // path -> the problem last logged
	lastText, lastRoot string
}

type readFile struct {
	target string
	size   int64
	mtime  time.Time
	text   string // "" with problem set when unusable
	cut    bool   // text is the first maxFile bytes only
	// problem says why the file is not used; logged once.
	problem string
}

func newInstructions(workspace, home string, maxFile, maxTotal int, log *slog.Logger) *instructions {
	if maxFile <= 0 {
		maxFile = DefaultMaxInstructionFile
	}
	if maxTotal <= 0 {
		maxTotal = DefaultMaxInstructionTotal
	}
	return &instructions{workspace: workspace, home: home, maxFile: maxFile, maxTotal: maxTotal, log: log,
		cache: map[string]readFile{}, warned: map[string]string{}}
}

// projectDirs returns the directories whose instruction files belong to
// the project, outermost first, and the repository root ("" when none).
// They run from the repository that holds the workspace down to the
// workspace; outside a repository, only the workspace counts. The walk
// never reaches the home directory or the filesystem root: files there
// are not the project's, and a shared directory above the workspace
// (/tmp) could hold anyone's AGENTS.md.
func projectDirs(workspace, home string) (dirs []string, root string) {
	ws := filepath.Clean(workspace)
	dir := ws
	var walked []string
	for {
		walked = append(walked, dir)
		if _, err := os.Lstat(filepath.Join(dir, ".git")); err == nil {
			root = dir
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir || parent == filepath.Dir(parent) || (home != "" && parent == filepath.Clean(home)) {
			break
		}
		dir = parent
	}
	if root == "" {
		return []string{ws}, ""
	}
	for i := len(walked) - 1; i >= 0; i-- {
		dirs = append(dirs, walked[i])
	}
	return dirs, root
}

// candidate is a file that may hold instructions.
type candidate struct {
	path string
	user bool
	// within, for project files, is the directory a symlinked file must
	// resolve inside: a repository must not be able to pull
	// ~/.ssh/id_ed25519 into the prompt through AGENTS.md -> ../../...
	within string
}

func (in *instructions) candidates() ([]candidate, string) {
	var cs []candidate
	if in.home != "" {
		cs = append(cs,
			candidate{path: filepath.Join(in.home, ".claude", "CLAUDE.md"), user: true},
			candidate{path: filepath.Join(in.home, ".weft", "AGENTS.md"), user: true})
	}
	if in.workspace == "" {
		return cs, ""
	}
	dirs, root := projectDirs(in.workspace, in.home)
	top := dirs[0]
	if r, err := realpath.Resolve(top); err == nil {
		top = r
	}
	for _, d := range dirs {
		for _, name := range instructionNames {
			cs = append(cs, candidate{path: filepath.Join(d, name), within: top})
		}
	}
	return cs, root
}

// load returns the instructions text (capped, with markers where limits
// cut), the repository root and the files it came from.
func (in *instructions) load() (text, root string, files []InstructionFile) {
	cs, root := in.candidates()
	in.mu.Lock()
	defer in.mu.Unlock()
	type part struct {
		InstructionFile
		text string
		cut  bool
	}
	var parts []part
	seenTarget := map[string]bool{}
	seenText := map[string]bool{}
	for _, c := range cs {
		rf, ok := in.read(c)
		if !ok {
			continue
		}
		// CLAUDE.md is often a link to, or a copy of, AGENTS.md: once is
		// enough.
		if seenTarget[rf.target] || seenText[rf.text] {
			continue
		}
		seenTarget[rf.target], seenText[rf.text] = true, true
		parts = append(parts, part{InstructionFile: InstructionFile{Path: c.path, Shown: in.shown(c), User: c.user, Size: int(rf.size)},
			text: rf.text, cut: rf.cut})
	}
	// The total budget goes to the files nearest the workspace first:
	// they are the most specific, and they win where files disagree.
	budget := in.maxTotal
	bodies := make([]string, len(parts))
	for i := len(parts) - 1; i >= 0; i-- {
		p := &parts[i]
		body := p.text
		switch {
		case len(body) <= budget:
		case budget >= minInstructionPart:
			body = cutText(body, budget)
			p.Included = len(body)
			bodies[i] = body + fmt.Sprintf("\n[weft: the rest of %s was cut here: %d of its %d bytes are included, because project instructions are limited to %d bytes in all]",
				p.Shown, len(body), p.Size, in.maxTotal)
			budget = 0
			continue
		default:
			bodies[i] = fmt.Sprintf("[weft: %s (%d bytes) was left out: project instructions are limited to %d bytes in all, and the files nearer the working directory came first]",
				p.Shown, p.Size, in.maxTotal)
			continue
		}
		p.Included = len(body)
		if p.cut {
			body += fmt.Sprintf("\n[weft: the rest of %s was cut here: %d of its %d bytes are included, because one instructions file is limited to %d bytes]",
				p.Shown, len(body), p.Size, in.maxFile)
		}
		bodies[i] = body
		budget -= len(body)
	}
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			b.WriteString("\n\n")
		}
		scope := ""
		if p.User {
			scope = " (the user's own instructions)"
		}
		b.WriteString("## " + p.Shown + scope + "\n\n" + bodies[i])
		files = append(files, p.InstructionFile)
	}
	return b.String(), root, files
}

// read returns the file's usable text, from the cache while its size and
// modification time are unchanged. ok is false when there is no file or
// it cannot be used (the reason is logged once).
func (in *instructions) read(c candidate) (readFile, bool) {
	fi, err := os.Lstat(c.path)
	if err != nil {
		delete(in.cache, c.path)
		return readFile{}, false
	}
	target := c.path
	if fi.Mode()&fs.ModeSymlink != 0 {
		if target, err = realpath.Resolve(c.path); err != nil {
			in.warn(c.path, "cannot follow the link: "+err.Error())
			return readFile{}, false
		}
		if c.within != "" && !realpath.Within(c.within, target) {
			in.warn(c.path, fmt.Sprintf("it links to %s, outside the project (%s); project instructions must be files of the project", target, c.within))
			return readFile{}, false
		}
		if fi, err = os.Stat(target); err != nil {
			in.warn(c.path, err.Error())
			return readFile{}, false
		}
	}
	if !fi.Mode().IsRegular() {
		in.warn(c.path, "not a regular file")
		return readFile{}, false
	}
	if rf, ok := in.cache[c.path]; ok && rf.target == target && rf.size == fi.Size() && rf.mtime.Equal(fi.ModTime()) {
		return rf, rf.problem == ""
	}
	rf := readFile{target: target, size: fi.Size(), mtime: fi.ModTime()}
	rf.text, rf.cut, err = readCapped(target, in.maxFile)
	if err != nil {
		rf.problem = err.Error()
		in.warn(c.path, rf.problem)
	} else {
		delete(in.warned, c.path)
	}
	in.cache[c.path] = rf
	return rf, rf.problem == "" && rf.text != ""
}

func (in *instructions) warn(path, problem string) {
	if in.warned[path] == problem {
		return
	}
	in.warned[path] = problem
	if in.log != nil {
		in.log.Warn("instructions file not used", "path", path, "problem", problem)
	}
}

// shown is how the prompt names a file: the user's own as ~/..., the
// project's by their full path (which Read takes as it is).
func (in *instructions) shown(c candidate) string {
	p := c.path
	if c.user && in.home != "" {
		if rel, err := filepath.Rel(in.home, p); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
			return "~/" + filepath.ToSlash(rel)
		}
	}
	return p
}

// readCapped reads up to max bytes of the text file at p. It opens without
// blocking, so that a FIFO put in place of the file cannot hang the agent,
// and refuses what is not a regular text file.
func readCapped(p string, max int) (text string, cut bool, err error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", false, err
	}
	if !fi.Mode().IsRegular() {
		return "", false, errors.New("not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, int64(max)+1))
	if err != nil {
		return "", false, err
	}
	if bytes.IndexByte(data, 0) >= 0 {
		return "", false, errors.New("a binary file, not text")
	}
	s := string(data)
	if len(data) > max {
		s, cut = cutText(s, max), true
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.TrimSpace(s), cut, nil
}

// cutText shortens s to at most n bytes, at the last line break in the
// second half when there is one, and never inside a UTF-8 sequence.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	// Drop a rune the cut split.
	for i := len(s) - 1; i >= 0 && i >= len(s)-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			if !utf8.FullRuneInString(s[i:]) {
				s = s[:i]
			}
			break
		}
	}
	if i := strings.LastIndexByte(s, '\n'); i >= n/2 {
		s = s[:i]
	}
	return strings.TrimRight(s, " \t\r\n")
}
