package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// PlaceholderKind says what a placeholder refers to.
type PlaceholderKind string

const (
	// KindStep is {{steps.N.result...}}: an earlier step's result.
	KindStep PlaceholderKind = "step"
	// KindLast is {{last.result...}}: the result of the step just before,
	// in list order.
	KindLast PlaceholderKind = "last"
	// KindInput is {{inputs.name...}}: a run input.
	KindInput PlaceholderKind = "input"
	// KindFile is a whole string value "@file:<name>": a granted file.
	KindFile PlaceholderKind = "file"
)

// Placeholder is one reference found in a step's arguments.
//
// Only {{...}} whose first word is steps, last or inputs is a placeholder;
// any other {{...}} is literal text, so arguments can carry other template
// languages (a Jinja file to write, say) untouched. Placeholders in object
// keys are never expanded.
type Placeholder struct {
	Kind PlaceholderKind
	// Target is the step reference (position or id) for KindStep, the
	// input or file name for KindInput and KindFile, "" for KindLast.
	Target string
	// Path is the path into the value as written (".a.b[0]"), "" for the
	// whole value.
	Path string
	// Text is the placeholder as written: "{{steps.0.result.a}}" or
	// "@file:report".
	Text string
	// Pointer is the JSON pointer of the string value holding it.
	Pointer string
	// Whole is true when that string value is exactly this placeholder:
	// the rendered value then keeps the JSON type of what it references.
	// Otherwise it is rendered into the text (strings unquoted, other
	// values as compact JSON).
	Whole bool

	elems []pathElem
}

type pathElem struct {
	key   string
	index int
	isIdx bool
}

// TemplateError is a placeholder that cannot be parsed or resolved.
type TemplateError struct {
	Placeholder string // as written
	Pointer     string // JSON pointer of the string value holding it
	Msg         string
}

func (e *TemplateError) Error() string {
	s := e.Placeholder
	if e.Pointer != "" {
		s += " at " + e.Pointer
	}
	return s + ": " + e.Msg
}

// Scope is what placeholders resolve against. Values that are not valid
// JSON are taken as text (JSON strings), as a step result would be.
type Scope struct {
	// Results holds the results of completed steps by step id.
	Results map[string]json.RawMessage
	// Order holds the step ids by position, to resolve {{steps.N...}} and
	// {{last...}}.
	Order []string
	// Inputs holds the run's inputs by name.
	Inputs map[string]json.RawMessage
	// Files holds the granted files by name (whatever value the runtime
	// gives a tool for a file: a path, a file reference object).
	Files map[string]json.RawMessage
	// Index is the position of the step being rendered, for {{last...}}.
	Index int
}

// resolver looks up placeholder targets; Scope and the executor each
// provide one.
type resolver interface {
	step(ref string) (json.RawMessage, error)
	last() (json.RawMessage, error)
	input(name string) (json.RawMessage, error)
	file(name string) (json.RawMessage, error)
}

type scopeResolver struct{ sc *Scope }

func (r scopeResolver) step(ref string) (json.RawMessage, error) {
	id := ref
	if n, ok := Ref(ref).Position(); ok {
		if n >= len(r.sc.Order) {
			return nil, fmt.Errorf("no step at position %d", n)
		}
		id = r.sc.Order[n]
	}
	v, ok := r.sc.Results[id]
	if !ok {
		return nil, fmt.Errorf("step %q has no result", id)
	}
	return normalizeResult(v), nil
}

func (r scopeResolver) last() (json.RawMessage, error) {
	i := r.sc.Index - 1
	if i < 0 {
		return nil, errors.New("there is no previous step")
	}
	if i >= len(r.sc.Order) {
		return nil, fmt.Errorf("no step at position %d", i)
	}
	return r.step(r.sc.Order[i])
}

func (r scopeResolver) input(name string) (json.RawMessage, error) {
	v, ok := r.sc.Inputs[name]
	if !ok {
		return nil, fmt.Errorf("input %q was not given", name)
	}
	return normalizeResult(v), nil
}

func (r scopeResolver) file(name string) (json.RawMessage, error) {
	v, ok := r.sc.Files[name]
	if !ok {
		return nil, fmt.Errorf("file %q is not granted", name)
	}
	return normalizeResult(v), nil
}

// Render returns args with every placeholder replaced (see Placeholder for
// the rules), compacted. Empty args are returned as they are. Errors are
// *TemplateError values naming the placeholder, except for args that are
// not JSON.
//
// An input whose value is null (an optional input the caller left out;
// the runtime binds those to null) is left out where it stands alone: a
// string value that is exactly "{{inputs.x}}" is removed, key and all,
// from its object (or from its array; at the top level the args are
// null), so the tool sees the argument as omitted rather than null. Used
// anywhere else (inside text, or with a path: "{{inputs.x.a}}") a null
// input is an error: there is nothing sensible to splice in. An input
// absent from the inputs altogether is an error wherever it is used.
func Render(args json.RawMessage, sc Scope) (json.RawMessage, error) {
	return render(args, scopeResolver{&sc})
}

