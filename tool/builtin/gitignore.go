package builtin

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

// .gitignore rules for the Go walkers (Grep's fallback and Glob), matched
// by go-git's gitignore package and applied with ripgrep's semantics, so
// that Grep's two backends agree:
//
//   - every .gitignore in the searched tree, and in its parent directories
//     up to the enclosing repository root, applies to the paths below it;
//     in a repository root (a directory holding .git) .git/info/exclude
//     applies too, below its .gitignore;
//   - the deepest directory with a matching rule decides, and within it
//     the last matching rule ("!" re-includes); rules of directories above
//     the nearest repository root do not apply inside it;
//   - git's global file (core.excludesFile) is not read: what a search
//     finds does not depend on the machine it runs on.
//
// go-git follows git's pattern syntax. Where ripgrep reads a line
// differently, the line is rewritten before parsing so that both backends
// see the same rules: "dir/**" matches what is inside dir but not dir
// itself (so "!dir/keep" can re-include a file), "[!a]" is a negated
// class, and "{a,b}" is an alternation (git reads braces literally;
// ripgrep, and so Grep with either backend, does not).
//
// go-git's Pattern.Match reports a match when the pattern matches the
// path or any of its parent directories, a shortcut that is only right
// for parents the walk has excluded: with "**/" and "!*.log" it would let
// a re-included directory e.log re-include everything below it, and the
// rules of directories above the search root would exclude everything
// below a root that is itself ignored (which ripgrep searches when asked
// to). A rule therefore counts only when it matches the path itself
// (ignoreRule.matches), as in git and ripgrep.

// ignoreLevel is the rules of one directory, linked to its parent's.
type ignoreLevel struct {
	dir    string
	rules  []ignoreRule // in file order: the last match wins
	isRepo bool         // dir holds .git: rules of outer directories stop here
	parent *ignoreLevel
}

// ignoreRule is one parsed line.
type ignoreRule struct {
	pat gitignore.Pattern
	// name is set for a line without "/" (but a trailing one), which
	// matches a file name at any depth. Otherwise the line is anchored to
	// its directory: segs is its number of path segments, deep is set when
	// one is "**", tail when it ends in "/**/*" and last is its last
	// segment.
	name, deep, tail bool
	segs             int
	last             string
}

// matches reports a match of rel itself (see the note at the top): the
// result of go-git's match, kept only when it is not through a parent.
func (r ignoreRule) matches(rel []string, isDir bool) gitignore.MatchResult {
	n := len(rel)
	if r.name {
		return r.pat.Match(rel[n-1:], isDir)
	}
	m := r.pat.Match(rel, isDir)
	switch {
	case m == gitignore.NoMatch:
	case !r.deep:
		// Without "**" each segment matches one element.
		if n != r.segs {
			return gitignore.NoMatch
		}
	case r.tail:
		// "dir/**/*" matches everything at any depth below dir.
	default:
		// "a/**/b": the path must end where the pattern does.
		if ok, _ := filepath.Match(r.last, rel[n-1]); !ok {
			return gitignore.NoMatch
		}
	}
	return m
}

// parseIgnore parses .gitignore text: comments and blank lines are
// skipped, trailing spaces trimmed unless escaped, "!" negates, a leading
// or inner "/" anchors a pattern to the file's directory, a trailing "/"
// matches directories only.
func parseIgnore(text string) []ignoreRule {
	var rules []ignoreRule
	for line := range strings.SplitSeq(text, "\n") {
		line = strings.TrimSuffix(line, "\r")
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		if strings.HasSuffix(line, "/**") {
			line += "/*"
		}
		line = strings.ReplaceAll(line, "[!", "[^")
		for _, l := range expandBraces(line) {
			rules = append(rules, newIgnoreRule(l))
		}
	}
	return rules
}

// newIgnoreRule parses one line, as go-git does, and notes its shape.
func newIgnoreRule(line string) ignoreRule {
	r := ignoreRule{pat: gitignore.ParsePattern(line, nil)}
	body := strings.TrimPrefix(line, "!")
	if !strings.HasSuffix(body, "\\ ") {
		body = strings.TrimRight(body, " ")
	}
	body = strings.TrimSuffix(body, "/")
	if !strings.Contains(body, "/") {
		r.name = true
		return r
	}
	segs := strings.Split(strings.TrimPrefix(body, "/"), "/")
	r.segs, r.last = len(segs), segs[len(segs)-1]
	for _, s := range segs {
		r.deep = r.deep || strings.Contains(s, "**")
	}
	r.tail = strings.HasSuffix(body, "/**/*")
	return r
}

