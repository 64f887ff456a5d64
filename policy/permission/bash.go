package permission

// This file matches rules against a Bash command as package shell
// analyzed it. Deny and ask rules apply when they MIGHT match: a word
// only known when the command runs, a glob, a command name that is a
// pattern, or code the analysis cannot see could be what the rule
// forbids, and deny wins over ask. Allow rules apply only when they
// match whatever those turn out to be.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/weft-run/weft/policy/shell"
)

// readRule reports whether r is about files read: Read with or without a
// glob.
func readRule(r Rule) bool {
	return (r.kind == kindPath && r.head == "Read") || (r.kind == kindName && r.head == "" && r.arg == "Read")
}

// bashAny reports whether a deny or ask rule might match any part of a
// Bash call: a command it runs, a file it writes or reads, or code the
// analysis cannot see, which might do any of these.
func (e *eval) bashAny(r Rule) (string, bool) {
	if e.toolLevel(r) && !writeRule(r) && !readRule(r) {
		return "this " + e.c.Tool + " call", true
	}
	if r.kind != kindCommand && !writeRule(r) && !readRule(r) {
		return "", false
	}
	if len(e.an.Opaque) > 0 {
		return "code this command runs that cannot be checked (" + e.an.Opaque[0] + ")", true
	}
	switch {
	case r.kind == kindCommand:
		for _, c := range e.an.Commands {
			if commandMatch(r, c, true) {
				return fmt.Sprintf("%q", c.Text), true
			}
			if commandMight(r, c) {
				return fmt.Sprintf("%q, which may run what the rule forbids", c.Text), true
			}
		}
	case writeRule(r):
		for _, w := range e.an.Writes {
			if e.pathMight(r, w) {
				return "writing " + w.Name, true
			}
		}
	case readRule(r):
		for _, p := range e.an.Reads {
			if e.pathMight(r, p) {
				return "reading " + p.Name, true
			}
		}
	}
	return "", false
}

func allLiteral(c shell.Command) bool {
	return !c.MoreArgs && !slices.ContainsFunc(c.Kinds, func(k shell.Kind) bool { return k != shell.Literal })
}

// commandMight reports whether a command rule might match c: for a
// command whose words are all known, whether it matches (the command
// name alone counts too, so /bin/rm is rm); otherwise whether some value
// of the unknown words would make it match.
func commandMight(r Rule, c shell.Command) bool {
	if allLiteral(c) {
		return commandMatch(r, c, true)
	}
	full, short := c.Pattern(false), c.Pattern(true)
	for _, spec := range specForms(r) {
		p := shell.WildcardPattern(spec)
		if p.Intersects(full) || p.Intersects(short) {
			return true
		}
	}
	return false
}

// specForms are the texts a command spec matches, as wildcard patterns:
// Bash(x:*) is "x" or "x *"; a trailing " *" also matches nothing.
func specForms(r Rule) []string {
	if r.prefix {
		return []string{r.arg, r.arg + " *"}
	}
	forms := []string{r.arg}
	if s, ok := strings.CutSuffix(r.arg, " *"); ok {
		forms = append(forms, s)
	}
	return forms
}

// unknownWord stands for a word only known when the command runs when an
// allow rule is matched: rules cannot contain it (control characters are
// refused), so only a * can match it, and a * that matches it matches
// anything in its place.
const unknownWord = "\x00"

// commandAllowed reports whether an allow rule covers c whatever its
// unknown words turn out to be.
func commandAllowed(r Rule, c shell.Command) bool {
	if r.kind != kindCommand {
		return false
	}
	args := slices.Clone(c.Args)
	for i := range args {
		if i < len(c.Kinds) && c.Kinds[i] == shell.Dynamic {
			args[i] = unknownWord
		}
	}
	if c.MoreArgs {
		args = append(args, unknownWord)
	}
	return specMatch(r.arg, r.prefix, strings.Join(args, " "))
}

// pathMight reports whether a Read, Edit or Write rule might match a path
// a Bash command reads or writes.
func (e *eval) pathMight(r Rule, p shell.Path) bool {
	if r.kind == kindName {
		return true
	}
	pat, ok := e.pattern(r)
	if !ok {
		return true
	}
	rule := shell.DoublestarPattern(pat).Below() // a rule on a directory covers what is inside
	if p.Kind == shell.Literal && !p.Unrooted {
		abs, ok := e.abs(p.Name)
		if !ok || processRelative(abs) || e.pathMatch(r, []string{abs}, false, false) != no {
			return true
		}
		return p.Tree && rule.Intersects(shell.LiteralPattern(abs).Below())
	}
	return rule.Intersects(e.bashPathPattern(p))
}

// bashPathPattern is the set of absolute paths a glob or unknown path may
// name. A glob's fixed leading directories are resolved like any path
// (~, the workspace, links); a wildcard cannot be followed through links,
// so a glob under /proc or /dev/fd may name anything.
func (e *eval) bashPathPattern(p shell.Path) shell.Pattern {
	if p.Kind != shell.Glob || p.Unrooted {
		return p.Pattern(e.c.Workspace, e.home)
	}
	dir, rest := shell.SplitGlob(p.Name)
	if dir == "" {
		dir = "."
	}
	abs, ok := e.abs(dir)
	if !ok || within(abs, "/proc") || within(abs, "/dev/fd") || abs == "/" && strings.HasPrefix(rest, "proc") {
		return shell.AnyPattern()
	}
	g := shell.GlobPattern(abs, rest)
	if p.Tree {
		return g.Below()
	}
	return g
}

// bashAll reports whether allow rules cover a Bash call: one rule for each
// command and each file it writes. Reads need no rule of their own.
func (e *eval) bashAll(rules []Rule) ([]Rule, bool) {
	if len(e.an.Commands) == 0 && len(e.an.Writes) == 0 {
		return nil, false
	}
	var used []Rule
	use := func(r Rule) {
		if !slices.Contains(used, r) {
			used = append(used, r)
		}
	}
	for _, c := range e.an.Commands {
		i := slices.IndexFunc(rules, func(r Rule) bool { return commandAllowed(r, c) })
		if i < 0 {
			return nil, false
		}
		use(rules[i])
	}
	for _, w := range e.an.Writes {
		if w.Kind != shell.Literal || w.Unrooted {
			return nil, false
		}
		p, ok := e.abs(w.Name)
		if !ok {
			return nil, false
		}
		i := slices.IndexFunc(rules, func(r Rule) bool {
			if !writeRule(r) {
				return false
			}
			return r.kind == kindName || e.pathMatch(r, []string{p}, false, true) == yes
		})
		if i < 0 {
			return nil, false
		}
		use(rules[i])
	}
	return used, true
}

// processRelative reports whether p names a file through a process's own
// magic links (/proc/self/cwd, /proc/<pid>/root, /dev/fd/N, /dev/stdin):
// in a Bash command they are the shell's, which weft cannot resolve from
// its own process (the shell's working directory and descriptors differ),
// so such a path may name any file.
func processRelative(p string) bool {
	for _, dir := range []string{"/dev/fd", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/proc/self", "/proc/thread-self"} {
		if within(p, dir) {
			return true
		}
	}
	rest, ok := strings.CutPrefix(p, "/proc/")
	if !ok {
		return false
	}
	pid, _, _ := strings.Cut(rest, "/")
	return pid != "" && strings.Trim(pid, "0123456789") == ""
}
