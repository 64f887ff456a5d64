package shell

// This file finds code hidden in values. Bash evaluates some values as
// code: arithmetic (( x )), $((x)), [[ x -eq 0 ]], array subscripts
// ${a[x]}, let, declare -i, substring offsets ${s:x}) evaluates a
// variable's value as an expression, recursively, and a subscript in it,
// a[$(cmd)], runs cmd; ${!x} and read/printf -v/unset NAME expand a
// subscript the same way; ${x@P} expands the value like a prompt, with
// command substitution. So such a use is only safe when every value the
// variable can hold is known and harmless.
//
// The model: for every variable, the values the script assigns it, over
// the whole script and in no order (a loop can run an assignment after a
// use). A value is literal text, a copy of another variable, or unknown
// (read, $(...), "$1", a glob's file names). Variables the script never
// assigns come from the environment the Bash tool starts with, which is
// weft's own, not the model's; variables bash fills from data ($_, REPLY,
// BASH_REMATCH, ...) and the positional parameters are unknown.

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

type variable struct {
	values []value
}

type value struct {
	text string
	kind Kind   // Literal: text; Glob: the names of files matching text; Dynamic: unknown
	ref  string // when set, the value of that variable
}

// dataVars are variables bash sets from data the script does not choose.
var dataVars = map[string]bool{
	"_": true, "REPLY": true, "BASH_REMATCH": true, "OPTARG": true, "MAPFILE": true,
	"BASH_COMMAND": true, "BASH_EXECUTION_STRING": true, "BASH_ARGV": true, "BASH_ARGV0": true,
	"BASH_SOURCE": true, "FUNCNAME": true, "PWD": true, "OLDPWD": true, "DIRSTACK": true,
	"COPROC": true, "READLINE_LINE": true, "COMP_LINE": true, "COMP_WORDS": true, "COMPREPLY": true,
}

func (z *analyzer) variable(name string) *variable {
	v := z.vars[name]
	if v == nil {
		v = &variable{}
		z.vars[name] = v
	}
	return v
}

// assign records a value of name (an array element counts for the array).
func (z *analyzer) assign(name string, v value) {
	if i := strings.IndexByte(name, '['); i > 0 {
		name = name[:i]
	}
	z.variable(name).values = append(z.variable(name).values, v)
}

// wordValue is what assigning w stores: assignments do not split words
// or expand globs, so a static word is its text.
func wordValue(w *syntax.Word) value {
	if w == nil {
		return value{}
	}
	if s, ok := literalText(w); ok {
		return value{text: s}
	}
	if name, ok := simpleRef(w); ok {
		return value{ref: name}
	}
	if numeric(w) {
		return value{text: "0"}
	}
	return value{kind: Dynamic}
}

// numeric reports whether w always expands to a number: $((...)) or
// ${#x}, alone.
func numeric(w *syntax.Word) bool {
	parts := w.Parts
	if len(parts) == 1 {
		if dq, ok := parts[0].(*syntax.DblQuoted); ok {
			parts = dq.Parts
		}
	}
	if len(parts) != 1 {
		return false
	}
	switch p := parts[0].(type) {
	case *syntax.ArithmExp:
		return true
	case *syntax.ParamExp:
		return p.Length && p.Param != nil
	}
	return false
}

// itemValues are the values a for loop or an array gives: words split
// and globbed.
func (z *analyzer) itemValues(w *syntax.Word) []value {
	if name, ok := simpleRef(w); ok {
		return []value{{ref: name}}
	}
	var out []value
	for _, x := range z.words([]*syntax.Word{w}) {
		out = append(out, value{text: x.val, kind: x.kind})
	}
	return out
}

// simpleRef reports whether w is just $name, ${name} or "$name".
func simpleRef(w *syntax.Word) (string, bool) {
	parts := w.Parts
	if len(parts) == 1 {
		if dq, ok := parts[0].(*syntax.DblQuoted); ok {
			parts = dq.Parts
		}
	}
	if len(parts) != 1 {
		return "", false
	}
	pe, ok := parts[0].(*syntax.ParamExp)
	if !ok || !plainParam(pe) || pe.Index != nil {
		return "", false
	}
	return pe.Param.Value, true
}

