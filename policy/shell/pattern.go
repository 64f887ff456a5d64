package shell

// This file is the small pattern algebra deny rules need for what the
// analysis cannot pin down. A word only known when the command runs, an
// unquoted glob the shell replaces by file names, or a command name that
// is itself a pattern each stand for a set of strings; a deny rule must
// apply when it MIGHT match one of them. Pattern represents such a set and
// Intersects answers "might match" exactly for the sets it can express.

import (
	"path"
	"strings"
)

// Pattern is a set of strings: what an argument, a command line or a path
// may turn out to be when only part of it is known. It is a small
// nondeterministic automaton over bytes. The zero Pattern is the empty
// set.
type Pattern struct {
	states []pstate
	accept int
}

type pstate struct {
	eps   []int
	edges []pedge
}

type pedge struct {
	set byteSet
	to  int
}

// byteSet is one byte, or any byte except, optionally, '/' and '.'.
type byteSet struct {
	any            bool
	b              byte // the byte, when !any
	noSlash, noDot bool // exclusions, when any
}

var (
	anyByte     = byteSet{any: true}
	nameByte    = byteSet{any: true, noSlash: true}
	nonDotStart = byteSet{any: true, noSlash: true, noDot: true}
)

func (s byteSet) has(c byte) bool {
	if !s.any {
		return c == s.b
	}
	return !(s.noSlash && c == '/') && !(s.noDot && c == '.')
}

// meets reports whether two sets share a byte. The sets differ from "any
// byte" only in one byte or in '/' and '.', so a byte of either set, '/',
// '.' or an ordinary letter is a witness when there is one.
func (s byteSet) meets(o byteSet) bool {
	for _, c := range []byte{s.b, o.b, '/', '.', 'a'} {
		if s.has(c) && o.has(c) {
			return true
		}
	}
	return false
}

// builder grows an automaton whose last state is always the current end.
type builder struct{ st []pstate }

func newBuilder() *builder { return &builder{st: []pstate{{}}} }

func (b *builder) end() int { return len(b.st) - 1 }

func (b *builder) add() int {
	b.st = append(b.st, pstate{})
	return len(b.st) - 1
}

func (b *builder) eps(from, to int) { b.st[from].eps = append(b.st[from].eps, to) }

// one appends exactly one byte of set.
func (b *builder) one(set byteSet) {
	from := b.end()
	to := b.add()
	b.st[from].edges = append(b.st[from].edges, pedge{set, to})
}

// star appends any number of bytes of set.
func (b *builder) star(set byteSet) {
	from := b.end()
	loop := b.add()
	b.eps(from, loop)
	b.st[loop].edges = append(b.st[loop].edges, pedge{set, loop})
}

func (b *builder) lit(s string) {
	for i := 0; i < len(s); i++ {
		b.one(byteSet{b: s[i]})
	}
}

// opt makes what f appends optional. The skip goes to a fresh state:
// the end of f may loop (a star), and skipping f must not enter it.
func (b *builder) opt(f func()) {
	from := b.end()
	f()
	end := b.end()
	join := b.add()
	b.eps(end, join)
	b.eps(from, join)
}

// alt appends either what f appends or what g appends.
func (b *builder) alt(f, g func()) {
	from := b.end()
	f()
	e1 := b.end()
	b.eps(from, b.add())
	g()
	e2 := b.end()
	join := b.add()
	b.eps(e1, join)
	b.eps(e2, join)
}

func (b *builder) pattern() Pattern { return Pattern{states: b.st, accept: b.end()} }

// AnyPattern is every string.
func AnyPattern() Pattern {
	b := newBuilder()
	b.star(anyByte)
	return b.pattern()
}

// LiteralPattern is the one string s.
func LiteralPattern(s string) Pattern {
	b := newBuilder()
	b.lit(s)
	return b.pattern()
}

// WildcardPattern is the pattern of a permission rule's command spec: *
// matches any run of bytes, spaces and slashes included; nothing else is
// special.
func WildcardPattern(spec string) Pattern {
	b := newBuilder()
	for i := 0; i < len(spec); i++ {
		if spec[i] == '*' {
			b.star(anyByte)
			continue
		}
		b.one(byteSet{b: spec[i]})
	}
	return b.pattern()
}

