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
}

// Analysis is what Analyze found in a script.
type Analysis struct {
	// Commands holds every simple command, wrappers seen through, in source
	// order. Assignments-only statements and declarations are not commands.
	Commands []Command
	// Writes holds the files output redirections (and tee, dd of=) write
	// to, as written (relative, absolute or starting with ~). Harmless
	// pseudo-devices (/dev/null, /dev/stdout, ...) are left out.
	Writes []string
	// Problems says why something could not be resolved statically. When it
	// is not empty the analysis is incomplete and callers must ask a person.
	Problems []string

	// hazards are dangers visible only in the structure of the script
	// (curl | sh, fork bombs), which Commands alone cannot show.
	hazards []Danger
}

// maxDepth bounds nested scripts (bash -c 'bash -c ...', eval, trap).
const maxDepth = 6

// maxArgs bounds the words one command may expand to, so a brace
// expansion like {1..99999} cannot blow up the analysis.
const maxArgs = 4096

// Analyze parses src as a Bash script and reports its commands, writes and
// whatever could not be resolved. It never fails: a script that does not
// parse yields a Problem.
func Analyze(src string) (a Analysis) {
	z := &analyzer{seen: map[string]bool{}, stages: map[*syntax.Stmt]stageRef{}}
	defer func() {
		// The parser is third-party code; a bug there must not take the
		// permission check down with it, and an analysis cut short must
		// not look complete.
		if r := recover(); r != nil {
			z.problem(fmt.Sprintf("the shell parser failed on this command (%v)", r))
			a = z.out
		}
	}()
	z.script(src, 0)
	z.finish()
	return z.out
}

type analyzer struct {
	out   Analysis
	seen  map[string]bool // problems already reported
	stack []syntax.Node   // the path from the root of the current walk
	pipes []*pipeline
	// stages maps every statement that is a pipeline stage to its place;
	// around is the stack of stages (nil: a new context) around the walk.
	stages map[*syntax.Stmt]stageRef
	around []*stageRef
	// cd is set when the script changes directory, which makes relative
	// write targets unknowable; relWrite when it writes to one.
	cd, relWrite bool
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
	val    string
	static bool         // val is exactly what the command receives
	node   *syntax.Word // nil for words taken apart from a literal script
}

// ctx is where a command sits in the script.
type ctx struct {
	stmt  *syntax.Stmt // the statement the command belongs to, for redirections
	pipe  *pipeline    // the pipeline it is a stage of, if any
	stage int
	depth int
	// xargs is set for a command run by xargs, whose arguments come from
	// xargs's input.
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

// oneLine keeps messages on one line whatever the script contained.
func oneLine(s string) string {
	return strings.NewReplacer("\n", `\n`, "\r", `\r`).Replace(s)
}

func (z *analyzer) hazard(s Severity, reason string) {
	z.out.hazards = append(z.out.hazards, Danger{Severity: s, Reason: reason})
}

// script parses and walks one script; depth counts nested scripts.
func (z *analyzer) script(src string, depth int) {
	if depth > maxDepth {
		z.problem(fmt.Sprintf("scripts are nested more than %d levels deep (bash -c, eval); cannot follow them", maxDepth))
		return
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		z.problem(fmt.Sprintf("cannot parse the command: %v", err))
		return
	}
	savedStack, savedCtx := z.stack, z.around
	z.stack, z.around = nil, nil
	defer func() { z.stack, z.around = savedStack, savedCtx }()
	syntax.Walk(f, func(n syntax.Node) bool {
		if n == nil {
			if _, ok := z.context(z.stack[len(z.stack)-1]); ok {
				z.around = z.around[:len(z.around)-1]
			}
			z.stack = z.stack[:len(z.stack)-1]
			return true
		}
		z.stack = append(z.stack, n)
		if ref, ok := z.context(n); ok {
			z.around = append(z.around, ref)
		}
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
		case *syntax.DeclClause:
			z.decl(n)
		}
		return true
	})
}