func render(args json.RawMessage, res resolver) (json.RawMessage, error) {
	if len(bytes.TrimSpace(args)) == 0 {
		return args, nil
	}
	if !json.Valid(args) {
		return nil, errors.New("args are not valid JSON")
	}
	w := walker{res: res, out: make([]byte, 0, len(args))}
	if _, err := w.value(args, skipWS(args, 0)); err != nil {
		return nil, err
	}
	if w.omit {
		return json.RawMessage("null"), nil
	}
	return w.out, nil
}

// Refs returns the placeholders in args, in document order. It fails on
// args that are not JSON and on malformed placeholders
// ("{{steps.x}}", "{{inputs}}").
func Refs(args json.RawMessage) ([]Placeholder, error) {
	w, err := probe(args)
	if err != nil {
		return nil, err
	}
	return w.refs, nil
}

// probe walks args without resolving anything: it collects the
// placeholders and builds a stand-in for schema validation in which a
// whole-value placeholder is null (its type is unknown until run time) and
// text around placeholders is kept as it is (it is a string either way).
func probe(args json.RawMessage) (*walker, error) {
	w := &walker{collect: true}
	if len(bytes.TrimSpace(args)) == 0 {
		return w, nil
	}
	if !json.Valid(args) {
		return nil, errors.New("args are not valid JSON")
	}
	if _, err := w.value(args, skipWS(args, 0)); err != nil {
		return nil, err
	}
	return w, nil
}

// walker copies a JSON value compactly, expanding placeholders in string
// values: resolving them through res, or, when collect is set, recording
// them and writing the probe stand-ins. ptr is the JSON pointer of the
// value being walked, for error messages and Placeholder.Pointer.
type walker struct {
	res     resolver
	collect bool
	out     []byte
	ptr     []byte
	refs    []Placeholder
	// omit is set by a value that is to be left out (an input that was
	// not given); its container removes it.
	omit bool
}

func (w *walker) value(b []byte, i int) (int, error) {
	switch b[i] {
	case '{':
		w.out = append(w.out, '{')
		i = skipWS(b, i+1)
		if b[i] == '}' {
			w.out = append(w.out, '}')
			return i + 1, nil
		}
		for kept := 0; ; {
			start := len(w.out)
			if kept > 0 {
				w.out = append(w.out, ',')
			}
			ke := skipString(b, i)
			w.out = append(w.out, b[i:ke]...)
			w.out = append(w.out, ':')
			mark := len(w.ptr)
			w.ptr = appendKeyToken(w.ptr, b[i:ke])
			i = skipWS(b, skipWS(b, ke)+1)
			var err error
			if i, err = w.value(b, i); err != nil {
				return 0, err
			}
			w.ptr = w.ptr[:mark]
			if w.omit {
				w.omit, w.out = false, w.out[:start]
			} else {
				kept++
			}
			i = skipWS(b, i)
			if b[i] == '}' {
				w.out = append(w.out, '}')
				return i + 1, nil
			}
			i = skipWS(b, i+1)
		}
	case '[':
		w.out = append(w.out, '[')
		i = skipWS(b, i+1)
		if b[i] == ']' {
			w.out = append(w.out, ']')
			return i + 1, nil
		}
		for n, kept := 0, 0; ; n++ {
			start := len(w.out)
			if kept > 0 {
				w.out = append(w.out, ',')
			}
			mark := len(w.ptr)
			w.ptr = appendPointerIndex(w.ptr, n)
			var err error
			if i, err = w.value(b, i); err != nil {
				return 0, err
			}
			w.ptr = w.ptr[:mark]
			if w.omit {
				w.omit, w.out = false, w.out[:start]
			} else {
				kept++
			}
			i = skipWS(b, i)
			if b[i] == ']' {
				w.out = append(w.out, ']')
				return i + 1, nil
			}
			i = skipWS(b, i+1)
		}
	case '"':
		e := skipString(b, i)
		return e, w.str(b[i:e])
	}
	e := skipValue(b, i)
	w.out = append(w.out, b[i:e]...)
	return e, nil
}

