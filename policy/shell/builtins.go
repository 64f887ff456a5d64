package shell

// This file handles the bash builtins that assign variables from data,
// evaluate names or text as code, or change how later words are read.

import (
	"fmt"
	"strings"
)

// builtin handles name's effects on variables and on the analysis.
func (z *analyzer) builtin(name string, args []word, c ctx) {
	switch name {
	case "read":
		p := optSpec{"+ersa:d:i:n:N:p:t:u:", nil}.parse(args, 1)
		for _, w := range append(p.values("a"), p.operands...) {
			z.assignsData(w, "read")
		}
	case "mapfile", "readarray":
		p := optSpec{"+d:n:O:s:tu:C:c:", nil}.parse(args, 1)
		for _, w := range p.operands {
			z.assignsData(w, name)
		}
		for _, cb := range p.values("C") {
			// The callback runs as "CALLBACK INDEX 'LINE'" for the lines read.
			z.problem(fmt.Sprintf("%s -C runs %s for the lines it reads", name, cb.val))
			z.runScript(name+" -C", cb, ctx{fds: unknownFds("the lines " + name + " reads"), depth: c.depth})
		}
	case "printf":
		p := optSpec{"+v:", nil}.parse(args, 1)
		for _, w := range p.values("v") {
			z.assignsData(w, "printf -v")
		}
	case "getopts":
		if len(args) > 2 {
			z.assignsData(args[2], "getopts")
		}
	case "wait":
		p := optSpec{"+fnp:", nil}.parse(args, 1)
		for _, w := range p.values("p") {
			z.nameWord(w, "wait -p")
		}
	case "unset":
		p := optSpec{"+fvn", nil}.parse(args, 1)
		for _, w := range p.operands {
			z.nameWord(w, "unset")
		}
	case "let":
		for _, w := range args[1:] {
			z.arithArg(w, "let")
		}
	case "declare", "typeset", "local", "export", "readonly":
		z.declare(name, args[1:], nil)
	case "test", "[":
		for i := 1; i+1 < len(args); i++ {
			if args[i].literal() && args[i].val == "-v" {
				z.nameWord(args[i+1], name+" -v")
			}
		}
	case "shopt":
		for _, a := range args[1:] {
			switch a.val {
			case "dotglob", "nocaseglob", "globstar", "extglob", "nullglob", "failglob", "globasciiranges":
				z.globOpts = true
			}
		}
	case "enable":
		for _, a := range args[1:] {
			if strings.HasPrefix(a.val, "-") && strings.Contains(a.val, "f") {
				z.opaque("enable -f loads a builtin from a shared library, code nobody can see")
			}
			if strings.HasPrefix(a.val, "-") && strings.Contains(a.val, "n") {
				z.problem("enable -n turns a builtin off, so its name runs another program")
			}
		}
	case "hash":
		for _, a := range args[1:] {
			if strings.HasPrefix(a.val, "-") && strings.Contains(a.val, "p") {
				z.problem("hash -p makes a command name run another program")
			}
		}
	case "compgen":
		p := optSpec{"+abcdefgjksuvo:A:G:W:F:C:X:P:S:", nil}.parse(args, 1)
		for _, cmd := range p.values("C") {
			z.runScript("compgen -C", cmd, c)
		}
	}
}

// assignsData records a variable a builtin fills with data it reads.
func (z *analyzer) assignsData(w word, what string) {
	z.nameWord(w, what)
	if w.literal() {
		name := w.val
		if i := strings.IndexByte(name, '['); i > 0 {
			name = name[:i]
		}
		z.assign(name, value{kind: Dynamic})
	}
}

// arithArg checks a word a builtin evaluates as arithmetic (let).
func (z *analyzer) arithArg(w word, what string) {
	z.later(func() {
		ok := false
		switch {
		case w.literal():
			ok = z.arithText(w.val, nil)
		case w.node != nil:
			ok = z.arithWord(w.node)
		}
		if !ok {
			z.opaque(fmt.Sprintf("%s evaluates %s as arithmetic, and a value there can run commands (a[$(...)])", what, w.val))
		}
	})
}