// plainParam: $x, ${x} or ${x[i]}, nothing done to the value.
func plainParam(pe *syntax.ParamExp) bool {
	return pe.Param != nil && !pe.Excl && !pe.Length && !pe.Width && pe.Slice == nil &&
		pe.Repl == nil && pe.Exp == nil && pe.Names == 0 && pe.NestedParam == nil
}

// evaluated handles the nodes where bash assigns variables or evaluates
// values as code.
func (z *analyzer) evaluated(n syntax.Node) {
	switch n := n.(type) {
	case *syntax.Assign:
		z.assignNode(n)
	case *syntax.ArrayElem:
		z.subscript(z.arrayOf(n), n.Index)
	case *syntax.DeclClause:
		z.decl(n)
	case *syntax.ForClause:
		if it, ok := n.Loop.(*syntax.WordIter); ok && it.Name != nil {
			if !it.InPos.IsValid() || n.Select {
				z.assign(it.Name.Value, value{kind: Dynamic})
			}
			for _, w := range it.Items {
				for _, v := range z.itemValues(w) {
					z.assign(it.Name.Value, v)
				}
			}
		}
	case *syntax.CStyleLoop:
		z.arith(n.Init)
		z.arith(n.Cond)
		z.arith(n.Post)
	case *syntax.ArithmCmd:
		z.arith(n.X)
	case *syntax.ArithmExp:
		z.arith(n.X)
	case *syntax.LetClause:
		for _, x := range n.Exprs {
			z.arith(x)
		}
	case *syntax.ParamExp:
		z.paramExp(n)
	case *syntax.BinaryTest:
		switch n.Op {
		case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
			z.arith(testWord(n.X))
			z.arith(testWord(n.Y))
		}
	case *syntax.UnaryTest:
		if n.Op == syntax.TsVarSet {
			if w := testWord(n.X); w != nil {
				z.nameWord(word{val: printWord(w), kind: kindOf(w), node: w}, "[[ -v ]]")
			}
		}
	}
}

func kindOf(w *syntax.Word) Kind {
	if isStatic(w) {
		return Literal
	}
	return Dynamic
}

func testWord(x syntax.TestExpr) *syntax.Word {
	w, _ := x.(*syntax.Word)
	return w
}

// arrayOf is the name of the array an element of an array literal
// belongs to: the assignment above it on the walk.
func (z *analyzer) arrayOf(e *syntax.ArrayElem) string {
	for i := len(z.stack) - 1; i >= 0; i-- {
		if as, ok := z.stack[i].(*syntax.Assign); ok && as.Name != nil {
			return as.Name.Value
		}
	}
	return ""
}

// subscript checks an array subscript: arithmetic, unless the array is
// associative (declare -A), whose keys are strings. Which one it is is
// known at the end.
func (z *analyzer) subscript(array string, x syntax.ArithmExpr) {
	if x == nil {
		return
	}
	z.later(func() {
		if !z.assoc[array] {
			z.arith(x)
		}
	})
}

func (z *analyzer) assignNode(as *syntax.Assign) {
	if as.Index != nil && as.Name != nil {
		z.subscript(as.Name.Value, as.Index)
	}
	if as.Name == nil || as.Naked {
		return
	}
	name := as.Name.Value
	z.assignName(name, as.Value)
	switch {
	case as.Array != nil:
		for _, e := range as.Array.Elems {
			if e.Value == nil {
				continue
			}
			for _, v := range z.itemValues(e.Value) {
				z.assign(name, v)
			}
		}
	case as.Append:
		z.assign(name, value{kind: Dynamic})
	default:
		z.assign(name, wordValue(as.Value))
	}
}

// paramExp checks an expansion for the parts bash evaluates.
func (z *analyzer) paramExp(pe *syntax.ParamExp) {
	if pe.Index != nil && !allElems(pe.Index) && pe.Param != nil {
		z.subscript(pe.Param.Value, pe.Index)
	}
	if pe.Slice != nil {
		z.arith(pe.Slice.Offset)
		z.arith(pe.Slice.Length)
	}
	if pe.Param == nil {
		return
	}
	name := pe.Param.Value
	text := printWord(&syntax.Word{Parts: []syntax.WordPart{pe}})
	if pe.Excl && pe.Names == 0 && (pe.Index == nil || !allElems(pe.Index)) {
		z.later(func() {
			if !z.safe(name, asName, nil) {
				z.opaque(fmt.Sprintf("%s expands the variable %s names, and a name with a subscript runs code", text, name))
			}
		})
	}
	if pe.Exp == nil {
		return
	}
	switch pe.Exp.Op {
	case syntax.OtherParamOps:
		if pe.Exp.Word != nil && strings.ContainsAny(pe.Exp.Word.Lit(), "P") {
			z.later(func() {
				if !z.safe(name, asPrompt, nil) {
					z.opaque(fmt.Sprintf("%s expands %s like a prompt, which runs the command substitutions in it", text, name))
				}
			})
		}
	case syntax.AssignUnset, syntax.AssignUnsetOrNull:
		z.assignName(name, pe.Exp.Word)
		z.assign(name, wordValue(pe.Exp.Word))
	}
}

