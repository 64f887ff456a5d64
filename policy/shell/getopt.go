package shell

// This file parses options the way GNU getopt_long does, so the analysis
// finds the command a wrapper runs where the wrapper finds it: a long
// option may be abbreviated to any unambiguous prefix (--uns for
// --unset), takes its value after "=" or as the next word, a short option
// cluster (-vS'...') ends at the first letter that takes a value, and
// "--" ends the options.

import (
	"fmt"
	"strings"
)

// optSpec describes a command's options.
type optSpec struct {
	// short is a getopt optstring: a letter followed by ':' takes a
	// value, by '::' an optional one that must be attached (-i{}). A
	// leading '+' stops at the first operand, as most wrappers do (the
	// rest is the command); without it options may follow operands.
	short string
	// long lists the long options: "name" takes no value, "name=" needs
	// one, "name=?" may have one after "=".
	long []string
}

type argNeed uint8

const (
	noValue argNeed = iota
	needValue
	optValue
)

// option is one option as parsed.
type option struct {
	name  string // the letter, or the long name in full
	value word
	has   bool // value is set
}

// parsedOpts is the result of parsing options.
type parsedOpts struct {
	opts     []option
	operands []word // in order; when the spec stops at the first operand, it and everything after
	err      string // why the options cannot be understood
}

func (p parsedOpts) has(names ...string) bool {
	for _, o := range p.opts {
		for _, n := range names {
			if o.name == n {
				return true
			}
		}
	}
	return false
}

// values returns the values given to the options named.
func (p parsedOpts) values(names ...string) []word {
	var out []word
	for _, o := range p.opts {
		for _, n := range names {
			if o.name == n && o.has {
				out = append(out, o.value)
			}
		}
	}
	return out
}

func (s optSpec) shortNeed(c byte) (argNeed, bool) {
	i := strings.IndexByte(strings.TrimPrefix(s.short, "+"), c)
	if i < 0 || c == ':' || c == '+' {
		return 0, false
	}
	rest := strings.TrimPrefix(s.short, "+")[i+1:]
	switch {
	case strings.HasPrefix(rest, "::"):
		return optValue, true
	case strings.HasPrefix(rest, ":"):
		return needValue, true
	}
	return noValue, true
}

// longMatch finds the long option name abbreviates: an exact match, or
// the only option it is a prefix of.
func (s optSpec) longMatch(name string) (string, argNeed, string) {
	var found []string
	for _, l := range s.long {
		full, _, _ := strings.Cut(l, "=")
		if full == name {
			found = []string{l}
			break
		}
		if strings.HasPrefix(full, name) {
			found = append(found, l)
		}
	}
	switch len(found) {
	case 0:
		return "", 0, fmt.Sprintf("unknown option --%s", name)
	case 1:
	default:
		names := make([]string, len(found))
		for i, f := range found {
			names[i], _, _ = strings.Cut(f, "=")
		}
		return "", 0, fmt.Sprintf("--%s is ambiguous (--%s)", name, strings.Join(names, ", --"))
	}
	full, need, _ := strings.Cut(found[0], "=")
	switch {
	case !strings.Contains(found[0], "="):
		return full, noValue, ""
	case need == "?":
		return full, optValue, ""
	}
	return full, needValue, ""
}

// parse parses args[i:]. A word only known when it runs where an option
// may stand could be any option, so parsing stops with an error there.
func (s optSpec) parse(args []word, i int) parsedOpts {
	var p parsedOpts
	stop := strings.HasPrefix(s.short, "+")
	for ; i < len(args); i++ {
		a := args[i]
		if a.kind == Dynamic && (a.val == "" || a.val[0] == '$' || a.val[0] == '`' || a.val[0] == '-') {
			p.err = fmt.Sprintf("%s is only known when it runs and could be an option", a.val)
			return p
		}
		v := a.val
		if v == "--" {
			p.operands = append(p.operands, args[i+1:]...)
			return p
		}
		if len(v) < 2 || v[0] != '-' {
			if stop {
				p.operands = append(p.operands, args[i:]...)
				return p
			}
			p.operands = append(p.operands, a)
			continue
		}
		if strings.HasPrefix(v, "--") {
			name, val, hasVal := strings.Cut(v[2:], "=")
			full, need, err := s.longMatch(name)
			if err != "" {
				p.err = err
				return p
			}
			o := option{name: full}
			switch {
			case hasVal && need == noValue:
				p.err = fmt.Sprintf("--%s takes no value", full)
				return p
			case hasVal:
				o.value, o.has = word{val: val, kind: a.kind, node: a.node}, true
			case need == needValue:
				if i+1 >= len(args) {
					p.err = fmt.Sprintf("--%s needs a value", full)
					return p
				}
				i++
				o.value, o.has = args[i], true
			}
			p.opts = append(p.opts, o)
			continue
		}
		for j := 1; j < len(v); j++ {
			need, ok := s.shortNeed(v[j])
			if !ok {
				p.err = fmt.Sprintf("unknown option -%c", v[j])
				return p
			}
			o := option{name: string(v[j])}
			if need != noValue && j+1 < len(v) {
				o.value, o.has = word{val: v[j+1:], kind: a.kind, node: a.node}, true
				p.opts = append(p.opts, o)
				break
			}
			if need == needValue {
				if i+1 >= len(args) {
					p.err = fmt.Sprintf("-%c needs a value", v[j])
					return p
				}
				i++
				o.value, o.has = args[i], true
			}
			p.opts = append(p.opts, o)
		}
	}
	return p
}