// str handles one string value (raw: the literal with its quotes).
func (w *walker) str(raw []byte) error {
	var s string
	if bytes.IndexByte(raw, '\\') >= 0 {
		s = decodeString(raw)
		if !strings.Contains(s, "{{") && !strings.HasPrefix(s, filePrefix) {
			w.out = append(w.out, raw...)
			return nil
		}
	} else {
		if !bytes.Contains(raw, []byte("{{")) && !bytes.HasPrefix(raw[1:], []byte(filePrefix)) {
			w.out = append(w.out, raw...)
			return nil
		}
		s = string(raw[1 : len(raw)-1])
	}
	if name, ok := strings.CutPrefix(s, filePrefix); ok {
		ph := Placeholder{Kind: KindFile, Target: name, Text: s, Whole: true}
		if name == "" {
			return w.fail(&ph, "needs a file name: @file:<name>")
		}
		return w.whole(&ph)
	}
	segs, err := parseTemplate(s)
	if err != nil {
		err.Pointer = string(w.ptr)
		return err
	}
	if segs == nil {
		w.out = append(w.out, raw...)
		return nil
	}
	if len(segs) == 1 && segs[0].ph != nil {
		segs[0].ph.Whole = true
		return w.whole(segs[0].ph)
	}
	if w.collect {
		for _, sg := range segs {
			if sg.ph != nil {
				w.record(sg.ph)
			}
		}
		w.out = append(w.out, raw...)
		return nil
	}
	var text []byte
	for _, sg := range segs {
		if sg.ph == nil {
			text = append(text, sg.lit...)
			continue
		}
		v, err := w.resolve(sg.ph)
		if err != nil {
			return err
		}
		if v[0] == '"' {
			text = append(text, decodeString(v)...)
		} else {
			text = appendCompact(text, v)
		}
	}
	w.out = appendQuoted(w.out, string(text))
	return nil
}

const filePrefix = "@file:"

func (w *walker) whole(ph *Placeholder) error {
	if w.collect {
		w.record(ph)
		w.out = append(w.out, "null"...)
		return nil
	}
	if ph.Kind == KindInput && len(ph.elems) == 0 {
		v, err := w.res.input(ph.Target)
		if err != nil {
			return w.fail(ph, err.Error())
		}
		if string(trimValue(v)) == "null" {
			w.omit = true // an optional input left out: so is the argument
			return nil
		}
	}
	v, err := w.resolve(ph)
	if err != nil {
		return err
	}
	w.out = appendCompact(w.out, v)
	return nil
}

func (w *walker) record(ph *Placeholder) {
	ph.Pointer = string(w.ptr)
	w.refs = append(w.refs, *ph)
}

func (w *walker) fail(ph *Placeholder, msg string) *TemplateError {
	return &TemplateError{Placeholder: ph.Text, Pointer: string(w.ptr), Msg: msg}
}

// resolve returns the trimmed value ph stands for.
func (w *walker) resolve(ph *Placeholder) ([]byte, error) {
	var v json.RawMessage
	var err error
	switch ph.Kind {
	case KindStep:
		v, err = w.res.step(ph.Target)
	case KindLast:
		v, err = w.res.last()
	case KindInput:
		v, err = w.res.input(ph.Target)
		if err == nil && string(trimValue(v)) == "null" {
			return nil, w.fail(ph, fmt.Sprintf("input %q was not given (it is null): an optional input can be used only as a whole value, \"{{inputs.%s}}\", which is then left out", ph.Target, ph.Target))
		}
	case KindFile:
		v, err = w.res.file(ph.Target)
	}
	if err != nil {
		return nil, w.fail(ph, err.Error())
	}
	out, err := follow(trimValue(v), ph.elems)
	if err != nil {
		return nil, w.fail(ph, err.Error())
	}
	return out, nil
}

// follow walks path from v (a trimmed, valid JSON value).
func follow(v []byte, path []pathElem) ([]byte, error) {
	at := func(k int) string {
		if k == 0 {
			return "the value"
		}
		return strconv.Quote(pathText(path[:k]))
	}
	for k, e := range path {
		var got []byte
		var ok bool
		switch {
		case e.isIdx && v[0] != '[':
			return nil, fmt.Errorf("cannot index %s: it is %s, not an array", at(k), kindOf(v))
		case e.isIdx, v[0] == '[' && allDigits(e.key):
			n := e.index
			if !e.isIdx {
				n, _ = strconv.Atoi(e.key)
			}
			var size int
			got, size, ok = arrayGet(v, n)
			if !ok {
				return nil, fmt.Errorf("index %d is out of range: %s has %d elements", n, at(k), size)
			}
		case v[0] != '{':
			return nil, fmt.Errorf("no field %q: %s is %s, not an object", e.key, at(k), kindOf(v))
		default:
			got, ok = objectGet(v, e.key)
			if !ok {
				return nil, fmt.Errorf("no field %q in %s", e.key, at(k))
			}
		}
		v = trimValue(got)
	}
	return v, nil
}

func pathText(path []pathElem) string {
	var sb strings.Builder
	for _, e := range path {
		if e.isIdx {
			sb.WriteString("[" + strconv.Itoa(e.index) + "]")
		} else {
			sb.WriteString("." + e.key)
		}
	}
	return sb.String()
}