func allElems(x syntax.ArithmExpr) bool {
	w, ok := x.(*syntax.Word)
	return ok && (w.Lit() == "@" || w.Lit() == "*")
}

// arith checks an arithmetic expression: numbers and operators are
// harmless; a variable is evaluated, so its values must be too.
func (z *analyzer) arith(x syntax.ArithmExpr) {
	switch x := x.(type) {
	case *syntax.BinaryArithm:
		z.arith(x.X)
		z.arith(x.Y)
	case *syntax.UnaryArithm:
		z.arith(x.X)
	case *syntax.ParenArithm:
		z.arith(x.X)
	case *syntax.FlagsArithm:
		z.arith(x.X)
	case *syntax.Word:
		if x == nil {
			return
		}
		what := printWord(x)
		z.later(func() {
			if !z.arithWord(x) {
				z.opaque(fmt.Sprintf("evaluates %s as arithmetic, and a value there can run commands (a[$(...)])", what))
			}
		})
	}
}

// arithWord reports whether evaluating w as arithmetic runs only
// arithmetic: literal text is checked as an expression, $x and a[i] by
// the values of x and a (subscripts are checked where they appear), and
// ${#x} is a number. Anything else, a command's output included, could
// be an expression with a subscript that runs code.
func (z *analyzer) arithWord(w *syntax.Word) bool {
	if s, ok := literalText(w); ok {
		return z.arithText(s, nil)
	}
	parts := w.Parts
	if len(parts) == 1 {
		if dq, ok := parts[0].(*syntax.DblQuoted); ok {
			parts = dq.Parts
		}
	}
	if len(parts) != 1 {
		return false
	}
	pe, ok := parts[0].(*syntax.ParamExp)
	if !ok {
		return false
	}
	if pe.Length && pe.Param != nil {
		return true
	}
	return plainParam(pe) && z.safe(pe.Param.Value, asArith, nil)
}

// arithText reports whether s, evaluated as an arithmetic expression,
// runs nothing but arithmetic: numbers, operators and variables whose
// values are harmless too. A subscript, a $ or a quote is refused.
func (z *analyzer) arithText(s string, seen map[string]bool) bool {
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || strings.IndexByte("+-*/%<>=!&|^~?:(),", c) >= 0:
			i++
		case c >= '0' && c <= '9':
			// A number, in any base: 0x1f, 2#101, 64#@_. Never a name.
			for i < len(s) && (isNameByte(s[i]) || s[i] == '#' || s[i] == '@') {
				i++
			}
		case isNameStart(c):
			j := i
			for j < len(s) && isNameByte(s[j]) {
				j++
			}
			if !z.safe(s[i:j], asArith, seen) {
				return false
			}
			if j < len(s) && s[j] == '[' {
				// An element: its subscript is evaluated too.
				k := strings.IndexByte(s[j:], ']')
				if k < 0 || !z.arithText(s[j+1:j+k], seen) {
					return false
				}
				j += k + 1
			}
			i = j
		default:
			return false
		}
	}
	return true
}

// use is how bash evaluates a value.
type use uint8

const (
	asArith  use = iota // an arithmetic expression
	asName              // a variable name, with a subscript maybe
	asPrompt            // a prompt string
)

// harmless reports whether evaluating text as u runs nothing but what
// the analysis has seen.
func (z *analyzer) harmless(u use, text string, seen map[string]bool) bool {
	switch u {
	case asArith:
		return z.arithText(text, seen)
	case asName:
		return indirectText(text)
	}
	return promptText(text)
}