// Below is p followed, optionally, by "/" and anything: the paths p names
// and everything inside them.
func (p Pattern) Below() Pattern {
	if len(p.states) == 0 {
		return p
	}
	b := &builder{st: append([]pstate(nil), p.states...)}
	for i := range b.st {
		b.st[i].eps = append([]int(nil), b.st[i].eps...)
		b.st[i].edges = append([]pedge(nil), b.st[i].edges...)
	}
	if p.accept != b.end() {
		b.eps(p.accept, b.add())
	}
	b.opt(func() {
		b.lit("/")
		b.star(anyByte)
	})
	return b.pattern()
}

// maxProduct bounds the work of one Intersects; past it the answer is
// "might", which is the safe side for a deny rule.
const maxProduct = 1 << 22

// Intersects reports whether some string is in both p and q.
func (p Pattern) Intersects(q Pattern) bool {
	n, m := len(p.states), len(q.states)
	if n == 0 || m == 0 {
		return false
	}
	if n*m > maxProduct {
		return true
	}
	seen := make([]bool, n*m)
	queue := []int{0}
	seen[0] = true
	visit := func(i, j int) {
		if k := i*m + j; !seen[k] {
			seen[k] = true
			queue = append(queue, k)
		}
	}
	for len(queue) > 0 {
		k := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		i, j := k/m, k%m
		if i == p.accept && j == q.accept {
			return true
		}
		for _, e := range p.states[i].eps {
			visit(e, j)
		}
		for _, e := range q.states[j].eps {
			visit(i, e)
		}
		for _, a := range p.states[i].edges {
			for _, c := range q.states[j].edges {
				if a.set.meets(c.set) {
					visit(a.to, c.to)
				}
			}
		}
	}
	return false
}

// globElem is one element of a shell pattern: a literal byte, ? or a
// bracket expression (one character), or *.
type globElem struct {
	lit  byte
	kind byte // 0 literal, '?' one character, '*' any run
}

// parseGlob splits one path component of a shell pattern into elements.
// A bracket expression counts as ?, which matches at least what it does.
func parseGlob(c string) []globElem {
	var out []globElem
	for i := 0; i < len(c); i++ {
		switch ch := c[i]; ch {
		case '\\':
			if i+1 < len(c) {
				i++
			}
			out = append(out, globElem{lit: c[i]})
		case '*':
			out = append(out, globElem{kind: '*'})
		case '?':
			out = append(out, globElem{kind: '?'})
		case '[':
			if end := bracketEnd(c, i); end > 0 {
				out = append(out, globElem{kind: '?'})
				i = end
				continue
			}
			out = append(out, globElem{lit: ch})
		default:
			out = append(out, globElem{lit: ch})
		}
	}
	return out
}

// bracketEnd returns the index of the ] closing the bracket expression
// opened at s[i], or -1 when there is none (then [ is literal).
func bracketEnd(s string, i int) int {
	j := i + 1
	if j < len(s) && (s[j] == '!' || s[j] == '^') {
		j++
	}
	if j < len(s) && s[j] == ']' {
		j++
	}
	for ; j < len(s); j++ {
		if s[j] == ']' {
			return j
		}
	}
	return -1
}

// hasWildcard reports whether a shell pattern component has a wildcard.
func hasWildcard(c string) bool {
	for _, e := range parseGlob(c) {
		if e.kind != 0 {
			return true
		}
	}
	return false
}