// expandBraces expands the first {a,b,...} group of s (and, recursively,
// what follows), as ripgrep's globs do; a brace group without a comma, an
// unclosed brace and an escaped one are literal.
func expandBraces(s string) []string {
	open, depth := -1, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '{':
			if depth == 0 {
				open = i
			}
			depth++
		case '}':
			if depth == 0 {
				continue
			}
			if depth--; depth > 0 {
				continue
			}
			alts := braceAlternatives(s[open+1 : i])
			if len(alts) < 2 {
				continue
			}
			var out []string
			for _, a := range alts {
				out = append(out, expandBraces(s[:open]+a+s[i+1:])...)
			}
			return out
		}
	}
	return []string{s}
}

// braceAlternatives splits the inside of a brace group at its top-level
// commas.
func braceAlternatives(s string) []string {
	var alts []string
	start, depth := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '{':
			depth++
		case '}':
			depth--
		case ',':
			if depth == 0 {
				alts = append(alts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(alts, s[start:])
}

// enterDir returns the rules in force inside dir, given its entries.
func enterDir(dir string, entries []os.DirEntry, parent *ignoreLevel) *ignoreLevel {
	lvl := &ignoreLevel{dir: dir, parent: parent}
	var exclude, local []ignoreRule
	for _, e := range entries {
		switch e.Name() {
		case ".git":
			lvl.isRepo = true
			if e.IsDir() {
				if data, err := os.ReadFile(filepath.Join(dir, ".git", "info", "exclude")); err == nil {
					exclude = parseIgnore(string(data))
				}
			}
		case ".gitignore":
			if data, err := os.ReadFile(filepath.Join(dir, ".gitignore")); err == nil {
				local = parseIgnore(string(data))
			}
		}
	}
	if !lvl.isRepo && local == nil && exclude == nil {
		return parent
	}
	lvl.rules = append(exclude, local...)
	return lvl
}

// parentIgnores loads the rules of root's ancestors, which apply to a
// search below them.
func parentIgnores(root string) *ignoreLevel {
	var dirs []string
	for d := filepath.Dir(root); d != root; d = filepath.Dir(d) {
		dirs = append(dirs, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	var lvl *ignoreLevel
	for i := len(dirs) - 1; i >= 0; i-- {
		lvl = enterDir(dirs[i], ignoreEntries(dirs[i]), lvl)
	}
	return lvl
}

// ignoreEntries returns the entries of dir that hold ignore rules (.git,
// .gitignore), without reading the whole directory.
func ignoreEntries(dir string) []os.DirEntry {
	var entries []os.DirEntry
	for _, name := range []string{".git", ".gitignore"} {
		if fi, err := os.Lstat(filepath.Join(dir, name)); err == nil {
			entries = append(entries, ignoreDirEntry{fi})
		}
	}
	return entries
}

type ignoreDirEntry struct{ fi os.FileInfo }

func (e ignoreDirEntry) Name() string               { return e.fi.Name() }
func (e ignoreDirEntry) IsDir() bool                { return e.fi.IsDir() }
func (e ignoreDirEntry) Type() os.FileMode          { return e.fi.Mode().Type() }
func (e ignoreDirEntry) Info() (os.FileInfo, error) { return e.fi, nil }

// match says whether the rules exclude p (gitignore.Exclude), re-include
// it (gitignore.Include) or say nothing (gitignore.NoMatch).
func (l *ignoreLevel) match(p string, isDir bool) gitignore.MatchResult {
	for ; l != nil; l = l.parent {
		rel := strings.Split(filepath.ToSlash(strings.TrimPrefix(strings.TrimPrefix(p, l.dir), string(filepath.Separator))), "/")
		for i := len(l.rules) - 1; i >= 0; i-- {
			if r := l.rules[i].matches(rel, isDir); r != gitignore.NoMatch {
				return r
			}
		}
		if l.isRepo {
			return gitignore.NoMatch
		}
	}
	return gitignore.NoMatch
}

// ignored reports whether the rules exclude p.
func (l *ignoreLevel) ignored(p string, isDir bool) bool {
	return l.match(p, isDir) == gitignore.Exclude
}

// skip says whether Grep's walk leaves out the entry p (named name). As in
// ripgrep, a hidden entry is skipped unless a rule re-includes it.
func (l *ignoreLevel) skip(p, name string, isDir bool) bool {
	switch l.match(p, isDir) {
	case gitignore.Exclude:
		return true
	case gitignore.Include:
		return false
	}
	return strings.HasPrefix(name, ".")
}