// safe reports whether every value name can hold is harmless evaluated as
// ok. seen breaks cycles (x=y; y=x), which bash reports as an error,
// running nothing.
func (z *analyzer) safe(name string, ok use, seen map[string]bool) bool {
	switch {
	case name == "#" || name == "?" || name == "$" || name == "!" || name == "-":
		return true
	case name == "@" || name == "*" || isDigits(name) || dataVars[name] || z.anyVars:
		return false
	}
	if seen[name] {
		return true
	}
	if seen == nil {
		// A whole check: its answer cannot change once every value is
		// known, so remember it (a script may use a variable many times).
		key := fmt.Sprintf("%s\x00%d", name, ok)
		if v, done := z.memo[key]; done {
			return v
		}
		v := z.safe(name, ok, map[string]bool{})
		z.memo[key] = v
		return v
	}
	seen[name] = true
	v := z.vars[name]
	if v == nil {
		return true // from the environment weft starts the tool with
	}
	for _, val := range v.values {
		switch {
		case val.ref != "":
			if !z.safe(val.ref, ok, seen) {
				return false
			}
		case val.kind != Literal:
			return false
		case !z.harmless(ok, val.text, seen):
			return false
		}
	}
	return true
}

// indirectText: the value names a variable, perhaps with a subscript,
// which is evaluated.
func indirectText(s string) bool {
	i := strings.IndexByte(s, '[')
	if i < 0 {
		return true
	}
	sub := strings.TrimSuffix(s[i+1:], "]")
	return sub == "@" || sub == "*" || isDigits(strings.TrimSpace(sub))
}

// promptText: prompt expansion decodes backslash escapes (\044 is $),
// then expands $ and `.
func promptText(s string) bool {
	return !strings.ContainsAny(s, "$`\\")
}

// nameWord checks a word a builtin takes as a variable name (read NAME,
// printf -v NAME, unset NAME, test -v NAME): a subscript in it is
// evaluated as arithmetic.
func (z *analyzer) nameWord(w word, what string) {
	switch w.kind {
	case Literal:
		i := strings.IndexByte(w.val, '[')
		if i < 0 {
			return
		}
		sub := strings.TrimSuffix(w.val[i+1:], "]")
		z.later(func() {
			if sub != "@" && sub != "*" && !z.arithText(sub, nil) {
				z.opaque(fmt.Sprintf("%s evaluates the subscript of %s, which can run commands", what, w.val))
			}
		})
	default:
		ref, isRef := "", false
		if w.node != nil {
			ref, isRef = simpleRef(w.node)
		}
		z.later(func() {
			if !isRef || !z.safe(ref, asName, nil) {
				z.opaque(fmt.Sprintf("%s takes a variable name only known when it runs (%s); a subscript in it runs code", what, w.val))
			}
		})
	}
}

func isNameStart(c byte) bool { return c == '_' || (c|0x20 >= 'a' && c|0x20 <= 'z') }
func isNameByte(c byte) bool  { return isNameStart(c) || (c >= '0' && c <= '9') }

func isDigits(s string) bool { return s != "" && strings.Trim(s, "0123456789") == "" }

func isName(s string) bool {
	if s == "" || !isNameStart(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isNameByte(s[i]) {
			return false
		}
	}
	return true
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
	"PERL5OPT": true, "PERL5LIB": true, "RUBYOPT": true, "BROWSER": true, "GLOBIGNORE": true,
	"BASH_LOADABLES_PATH": true, "CDPATH": true, "GIT_SEQUENCE_EDITOR": true, "MANPAGER": true,
	"LESSOPEN": true, "LESSCLOSE": true, "SSH_ASKPASS": true,
}

// commandVars hold a command line that a program runs with sh -c.
var commandVars = map[string]bool{
	"PROMPT_COMMAND": true, "GIT_SSH_COMMAND": true, "GIT_PAGER": true, "GIT_EDITOR": true,
	"GIT_SEQUENCE_EDITOR": true, "PAGER": true, "EDITOR": true, "VISUAL": true, "MANPAGER": true,
	"GIT_PROXY_COMMAND": true, "BROWSER": true,
}

