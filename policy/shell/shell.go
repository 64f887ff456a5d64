package shell

import (
	"bytes"
	"fmt"
	"path"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// Kind says how far the analysis pins a word down.
type Kind uint8

const (
	// Literal: exactly what the command receives.
	Literal Kind = iota
	// Glob: an unquoted pattern the shell replaces by the names of the
	// files it matches; the text is the pattern after quote removal.
	Glob
	// Dynamic: only known when the command runs (a parameter expansion, a
	// substitution, a name xargs or find fills in); the text is its
	// source.
	Dynamic
)

// Command is one simple command the script would run.
type Command struct {
	// Args are the command name and its arguments after quote removal and
	// brace expansion. An argument that depends on the environment (a
	// parameter expansion, a command substitution) keeps its source text,
	// without the surrounding double quotes: "$HOME/x" becomes $HOME/x.
	Args []string
	// Text is Args joined by single spaces: the canonical form permission
	// rules are matched against.
	Text string
	// Kinds says, for each of Args, whether it is Literal, a Glob or
	// Dynamic; see Pattern for what a rule might match.
	Kinds []Kind
	// MoreArgs is set when the command receives further arguments only
	// known when it runs: xargs appends the words it reads.
	MoreArgs bool
}

// Path is a file the script reads or writes.
type Path struct {
	// Name is the path as written (relative, absolute or starting with
	// ~); for a Dynamic path, its source text.
	Name string
	Kind Kind
	// Tree is set when the command reads everything below Name too
	// (grep -r, cp -r, tar).
	Tree bool
	// Unrooted is set for a relative path when the script changes
	// directory (cd, env -C, tar -C), so which directory it is relative
	// to is only known when it runs.
	Unrooted bool
}

// Analysis is what Analyze found in a script.
type Analysis struct {
	// Commands holds every simple command, wrappers seen through, in source
	// order. Assignments-only statements and declarations are not commands.
	Commands []Command
	// Writes holds the files output redirections (and tee, dd of=) write
	// to. Harmless pseudo-devices (/dev/null, /dev/stdout, ...) are left
	// out.
	Writes []Path
	// Reads holds the files the script reads: input redirections (<, <>,
	// $(<f)), the script a shell or source runs, and the file operands of
	// commands known to read files (cat, head, grep, cp, base64, ...).
	// Static analysis cannot see every read: a program can open any file
	// it likes.
	Reads []Path
	// Opaque says why the script runs code the analysis cannot see (a
	// script in a variable, a shell reading a pipe, arithmetic over a
	// value that may hold a command substitution): any command at all
	// might run there, so a deny rule might match it. Each entry is also
	// in Problems.
	Opaque []string
	// Problems says why something could not be resolved statically. When it
	// is not empty the analysis is incomplete and callers must ask a person.
	Problems []string

	// hazards are dangers visible only in the structure of the script
	// (curl | sh, fork bombs), which Commands alone cannot show.
	hazards []Danger
}

// WriteNames returns the names of the literal write targets.
func (a Analysis) WriteNames() []string {
	var out []string
	for _, w := range a.Writes {
		if w.Kind == Literal {
			out = append(out, w.Name)
		}
	}
	return out
}

// maxDepth bounds nested scripts (bash -c 'bash -c ...', eval, trap).
const maxDepth = 6

// maxArgs bounds the words one command may expand to, so a brace
// expansion like {1..99999} cannot blow up the analysis.
const maxArgs = 4096

// Analyze parses src as a Bash script and reports its commands, the files
// it reads and writes, and whatever could not be resolved. It never
// fails: a script that does not parse yields a Problem.
func Analyze(src string) (a Analysis) {
	z := &analyzer{seen: map[string]bool{}, stages: map[*syntax.Stmt]stageRef{}, vars: map[string]*variable{}, assoc: map[string]bool{}, memo: map[string]bool{}}
	defer func() {
		// The parser is third-party code; a bug there must not take the
		// permission check down with it, and an analysis cut short must
		// not look complete.
		if r := recover(); r != nil {
			z.opaque(fmt.Sprintf("the shell parser failed on this command (%v)", r))
			a = z.out
		}
	}()
	z.script(src, 0, toolFds())
	z.finish()
	return z.out
}

type analyzer struct {
	out   Analysis
	seen  map[string]bool // problems already reported
	stack []syntax.Node   // the path from the root of the current walk
	// base is what the script being walked inherits on its descriptors.
	base   fdTable
	pipes  []*pipeline
	stages map[*syntax.Stmt]stageRef
	// vars is what the script may store in each variable; checks run at
	// the end, when every assignment is known.
	vars     map[string]*variable
	assoc    map[string]bool // declared -A: subscripts are strings, not arithmetic
	memo     map[string]bool // answers of safe
	anyVars  bool            // code the analysis cannot see may set any variable
	checks   []func()
	readArgs []pendingRead
	// cd is set when the script changes directory, relWrite when it
	// writes to a relative path; cdTargets are the directories it changes
	// to, and cdUnknown is set when one cannot be known. globOpts is set
	// when it changes how globs match (dotglob, nocaseglob, GLOBIGNORE).
	cd, relWrite, globOpts, cdUnknown bool
	cdTargets                         []cdTarget
	// repeats is set while walking a script that may run many times or
	// at any time (a trap, an alias, a loop body around eval).
	repeats bool
}

// cdTarget is a directory cd changes to; repeats is set when the cd may
// run again and again (in a loop or a function), so a relative one can
// lead anywhere.
type cdTarget struct {
	dir     word
	repeats bool
}

type stageRef struct {
	pipe  *pipeline
	index int
}

// pipeline records what feeds what in one a | b | c.
type pipeline struct {
	// downloads and interprets hold the stage indexes of commands that fetch
	// from the network and of interpreters that run code from their stdin.
	downloads, interprets []int
	interpreter           string
}

// word is one argument after expansion.
type word struct {
	val  string
	kind Kind
	node *syntax.Word // nil for words taken apart from a literal script
}

func (w word) literal() bool { return w.kind == Literal }

// ctx is where a command sits in the script.
type ctx struct {
	stmt  *syntax.Stmt // the statement the command belongs to
	fds   fdTable      // its descriptors, redirections applied
	depth int
	// xargs is set for a command run by xargs, which appends arguments
	// it reads; its stdin is then empty unless xargs reads a file.
	xargs bool
}

func (z *analyzer) problem(msg string) {
	msg = oneLine(msg)
	if z.seen[msg] {
		return
	}
	z.seen[msg] = true
	z.out.Problems = append(z.out.Problems, msg)
}

// opaque records code the analysis cannot see: a Problem that a deny rule
// might match too.
func (z *analyzer) opaque(msg string) {
	msg = oneLine(msg)
	if z.seen["opaque:"+msg] {
		return
	}
	z.seen["opaque:"+msg] = true
	z.out.Opaque = append(z.out.Opaque, msg)
	z.problem(msg)
}

// later runs check once the whole script has been seen.
func (z *analyzer) later(check func()) { z.checks = append(z.checks, check) }

// oneLine keeps messages on one line whatever the script contained.
func oneLine(s string) string {
	return strings.NewReplacer("\n", `\n`, "\r", `\r`).Replace(s)
}

func (z *analyzer) hazard(s Severity, reason string) {
	z.out.hazards = append(z.out.hazards, Danger{Severity: s, Reason: reason})
}

// script parses and walks one script; depth counts nested scripts and
// base is what its descriptors are connected to.
func (z *analyzer) script(src string, depth int, base fdTable) {
	if depth > maxDepth {
		z.opaque(fmt.Sprintf("scripts are nested more than %d levels deep (bash -c, eval); cannot follow them", maxDepth))
		return
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		z.opaque(fmt.Sprintf("cannot parse the command: %v", err))
		return
	}
	savedStack, savedBase, savedRepeats := z.stack, z.base, z.repeats
	z.repeats = z.repeating() || base.rest.kind == srcUnknown
	z.stack, z.base = nil, execRedirected(f, base)
	defer func() { z.stack, z.base, z.repeats = savedStack, savedBase, savedRepeats }()
	syntax.Walk(f, func(n syntax.Node) bool {
		if n == nil {
			z.stack = z.stack[:len(z.stack)-1]
			return true
		}
		z.stack = append(z.stack, n)
		switch n := n.(type) {
		case *syntax.Stmt:
			z.stmt(n, depth)
		case *syntax.BinaryCmd:
			if isPipe(n) && !z.innerPipe() {
				p := &pipeline{}
				z.pipes = append(z.pipes, p)
				for i, s := range flattenPipe(n, nil) {
					z.stages[s] = stageRef{p, i}
				}
			}
		case *syntax.FuncDecl:
			z.funcDecl(n)
		default:
			z.evaluated(n)
		}
		return true
	})
}

// finish adds the conclusions that need the whole script.
func (z *analyzer) finish() {
	for i := 0; i < len(z.checks); i++ { // a check may queue more
		z.checks[i]()
	}
	z.resolveReads()
	if z.cd && z.relWrite {
		z.problem("the command changes directory and then writes to a relative path; cannot tell which file it writes")
	}
	dirs, known := z.workingDirs()
	z.out.Reads = z.rebase(z.out.Reads, dirs, known)
	z.out.Writes = z.rebase(z.out.Writes, dirs, known)
	for _, p := range z.pipes {
		if len(p.downloads) == 0 || len(p.interprets) == 0 {
			continue
		}
		if slices.Min(p.downloads) < slices.Max(p.interprets) {
			z.hazard(Dangerous, fmt.Sprintf("pipes a download into %s, which runs code nobody has read", p.interpreter))
		}
	}
}

// chdir records where cd, pushd and popd go. cd - and popd return to a
// directory the script was in before, which is already counted.
func (z *analyzer) chdir(name string, args []word) {
	z.cd = true
	spec := optSpec{"+LPe@", nil}
	if name != "cd" {
		spec = optSpec{"+n", nil}
	}
	p := spec.parse(args, 1)
	switch {
	case p.err != "":
		z.cdUnknown = true
	case name == "popd":
	case len(p.operands) == 0:
		if name == "cd" {
			z.cdTargets = append(z.cdTargets, cdTarget{word{val: "~"}, false})
		}
	default:
		d := p.operands[0]
		if d.literal() && (d.val == "-" || (name == "pushd" && len(d.val) > 1 && (d.val[0] == '+' || d.val[0] == '-') && isDigits(d.val[1:]))) {
			return
		}
		z.cdTargets = append(z.cdTargets, cdTarget{d, z.repeating()})
	}
}

// repeating reports whether the statement being walked may run more than
// once: in a loop, a function, or a script that repeats.
func (z *analyzer) repeating() bool {
	if z.repeats {
		return true
	}
	for _, n := range z.stack {
		switch n.(type) {
		case *syntax.ForClause, *syntax.WhileClause, *syntax.FuncDecl:
			return true
		}
	}
	return false
}

// maxDirs bounds the directories a script may be in (cd in a loop).
const maxDirs = 16

// workingDirs returns the directories the script may be in, relative to
// where it starts ("." is the start) or absolute, in no order; known is
// false when one cannot be told.
func (z *analyzer) workingDirs() ([]string, bool) {
	if z.cdUnknown {
		return nil, false
	}
	// In source order, each cd may or may not have run before the next.
	dirs := []string{"."}
	for _, t := range z.cdTargets {
		paths := z.readPaths(t.dir)
		var next []string
		for _, p := range paths {
			absolute := strings.HasPrefix(p.Name, "/") || p.Name == "~" || strings.HasPrefix(p.Name, "~/")
			if p.Kind != Literal || (t.repeats && !absolute) {
				return nil, false
			}
			for _, d := range dirs {
				n := joinDir(d, p.Name)
				if n == "" {
					return nil, false
				}
				next = append(next, n)
			}
		}
		for _, n := range next {
			if !slices.Contains(dirs, n) {
				if len(dirs) == maxDirs {
					return nil, false
				}
				dirs = append(dirs, n)
			}
		}
	}
	return dirs, true
}

// joinDir is where cd t leads from d; "" when it cannot be told (above ~).
func joinDir(d, t string) string {
	if strings.HasPrefix(t, "/") || t == "~" || strings.HasPrefix(t, "~/") {
		return path.Clean(t)
	}
	if strings.HasPrefix(t, "~") {
		return "" // ~user
	}
	j := path.Join(d, t)
	if strings.HasPrefix(d, "~") && !strings.HasPrefix(j, "~") {
		return ""
	}
	return j
}

// rebase resolves the relative paths against the directories the script
// may be in, and turns globs into unknowns when the script changed how
// globs match.
func (z *analyzer) rebase(ps []Path, dirs []string, known bool) []Path {
	var out []Path
	for _, p := range ps {
		if z.globOpts && p.Kind == Glob {
			p.Kind = Dynamic
		}
		rel := p.Kind != Dynamic && !p.Unrooted && !strings.HasPrefix(p.Name, "/") && !strings.HasPrefix(p.Name, "~")
		switch {
		case !rel:
			out = append(out, p)
		case !known:
			p.Unrooted = true
			out = append(out, p)
		default:
			for _, d := range dirs {
				q := p
				if d != "." {
					q.Name = path.Join(d, p.Name)
				}
				out = append(out, q)
			}
		}
	}
	return dedupe(out)
}

func dedupe(ps []Path) []Path {
	var out []Path
	for _, p := range ps {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

func isPipe(b *syntax.BinaryCmd) bool {
	return b.Op == syntax.Pipe || b.Op == syntax.PipeAll
}

// innerPipe reports whether the pipe BinaryCmd on top of the stack is an
// operand of an enclosing pipe (a | b | c nests as (a | b) | c).
func (z *analyzer) innerPipe() bool {
	n := len(z.stack)
	if n < 3 {
		return false
	}
	if _, ok := z.stack[n-2].(*syntax.Stmt); !ok {
		return false
	}
	outer, ok := z.stack[n-3].(*syntax.BinaryCmd)
	return ok && isPipe(outer)
}

func flattenPipe(b *syntax.BinaryCmd, out []*syntax.Stmt) []*syntax.Stmt {
	for _, s := range []*syntax.Stmt{b.X, b.Y} {
		if inner, ok := s.Cmd.(*syntax.BinaryCmd); ok && isPipe(inner) {
			out = flattenPipe(inner, out)
		} else {
			out = append(out, s)
		}
	}
	return out
}

// stmt handles a statement's redirections and, for a simple command, the
// command itself.
func (z *analyzer) stmt(s *syntax.Stmt, depth int) {
	for _, r := range s.Redirs {
		z.redirect(r)
	}
	call, ok := s.Cmd.(*syntax.CallExpr)
	if !ok || len(call.Args) == 0 {
		return
	}
	args := z.words(call.Args)
	if len(args) == 0 {
		return
	}
	z.command(args, ctx{stmt: s, fds: z.fdsAt(), depth: depth})
}

// redirect records the file a redirection reads or writes.
func (z *analyzer) redirect(r *syntax.Redirect) {
	switch r.Op {
	case syntax.RdrIn, syntax.RdrInOut:
		if onlyProcSubst(r.Word) {
			return // reads a pipe, not a file
		}
		z.readWord(r.Word, false)
		if r.Op == syntax.RdrIn {
			return
		}
	case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob,
		syntax.RdrAll, syntax.AppAll, syntax.RdrAllClob, syntax.AppAllClob:
	case syntax.DplOut:
		// >&2 and >&- duplicate or close descriptors; >&file writes a file.
		if lit := r.Word.Lit(); lit != "" && strings.Trim(lit, "0123456789-") == "" {
			return
		}
	default:
		return
	}
	if onlyProcSubst(r.Word) {
		return
	}
	ws := z.words([]*syntax.Word{r.Word})
	if len(ws) != 1 || ws[0].kind == Dynamic {
		z.problem(fmt.Sprintf("writes to %s, a path only known when the command runs", printWord(r.Word)))
		z.out.Writes = append(z.out.Writes, Path{Name: printWord(r.Word), Kind: Dynamic})
		return
	}
	z.write(ws[0])
}

func onlyProcSubst(w *syntax.Word) bool {
	if w == nil || len(w.Parts) != 1 {
		return false
	}
	_, ok := w.Parts[0].(*syntax.ProcSubst)
	return ok
}

// write records a write target.
func (z *analyzer) write(w word) {
	target := w.val
	if w.kind == Dynamic {
		z.problem(fmt.Sprintf("writes to %s, a path only known when the command runs", target))
		z.out.Writes = append(z.out.Writes, Path{Name: target, Kind: Dynamic})
		return
	}
	if harmlessDevice(target) {
		return
	}
	if w.kind == Glob || strings.ContainsAny(target, "*?[") {
		z.problem(fmt.Sprintf("writes to %q, a pattern the shell may expand to a file name", target))
		z.out.Writes = append(z.out.Writes, Path{Name: target, Kind: Glob})
		return
	}
	if target == "" {
		z.problem("writes to an empty file name")
		return
	}
	if !strings.HasPrefix(target, "/") && !strings.HasPrefix(target, "~") {
		z.relWrite = true
	}
	z.out.Writes = append(z.out.Writes, Path{Name: target})
}

// harmlessDevice reports pseudo-devices writing to which changes nothing.
func harmlessDevice(p string) bool {
	switch path.Clean(p) {
	case "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/zero", "/dev/full":
		return true
	}
	return strings.HasPrefix(p, "/dev/fd/") && strings.Trim(p[len("/dev/fd/"):], "0123456789") == ""
}

// funcDecl flags functions that call themselves in the background or
// through a pipe: the shape of a fork bomb.
func (z *analyzer) funcDecl(f *syntax.FuncDecl) {
	if f.Name == nil || f.Body == nil {
		return
	}
	name := f.Name.Value
	calls := func(s *syntax.Stmt) bool {
		c, ok := s.Cmd.(*syntax.CallExpr)
		return ok && len(c.Args) > 0 && c.Args[0].Lit() == name
	}
	bomb := false
	syntax.Walk(f.Body, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Stmt:
			if n.Background && calls(n) {
				bomb = true
			}
		case *syntax.BinaryCmd:
			if isPipe(n) && slices.ContainsFunc(flattenPipe(n, nil), calls) {
				bomb = true
			}
		}
		return !bomb
	})
	if bomb {
		z.hazard(Catastrophic, fmt.Sprintf("function %s calls itself in the background or through a pipe: a fork bomb that would exhaust the machine", name))
	}
}

// words expands command words: quotes removed, braces expanded. Words
// that depend on the environment keep their source text.
func (z *analyzer) words(ws []*syntax.Word) []word {
	var out []word
	for _, w := range ws {
		if !isStatic(w) {
			out = append(out, word{val: printWord(w), kind: Dynamic, node: w})
			continue
		}
		vals, err := literalFields(w, maxArgs+1-len(out))
		if err != nil {
			z.problem(fmt.Sprintf("cannot expand %s: %v", printWord(w), err))
			out = append(out, word{val: printWord(w), kind: Dynamic, node: w})
			continue
		}
		kind := Literal
		switch {
		case hasExtGlob(w):
			// @(rm), +(a|b): patterns this analysis does not match;
			// only with shopt -s extglob, and then anything may match.
			kind = Dynamic
		case hasGlob(w):
			kind = Glob
		}
		for _, v := range vals {
			out = append(out, word{val: v, kind: kind, node: w})
		}
		if len(out) > maxArgs {
			z.problem(fmt.Sprintf("a command expands to more than %d words; cannot check them all", maxArgs))
			return out[:maxArgs]
		}
	}
	return out
}

// isStatic reports whether w's value does not depend on the environment.
func isStatic(w *syntax.Word) bool {
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit, *syntax.SglQuoted:
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				if _, ok := q.(*syntax.Lit); !ok {
					return false
				}
			}
		default:
			return false
		}
	}
	return true
}