// component appends one path component of a shell pattern. A wildcard
// never matches '/', and a name starting with '.' must be matched by a
// literal '.': no wildcard may match a leading dot, as in bash without
// dotglob. A ? is one character, which may be several bytes.
//
// The leading-dot rule is the product with a two-state automaton: copy A
// of the component has consumed nothing yet and its wildcards refuse
// '.', copy B is the component as it is; every byte consumed in A moves
// to B.
func (b *builder) component(elems []globElem) {
	c := newBuilder()
	for _, e := range elems {
		switch e.kind {
		case 0:
			c.one(byteSet{b: e.lit})
		case '?':
			c.one(nameByte)
			c.star(nameByte)
		case '*':
			c.star(nameByte)
		}
	}
	n := len(c.st)
	from := b.end()
	offA := len(b.st)
	offB := offA + n
	b.st = append(b.st, make([]pstate, 2*n)...)
	for i, s := range c.st {
		for _, e := range s.eps {
			b.eps(offA+i, offA+e)
			b.eps(offB+i, offB+e)
		}
		for _, e := range s.edges {
			first := e.set
			if first.any {
				first.noDot = true
			}
			b.st[offA+i].edges = append(b.st[offA+i].edges, pedge{first, offB + e.to})
			b.st[offB+i].edges = append(b.st[offB+i].edges, pedge{e.set, offB + e.to})
		}
	}
	b.eps(from, offA)
	join := b.add()
	b.eps(offA+c.end(), join)
	b.eps(offB+c.end(), join)
}

// GlobPattern is the set of paths the shell pattern glob names, made
// absolute against dir (a literal absolute directory) when it is
// relative. Components are cleaned lexically: "x/.." is dropped, as it is
// when x is a directory.
func GlobPattern(dir, glob string) Pattern {
	full := glob
	if !strings.HasPrefix(glob, "/") {
		full = strings.TrimSuffix(escapeGlobChars(dir), "/") + "/" + glob
	}
	var comps []string
	for _, c := range strings.Split(full, "/") {
		switch c {
		case "", ".":
		case "..":
			if len(comps) > 0 {
				comps = comps[:len(comps)-1]
			}
		default:
			comps = append(comps, c)
		}
	}
	b := newBuilder()
	if len(comps) == 0 {
		b.lit("/")
	}
	for _, c := range comps {
		b.lit("/")
		b.component(parseGlob(c))
	}
	return b.pattern()
}