// assignName checks an assignment to name; val is what it assigns (nil:
// not known here). A command line stored in a variable some program runs
// is analyzed like bash -c, so deny rules see it.
func (z *analyzer) assignName(name string, val *syntax.Word) {
	if name == "GLOBIGNORE" {
		z.globOpts = true
	}
	if !riskyVars[name] && !strings.HasPrefix(name, "GIT_CONFIG_KEY_") && !strings.HasPrefix(name, "GIT_CONFIG_VALUE_") {
		return
	}
	z.problem(fmt.Sprintf("sets %s, which changes what later commands run", name))
	if commandVars[name] {
		if s, ok := literalText(val); ok {
			z.script(s, 1, unknownFds("whatever the program running "+name+" gives it"))
		} else {
			z.opaque(fmt.Sprintf("sets %s, a command line some program runs, to a value only known when it runs", name))
		}
	}
}

// assignText checks a NAME=VALUE given as one word (env, sudo, export
// "x=y"): a BASH_FUNC_f%% variable is a function definition bash imports.
func (z *analyzer) assignText(w word) {
	name, val, _ := strings.Cut(w.val, "=")
	if w.kind != Literal && !strings.Contains(name, "$") {
		// The name is literal; only the value is unknown.
		if fn, ok := strings.CutPrefix(name, "BASH_FUNC_"); ok {
			z.opaque(fmt.Sprintf("exports the function %s with a body only known when it runs", strings.TrimSuffix(fn, "%%")))
		}
		z.assignName(name, nil)
		z.assign(name, value{kind: Dynamic})
		return
	}
	if w.kind != Literal {
		z.opaque(fmt.Sprintf("assigns %s, a variable only known when it runs", w.val))
		return
	}
	if fn, ok := strings.CutPrefix(name, "BASH_FUNC_"); ok {
		fn = strings.TrimSuffix(strings.TrimSuffix(fn, "%%"), "()")
		z.problem(fmt.Sprintf("exports a function %s to the commands it runs", fn))
		z.script("f"+val, 1, unknownFds("the shell calling "+fn))
		return
	}
	z.assignName(name, &syntax.Word{Parts: []syntax.WordPart{&syntax.SglQuoted{Value: val}}})
	z.assign(name, value{text: val})
}

// decl handles declare/local/typeset/export/readonly written as a
// declaration. Assignments with a name the walk meets on its own; here
// the flags matter, and assignments given as one quoted word.
func (z *analyzer) decl(d *syntax.DeclClause) {
	var words []word
	var names []string
	for _, as := range d.Args {
		switch {
		case as.Name != nil:
			names = append(names, as.Name.Value)
		case as.Value != nil:
			words = append(words, z.words([]*syntax.Word{as.Value})...)
		}
	}
	z.declare(d.Variant.Value, words, names)
}

// declare handles the words of a declaration builtin; names are the
// variables it declares that were already taken care of.
func (z *analyzer) declare(variant string, args []word, names []string) {
	var flags strings.Builder
	for _, w := range args {
		switch {
		case w.kind == Literal && len(w.val) > 1 && (w.val[0] == '-' || w.val[0] == '+'):
			if w.val[0] == '-' {
				flags.WriteString(w.val[1:])
			}
		case strings.Contains(w.val, "="):
			name, _, _ := strings.Cut(w.val, "=")
			z.nameWord(word{val: name, kind: Literal}, variant)
			z.assignText(w)
			names = append(names, name)
		case w.kind != Literal:
			z.opaque(fmt.Sprintf("%s %s declares a variable only known when it runs", variant, w.val))
		default:
			z.nameWord(w, variant)
			names = append(names, w.val)
		}
	}
	f := flags.String()
	if strings.Contains(f, "A") {
		for _, n := range names {
			z.assoc[n] = true
		}
	}
	if variant == "nameref" || (variant != "export" && variant != "readonly" && strings.Contains(f, "n")) {
		z.opaque(fmt.Sprintf("%s -n makes a name refer to another variable; cannot follow what it changes", variant))
	}
	if strings.Contains(f, "i") {
		for _, n := range names {
			if i := strings.IndexByte(n, '['); i > 0 {
				n = n[:i]
			}
			z.later(func() { z.integerChecked(n) })
		}
	}
}

// integerChecked: every value assigned to an integer variable is
// evaluated as arithmetic when it is assigned.
func (z *analyzer) integerChecked(name string) {
	if z.seen["integer:"+name] {
		return
	}
	z.seen["integer:"+name] = true
	if !z.safe(name, asArith, nil) {
		z.opaque(fmt.Sprintf("%s has the integer attribute, so what is assigned to it is evaluated as arithmetic, which can run commands", name))
	}
}