// finish adds the conclusions that need the whole script.
func (z *analyzer) finish() {
	if z.cd && z.relWrite {
		z.problem("the command changes directory and then writes to a relative path; cannot tell which file it writes")
	}
	for _, p := range z.pipes {
		if len(p.downloads) == 0 || len(p.interprets) == 0 {
			continue
		}
		if slices.Min(p.downloads) < slices.Max(p.interprets) {
			z.hazard(Dangerous, fmt.Sprintf("pipes a download into %s, which runs code nobody has read", p.interpreter))
		}
	}
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

// stage is the pipeline stage the statement being walked belongs to: the
// nearest enclosing statement that is a stage. A command or process
// substitution, or a function body, starts a new context (a nil entry):
// what runs inside it does not read the pipe.
func (z *analyzer) stage() (*pipeline, int) {
	if len(z.around) == 0 || z.around[len(z.around)-1] == nil {
		return nil, 0
	}
	ref := z.around[len(z.around)-1]
	return ref.pipe, ref.index
}

// context returns the entry n pushes on the stage context, if any.
func (z *analyzer) context(n syntax.Node) (*stageRef, bool) {
	switch n := n.(type) {
	case *syntax.CmdSubst, *syntax.ProcSubst, *syntax.FuncDecl:
		return nil, true
	case *syntax.Stmt:
		if ref, ok := z.stages[n]; ok {
			return &ref, true
		}
	}
	return nil, false
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
	if !ok {
		return
	}
	for _, as := range call.Assigns {
		if as.Name != nil {
			z.assignName(as.Name.Value)
		}
	}
	if len(call.Args) == 0 {
		return
	}
	args := z.words(call.Args)
	if len(args) == 0 {
		return
	}
	p, idx := z.stage()
	z.command(args, ctx{stmt: s, pipe: p, stage: idx, depth: depth})
}

// redirect records a redirection that writes to a file.
func (z *analyzer) redirect(r *syntax.Redirect) {
	switch r.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrClob, syntax.AppClob,
		syntax.RdrAll, syntax.AppAll, syntax.RdrAllClob, syntax.AppAllClob, syntax.RdrInOut:
	case syntax.DplOut:
		// >&2 and >&- duplicate or close descriptors; >&file writes a file.
		if lit := r.Word.Lit(); lit != "" && strings.Trim(lit, "0123456789-") == "" {
			return
		}
	default:
		return
	}
	ws := z.words([]*syntax.Word{r.Word})
	if len(ws) != 1 || !ws[0].static {
		z.problem(fmt.Sprintf("writes to %s, a path only known when the command runs", printWord(r.Word)))
		return
	}
	z.write(ws[0].val)
}

// write records a write target.
func (z *analyzer) write(target string) {
	if harmlessDevice(target) {
		return
	}
	if strings.ContainsAny(target, "*?[") {
		z.problem(fmt.Sprintf("writes to %q, a pattern the shell may expand to a file name", target))
		return
	}
	if target == "" {
		z.problem("writes to an empty file name")
		return
	}
	if !strings.HasPrefix(target, "/") && !strings.HasPrefix(target, "~") {
		z.relWrite = true
	}
	z.out.Writes = append(z.out.Writes, target)
}

// harmlessDevice reports pseudo-devices writing to which changes nothing.
func harmlessDevice(p string) bool {
	switch path.Clean(p) {
	case "/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "/dev/zero", "/dev/full":
		return true
	}
	return strings.HasPrefix(p, "/dev/fd/") && strings.Trim(p[len("/dev/fd/"):], "0123456789") == ""
}

// riskyVars are variables whose value changes what later commands run or
// load, so setting one makes the rest of the script unknowable.
var riskyVars = map[string]bool{
	"PATH": true, "LD_PRELOAD": true, "LD_LIBRARY_PATH": true, "LD_AUDIT": true,
	"DYLD_INSERT_LIBRARIES": true, "DYLD_LIBRARY_PATH": true, "BASH_ENV": true, "ENV": true,
	"SHELLOPTS": true, "BASHOPTS": true, "PROMPT_COMMAND": true, "PS4": true, "IFS": true,
	"GIT_SSH": true, "GIT_SSH_COMMAND": true, "GIT_EXEC_PATH": true, "GIT_EXTERNAL_DIFF": true,
	"GIT_PAGER": true, "GIT_EDITOR": true, "GIT_ASKPASS": true, "GIT_CONFIG": true,
	"GIT_CONFIG_GLOBAL": true, "GIT_CONFIG_SYSTEM": true, "GIT_CONFIG_PARAMETERS": true,
	"GIT_CONFIG_COUNT": true, "GIT_PROXY_COMMAND": true, "PAGER": true, "EDITOR": true,
	"VISUAL": true, "NODE_OPTIONS": true, "PYTHONSTARTUP": true, "PYTHONPATH": true,
	"PERL5OPT": true, "PERL5LIB": true, "RUBYOPT": true, "BROWSER": true,
}

func (z *analyzer) assignName(name string) {
	if riskyVars[name] || strings.HasPrefix(name, "GIT_CONFIG_KEY_") || strings.HasPrefix(name, "GIT_CONFIG_VALUE_") {
		z.problem(fmt.Sprintf("sets %s, which changes what later commands run", name))
	}
}

// decl checks declare/export/local/readonly: not commands, but they assign.
func (z *analyzer) decl(d *syntax.DeclClause) {
	for _, as := range d.Args {
		if as.Name != nil {
			if !as.Naked {
				z.assignName(as.Name.Value)
			}
			continue
		}
		if as.Value == nil {
			continue
		}
		ws := z.words([]*syntax.Word{as.Value})
		for _, w := range ws {
			if !w.static {
				z.problem(fmt.Sprintf("%s %s assigns a variable only known when it runs", d.Variant.Value, w.val))
				continue
			}
			if name, _, ok := strings.Cut(w.val, "="); ok {
				z.assignName(name)
			}
		}
	}
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
			out = append(out, word{val: printWord(w), node: w})
			continue
		}
		vals, err := literalFields(w, maxArgs+1-len(out))
		if err != nil {
			z.problem(fmt.Sprintf("cannot expand %s: %v", printWord(w), err))
			out = append(out, word{val: printWord(w), node: w})
			continue
		}
		for _, v := range vals {
			out = append(out, word{val: v, static: true, node: w})
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