// segment is a run of literal text or one placeholder.
type segment struct {
	lit string
	ph  *Placeholder
}

// parseTemplate splits s into literal text and placeholders. It returns
// nil when s holds no placeholder.
func parseTemplate(s string) ([]segment, *TemplateError) {
	var segs []segment
	last, i := 0, 0
	for {
		j := strings.Index(s[i:], "{{")
		if j < 0 {
			break
		}
		open := i + j
		k := strings.Index(s[open+2:], "}}")
		if k < 0 {
			break
		}
		end := open + 2 + k + 2
		ph, ok, err := parseExpr(s[open+2 : end-2])
		if err != "" {
			return nil, &TemplateError{Placeholder: s[open:end], Msg: err}
		}
		if !ok {
			i = open + 1
			continue
		}
		ph.Text = s[open:end]
		if open > last {
			segs = append(segs, segment{lit: s[last:open]})
		}
		segs = append(segs, segment{ph: ph})
		i, last = end, end
	}
	if segs == nil {
		return nil, nil
	}
	if last < len(s) {
		segs = append(segs, segment{lit: s[last:]})
	}
	return segs, nil
}

func isTokenByte(c byte) bool {
	switch c {
	case '.', '[', ']', '{', '}', ' ', '\t', '\n', '\r':
		return false
	}
	return true
}

// parseExpr parses the inside of {{ }}. ok is false when it is not one of
// ours (other template languages); msg explains a malformed one.
func parseExpr(expr string) (ph *Placeholder, ok bool, msg string) {
	t := strings.TrimSpace(expr)
	n := 0
	for n < len(t) && isTokenByte(t[n]) {
		n++
	}
	head, rest := t[:n], t[n:]
	token := func() string {
		k := 0
		for k < len(rest) && isTokenByte(rest[k]) {
			k++
		}
		tok := rest[:k]
		rest = rest[k:]
		return tok
	}
	result := func() bool {
		r, ok := strings.CutPrefix(rest, ".result")
		if !ok || (r != "" && r[0] != '.' && r[0] != '[') {
			return false
		}
		rest = r
		return true
	}
	ph = &Placeholder{}
	switch head {
	case "steps":
		ph.Kind = KindStep
		if !strings.HasPrefix(rest, ".") {
			return nil, true, "write {{steps.<position or id>.result}}"
		}
		rest = rest[1:]
		if ph.Target = token(); ph.Target == "" || !result() {
			return nil, true, "write {{steps.<position or id>.result}}"
		}
	case "last":
		ph.Kind = KindLast
		if !result() {
			return nil, true, "write {{last.result}}"
		}
	case "inputs":
		ph.Kind = KindInput
		if !strings.HasPrefix(rest, ".") {
			return nil, true, "write {{inputs.<name>}}"
		}
		rest = rest[1:]
		if ph.Target = token(); ph.Target == "" {
			return nil, true, "write {{inputs.<name>}}"
		}
	default:
		return nil, false, ""
	}
	ph.Path = rest
	elems, m := parsePath(rest)
	if m != "" {
		return nil, true, m
	}
	ph.elems = elems
	return ph, true, ""
}

// parsePath parses ".a.b[0]", `["key.with.dots"]` and the like.
func parsePath(p string) ([]pathElem, string) {
	var elems []pathElem
	for i := 0; i < len(p); {
		switch p[i] {
		case '.':
			k := i + 1
			for k < len(p) && isTokenByte(p[k]) {
				k++
			}
			if k == i+1 {
				return nil, fmt.Sprintf("empty field name in path %q", p)
			}
			elems = append(elems, pathElem{key: p[i+1 : k]})
			i = k
		case '[':
			if i+1 < len(p) && p[i+1] == '"' {
				e := skipString([]byte(p), i+1)
				if e >= len(p) || p[e] != ']' {
					return nil, fmt.Sprintf("unterminated [\"...\"] in path %q", p)
				}
				var key string
				if err := json.Unmarshal([]byte(p[i+1:e]), &key); err != nil {
					return nil, fmt.Sprintf("bad quoted field in path %q", p)
				}
				elems = append(elems, pathElem{key: key})
				i = e + 1
				continue
			}
			k := i + 1
			for k < len(p) && p[k] >= '0' && p[k] <= '9' {
				k++
			}
			n, err := strconv.Atoi(p[i+1 : k])
			if k == i+1 || k >= len(p) || p[k] != ']' || err != nil {
				return nil, fmt.Sprintf("index must be [<digits>] in path %q", p)
			}
			elems = append(elems, pathElem{index: n, isIdx: true})
			i = k + 1
		default:
			return nil, fmt.Sprintf("unexpected %q in path %q", p[i:], p)
		}
	}
	return elems, ""
}
