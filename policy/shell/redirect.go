package shell

// This file models what each file descriptor of a command is connected
// to, the way bash sets them up: a pipeline stage reads the pipe on fd 0,
// then the enclosing compound commands' redirections and the command's
// own apply left to right, so the LAST redirection of a descriptor wins;
// <&N copies descriptor N, <&- closes, N<... changes descriptor N only.
// A shell (or source) that reads its script from fd 0 or /dev/fd/N runs
// whatever that descriptor holds: a literal here-document is analyzed,
// a file is a script file like an argument, and anything else (a pipe, a
// descriptor set where the analysis cannot follow) is code nobody can see.

import (
	"fmt"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

type sourceKind uint8

const (
	srcEmpty    sourceKind = iota // the Bash tool's stdin: nothing to read
	srcText                       // a literal here-document or here-string
	srcFile                       // a file
	srcPipe                       // the previous stage of a pipeline
	srcOutput                     // an output: reading it yields nothing a script chose
	srcClosed                     // closed
	srcAnalyzed                   // the rest of a script already analyzed (bash <<EOF ... bash ... EOF)
	srcUnknown                    // only known when it runs
)

// source is what one descriptor is connected to.
type source struct {
	kind sourceKind
	text string // srcText: the script; srcUnknown: why it is unknown
	file word   // srcFile
	pipe *stageRef
}

// fdTable maps descriptors to their sources; descriptors not in it are
// "other": unknown unless the table says it was built from nothing.
type fdTable struct {
	fds map[int]source
	// rest is what every descriptor not in fds is.
	rest source
}

// toolFds is what the Bash tool gives a command: empty stdin, outputs it
// collects, and no other descriptor.
func toolFds() fdTable {
	return fdTable{fds: map[int]source{
		0: {kind: srcEmpty},
		1: {kind: srcOutput},
		2: {kind: srcOutput},
	}, rest: source{kind: srcClosed}}
}

// unknownFds is the table of code that runs at a time the analysis cannot
// place (a trap, a function body, an alias).
func unknownFds(why string) fdTable {
	return fdTable{fds: map[int]source{}, rest: source{kind: srcUnknown, text: why}}
}

func (t fdTable) get(fd int) source {
	if s, ok := t.fds[fd]; ok {
		return s
	}
	return t.rest
}

func (t fdTable) clone() fdTable {
	c := fdTable{fds: make(map[int]source, len(t.fds)), rest: t.rest}
	for k, v := range t.fds {
		c.fds[k] = v
	}
	return c
}

func (t fdTable) set(fd int, s source) { t.fds[fd] = s }

// redirFds returns the descriptors a redirection changes and, for a
// duplication, the one it copies (-1 otherwise). named is set for
// {var}<file, which opens a new descriptor and changes none we track.
func redirFds(r *syntax.Redirect) (fds []int, from int, named bool) {
	from = -1
	fd := 1
	switch r.Op {
	case syntax.RdrIn, syntax.RdrInOut, syntax.DplIn, syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
		fd = 0
	}
	if r.N != nil {
		n, err := strconv.Atoi(r.N.Value)
		if err != nil {
			return nil, -1, true
		}
		fd = n
	}
	switch r.Op {
	case syntax.RdrAll, syntax.AppAll, syntax.RdrAllClob, syntax.AppAllClob:
		return []int{1, 2}, -1, false
	case syntax.DplIn, syntax.DplOut:
		lit := r.Word.Lit()
		if n, err := strconv.Atoi(strings.TrimSuffix(lit, "-")); err == nil && lit != "" {
			if strings.HasSuffix(lit, "-") {
				return []int{fd, n}, n, false // N>&M-: move M to N
			}
			return []int{fd}, n, false
		}
		if r.Op == syntax.DplOut && r.N == nil && lit != "-" {
			return []int{1, 2}, -1, false // >&file is &>file
		}
	}
	return []int{fd}, from, false
}

// apply performs a statement's redirections on t, left to right.
func (z *analyzer) apply(t fdTable, redirs []*syntax.Redirect) {
	for _, r := range redirs {
		fds, from, named := redirFds(r)
		if named {
			continue
		}
		fd := fds[0]
		switch r.Op {
		case syntax.RdrIn, syntax.RdrInOut:
			ws := z.words([]*syntax.Word{r.Word})
			switch {
			case onlyProcSubst(r.Word):
				t.set(fd, source{kind: srcUnknown, text: "the output of another command"})
			case len(ws) == 1:
				t.set(fd, source{kind: srcFile, file: ws[0]})
			default:
				t.set(fd, source{kind: srcUnknown, text: "a file named when it runs"})
			}
		case syntax.Hdoc, syntax.DashHdoc:
			if r.Hdoc == nil {
				t.set(fd, source{kind: srcText})
			} else if body, ok := docText(r.Hdoc); ok {
				t.set(fd, source{kind: srcText, text: body})
			} else {
				t.set(fd, source{kind: srcUnknown, text: "a here-document only known when it runs"})
			}
		case syntax.WordHdoc:
			if s, ok := literalText(r.Word); ok {
				t.set(fd, source{kind: srcText, text: s + "\n"})
			} else {
				t.set(fd, source{kind: srcUnknown, text: "a here-string only known when it runs"})
			}
		case syntax.DplIn, syntax.DplOut:
			lit := r.Word.Lit()
			switch {
			case lit == "-":
				t.set(fd, source{kind: srcClosed})
			case from >= 0:
				src := t.get(from)
				t.set(fd, src)
				if len(fds) == 2 && fds[1] != fd {
					t.set(fds[1], source{kind: srcClosed})
				}
			case r.Op == syntax.DplOut:
				for _, f := range fds {
					t.set(f, source{kind: srcOutput})
				}
			default:
				t.set(fd, source{kind: srcUnknown, text: fmt.Sprintf("a descriptor named by %s", printWord(r.Word))})
			}
		default:
			for _, f := range fds {
				t.set(f, source{kind: srcOutput})
			}
		}
	}
}

// touch marks the descriptors a statement's redirections change as
// unknown: for a command substitution in the statement's own words,
// which of them it sees depends on where it sits.
func touch(t fdTable, redirs []*syntax.Redirect) {
	for _, r := range redirs {
		fds, _, named := redirFds(r)
		if named {
			continue
		}
		for _, fd := range fds {
			t.set(fd, source{kind: srcUnknown, text: "a descriptor its statement redirects"})
		}
	}
}

// docText is a literal here-document's body.
func docText(w *syntax.Word) (string, bool) {
	if !isStatic(w) {
		return "", false
	}
	var b strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			b.WriteString(p.Value)
		case *syntax.SglQuoted:
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				b.WriteString(q.(*syntax.Lit).Value)
			}
		}
	}
	return b.String(), true
}