// hasGlob reports whether the shell would expand w as a pattern: an
// unquoted *, ? or [...] (a [ without its ] is literal).
func hasGlob(w *syntax.Word) bool {
	var unquoted strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			unquoted.WriteString(p.Value)
		case *syntax.ExtGlob:
			return true
		default:
			// A quoted part matches itself; keep a placeholder so a [
			// before it cannot pair with a ] after it.
			unquoted.WriteString("\\x")
		}
	}
	return hasWildcard(unquoted.String())
}

func hasExtGlob(w *syntax.Word) bool {
	return slices.ContainsFunc(w.Parts, func(p syntax.WordPart) bool {
		_, ok := p.(*syntax.ExtGlob)
		return ok
	})
}

// literalFields expands a static word into at most limit fields. A
// leading ~ is kept as written: which directory it names is for the
// caller to decide, not this process.
func literalFields(w *syntax.Word, limit int) ([]string, error) {
	parts := slices.Clone(w.Parts)
	prefix := ""
	if lit, ok := parts[0].(*syntax.Lit); ok && strings.HasPrefix(lit.Value, "~") {
		i := strings.IndexByte(lit.Value, '/')
		if i < 0 {
			i = len(lit.Value)
		}
		prefix = lit.Value[:i]
		parts[0] = &syntax.Lit{Value: lit.Value[i:]}
	}
	var fields []string
	for f, err := range expand.FieldsSeq(&expand.Config{}, &syntax.Word{Parts: parts}) {
		if err != nil {
			return nil, err
		}
		fields = append(fields, f)
		if len(fields) >= limit {
			break
		}
	}
	if prefix == "" {
		return fields, nil
	}
	if len(fields) == 0 {
		return []string{prefix}, nil
	}
	for i := range fields {
		fields[i] = prefix + fields[i]
	}
	return fields, nil
}

// literalText is a static word's value as one string, without brace
// expansion (assignments and here-strings do not expand braces).
func literalText(w *syntax.Word) (string, bool) {
	if w == nil {
		return "", true
	}
	if !isStatic(w) {
		return "", false
	}
	s, err := expand.Literal(&expand.Config{}, w)
	return s, err == nil
}

// printWord renders a word the way Command.Args keeps non-literal words:
// source text, without the quotes around double-quoted parts.
func printWord(w *syntax.Word) string {
	var b strings.Builder
	printParts(&b, w.Parts)
	return b.String()
}

func printParts(b *strings.Builder, parts []syntax.WordPart) {
	for _, p := range parts {
		switch p := p.(type) {
		case *syntax.Lit:
			b.WriteString(p.Value)
		case *syntax.SglQuoted:
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			printParts(b, p.Parts)
		default:
			var buf bytes.Buffer
			if err := syntax.NewPrinter().Print(&buf, p); err != nil {
				fmt.Fprintf(b, "<%T>", p)
				continue
			}
			b.Write(buf.Bytes())
		}
	}
}

// base is the command name without its directory: /usr/bin/rm is rm.
func base(name string) string {
	return path.Base(name)
}