// escapeGlobChars quotes the pattern characters of a literal path.
func escapeGlobChars(s string) string {
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(`*?[\`, s[i]) >= 0 {
			sb.WriteByte('\\')
		}
		sb.WriteByte(s[i])
	}
	return sb.String()
}

// SplitGlob splits a path into its leading components that hold no
// wildcard and the rest, so the fixed part can be resolved (links, ~, the
// workspace) before the rest is matched as a pattern.
func SplitGlob(p string) (dir, rest string) {
	comps := strings.Split(p, "/")
	for i, c := range comps {
		if hasWildcard(c) {
			dir = strings.Join(comps[:i], "/")
			if dir == "" && strings.HasPrefix(p, "/") {
				dir = "/"
			}
			return dir, strings.Join(comps[i:], "/")
		}
	}
	return p, ""
}

// DoublestarPattern is the set of paths a doublestar glob (the syntax of
// Read(...) and Edit(...) rules) matches, or a little more: **/ matches
// any number of directories, * any run without '/', ? and [...] at least
// one byte, and {a,b} anything at all. Saying
// "might match" a little too often is the safe side for a deny rule.
func DoublestarPattern(glob string) Pattern {
	b := newBuilder()
	for i := 0; i < len(glob); i++ {
		switch c := glob[i]; c {
		case '\\':
			if i+1 < len(glob) {
				i++
			}
			b.one(byteSet{b: glob[i]})
		case '*':
			if i+1 < len(glob) && glob[i+1] == '*' {
				start := i == 0 || glob[i-1] == '/'
				for i+1 < len(glob) && glob[i+1] == '*' {
					i++
				}
				if start && i+1 < len(glob) && glob[i+1] == '/' {
					// A whole **/ component: any number of directories.
					i++
					b.opt(func() { b.star(anyByte); b.lit("/") })
					continue
				}
				b.star(anyByte)
				continue
			}
			b.star(nameByte)
		case '?':
			b.one(nameByte)
			b.star(nameByte)
		case '[':
			if end := bracketEnd(glob, i); end > 0 {
				b.one(nameByte)
				b.star(nameByte)
				i = end
				continue
			}
			b.one(byteSet{b: c})
		case '{':
			if end := strings.IndexByte(glob[i:], '}'); end > 0 {
				b.star(anyByte)
				i += end
				continue
			}
			b.one(byteSet{b: c})
		default:
			b.one(byteSet{b: c})
		}
	}
	return b.pattern()
}

// Pattern is the set of command lines c may be. Literal arguments are
// themselves; an argument only known when the command runs is anything,
// any number of words (none included); a glob is its pattern, possibly
// followed by further matches. With baseName, a command name with a
// directory (/bin/rm, /usr/*/rm) stands for its last component, which is
// how deny rules keep a path from dodging them.
func (c Command) Pattern(baseName bool) Pattern {
	b := newBuilder()
	for i, a := range c.Args {
		kind := c.kind(i)
		if i == 0 && baseName {
			if kind == Dynamic {
				b.star(anyByte)
				continue
			}
			a = path.Base(a)
		}
		if i > 0 && kind != Literal {
			b.opt(func() { b.lit(" "); b.star(anyByte) })
			continue
		}
		if i > 0 {
			b.lit(" ")
		}
		switch kind {
		case Literal:
			b.lit(a)
		case Dynamic:
			b.star(anyByte)
		case Glob:
			for _, e := range parseGlob(a) {
				if e.kind == 0 {
					b.one(byteSet{b: e.lit})
				} else {
					b.star(anyByte)
				}
			}
			b.opt(func() { b.lit(" "); b.star(anyByte) })
		}
	}
	if c.MoreArgs {
		b.opt(func() { b.lit(" "); b.star(anyByte) })
	}
	return b.pattern()
}

func (c Command) kind(i int) Kind {
	if i < len(c.Kinds) {
		return c.Kinds[i]
	}
	return Literal
}

// Pattern is the set of absolute paths p may name: dir is the literal
// absolute directory relative paths start from, home the one ~ stands
// for. A path only known when the command runs may be anything (a value
// can hold ".."), and so may one whose base is missing.
func (p Path) Pattern(dir, home string) Pattern {
	name := p.Name
	if p.Kind == Dynamic {
		return AnyPattern()
	}
	var base, rel string
	switch {
	case name == "~" || strings.HasPrefix(name, "~/"):
		base, rel = home, strings.TrimPrefix(name[1:], "/")
	case strings.HasPrefix(name, "~"):
		return AnyPattern() // ~user
	case strings.HasPrefix(name, "/"):
		base, rel = "/", name
	case p.Unrooted:
		// Relative to a directory only known when it runs: any directory,
		// unless the path climbs out of it, which could reach anything.
		for c := range strings.SplitSeq(name, "/") {
			if c == ".." {
				return AnyPattern()
			}
		}
		b := newBuilder()
		b.star(anyByte)
		return concat(b.pattern(), (Path{Name: "/" + name, Kind: p.Kind}).Pattern("/", home), p.Tree)
	default:
		base, rel = dir, name
	}
	if base == "" {
		return AnyPattern()
	}
	var pat Pattern
	if p.Kind == Literal {
		pat = LiteralPattern(path.Clean(base + "/" + rel))
	} else {
		pat = GlobPattern(base, rel)
	}
	if p.Tree {
		return pat.Below()
	}
	return pat
}

// concat is p followed by q (and, with below, anything under it).
func concat(p, q Pattern, below bool) Pattern {
	b := &builder{st: append([]pstate(nil), p.states...)}
	if p.accept != b.end() {
		b.eps(p.accept, b.add())
	}
	off := len(b.st)
	b.eps(b.end(), off)
	for _, s := range q.states {
		ns := pstate{}
		for _, e := range s.eps {
			ns.eps = append(ns.eps, e+off)
		}
		for _, e := range s.edges {
			ns.edges = append(ns.edges, pedge{e.set, e.to + off})
		}
		b.st = append(b.st, ns)
	}
	out := Pattern{states: b.st, accept: q.accept + off}
	if below {
		return out.Below()
	}
	return out
}