// fdsAt computes the descriptors of the statement on top of the stack:
// the script's, then, going down the syntax tree, each pipeline stage's
// pipe and each enclosing statement's redirections. A function body can
// be called from anywhere, so its descriptors are unknown.
func (z *analyzer) fdsAt() fdTable {
	t := z.base.clone()
	for i, n := range z.stack {
		switch n := n.(type) {
		case *syntax.FuncDecl:
			t = unknownFds("whatever the function's caller gives it")
		case *syntax.Stmt:
			if ref, ok := z.stages[n]; ok && ref.index > 0 {
				t.set(0, source{kind: srcPipe, pipe: &ref})
			}
			if expansionBelow(z.stack[i+1:]) {
				touch(t, n.Redirs)
			} else {
				z.apply(t, n.Redirs)
			}
		}
	}
	return t
}

// expansionBelow reports whether the path leaves the statement it starts
// under through a command or process substitution in the statement's own
// words, rather than through its body.
func expansionBelow(path []syntax.Node) bool {
	for _, n := range path {
		switch n.(type) {
		case *syntax.Stmt:
			return false
		case *syntax.CmdSubst, *syntax.ProcSubst:
			return true
		}
	}
	return false
}

// execRedirected returns base with the descriptors that a bare exec
// redirects anywhere in f made unknown: from the exec on, every later
// command of the script inherits them, and the analysis does not follow
// the order of statements.
func execRedirected(f *syntax.File, base fdTable) fdTable {
	t := base
	copied := false
	syntax.Walk(f, func(n syntax.Node) bool {
		s, ok := n.(*syntax.Stmt)
		if !ok || len(s.Redirs) == 0 {
			return true
		}
		call, ok := s.Cmd.(*syntax.CallExpr)
		if !ok || len(call.Args) == 0 || call.Args[0].Lit() != "exec" {
			return true
		}
		for _, a := range call.Args[1:] {
			if lit := a.Lit(); !strings.HasPrefix(lit, "-") {
				return true // exec runs a command: its redirections are its own
			}
		}
		if !copied {
			t, copied = base.clone(), true
		}
		for _, r := range s.Redirs {
			fds, _, named := redirFds(r)
			if named {
				continue
			}
			for _, fd := range fds {
				t.set(fd, source{kind: srcUnknown, text: "a descriptor exec redirects"})
			}
		}
		return true
	})
	return t
}

// input resolves where a shell or source reads its script: the path it
// was given ("" for stdin; /dev/stdin and /dev/fd/N name descriptors).
// It returns the descriptor's source; ok is false when the path is an
// ordinary file.
func inputFd(p string) (int, bool) {
	switch p {
	case "", "-", "/dev/stdin":
		return 0, true
	}
	for _, pre := range []string{"/dev/fd/", "/proc/self/fd/", "/proc/thread-self/fd/"} {
		if rest, ok := strings.CutPrefix(p, pre); ok {
			if n, err := strconv.Atoi(rest); err == nil {
				return n, true
			}
		}
	}
	return 0, false
}

// runsInput handles a shell (or source) that runs the script on
// descriptor fd.
func (z *analyzer) runsInput(name string, args []word, c ctx, fd int) {
	src := c.fds.get(fd)
	switch src.kind {
	case srcText:
		// The script sees the rest of its own text on the same descriptor.
		inner := c.fds.clone()
		inner.set(fd, source{kind: srcAnalyzed})
		z.script(src.text, c.depth+1, inner)
	case srcFile:
		z.record(args, c) // a script file, read where it was opened
	case srcPipe:
		z.record(args, c)
		z.opaque(fmt.Sprintf("%s reads its script from a pipe; cannot check what it runs", name))
		src.pipe.pipe.interprets = append(src.pipe.pipe.interprets, src.pipe.index)
		src.pipe.pipe.interpreter = name
	case srcUnknown:
		z.record(args, c)
		z.opaque(fmt.Sprintf("%s reads its script from %s; cannot check what it runs", name, src.text))
	case srcOutput:
		z.record(args, c)
		z.opaque(fmt.Sprintf("%s reads its script from an output descriptor; cannot check what it runs", name))
	default: // empty, closed, or text already analyzed: nothing new runs
		z.record(args, c)
	}
}
