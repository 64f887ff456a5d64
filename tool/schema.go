package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// InputError says why a tool call's arguments were rejected. Its message is
// what the model sees: the tool's name, then one line per problem, each
// with the JSON pointer of the offending value, so the model can fix the
// call in one retry.
type InputError struct {
	Tool     string
	Problems []Problem
}

// Problem is one reason arguments were rejected. Path is a JSON pointer
// into the arguments ("" for the arguments as a whole, "/edits/0/old_string"
// for a nested value).
type Problem struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

func (p Problem) String() string {
	if p.Path == "" {
		return p.Message
	}
	return p.Path + ": " + p.Message
}

// maxProblems bounds the message: past a few problems the model learns
// nothing more, and a badly wrong call could otherwise produce hundreds.
const maxProblems = 20

func (e *InputError) Error() string {
	head := "invalid arguments for " + e.Tool + ":"
	switch len(e.Problems) {
	case 0:
		return head + " rejected"
	case 1:
		return head + " " + e.Problems[0].String()
	}
	var sb strings.Builder
	sb.WriteString(head)
	for i, p := range e.Problems {
		if i == maxProblems {
			fmt.Fprintf(&sb, "\n- ... and %d more", len(e.Problems)-maxProblems)
			break
		}
		sb.WriteString("\n- ")
		sb.WriteString(p.String())
	}
	return sb.String()
}

// ValidateInput checks input against spec.InputSchema the way Execute
// does: empty or null input counts as {}, the input must be JSON, and it
// must satisfy the schema. It returns an *InputError for bad input, and
// another error when the schema itself does not compile. Compiled schemas
// are cached by their text, so validating many calls of one tool is cheap.
func ValidateInput(spec Spec, input json.RawMessage) error {
	raw := spec.InputSchema
	if isEmptyJSON(raw) {
		raw = emptyObjectSchema()
	}
	cs, err := schemaCache.get(raw)
	if err != nil {
		return fmt.Errorf("tool %s: input schema: %w", spec.Name, err)
	}
	_, err = cs.validate(spec.Name, input)
	return err
}

// compiledSchema is a tool's schema compiled once, with the decoded
// document kept to explain additionalProperties failures.
type compiledSchema struct {
	schema *jsonschema.Schema
	doc    any
	// lastValid is the last input that passed: a call is validated by the
	// policy before anyone is asked about it and again by Execute, and
	// validation is a pure function of the bytes, so the second pass can
	// be a comparison.
	lastValid atomic.Pointer[[]byte]
}

// schemaURL names every tool schema inside its own compiler; a fixed,
// absolute, non-file URL keeps the library from consulting the filesystem.
const schemaURL = "weft:///input_schema.json"

func emptyObjectSchema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{}}`)
}

func isEmptyJSON(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) == 0 || string(b) == "null"
}

// refuseLoader keeps schema compilation offline and sandboxed: tool schemas
// can come from MCP servers we do not control, and a "$ref" to a file or
// URL must not make weft read local files or reach the network.
type refuseLoader struct{}

func (refuseLoader) Load(u string) (any, error) {
	return nil, fmt.Errorf("external $ref %q is not supported: inline it under $defs", u)
}

func compileSchema(raw json.RawMessage) (*compiledSchema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, errors.New("must be a JSON object")
	}
	// Every provider requires an object schema at the top: tool arguments
	// are always a JSON object.
	if t, ok := obj["type"]; ok && t != "object" {
		return nil, fmt.Errorf(`top-level "type" must be "object", got %s`, compactJSON(t))
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(refuseLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, err
	}
	sch, err := c.Compile(schemaURL)
	if err != nil {
		return nil, err
	}
	return &compiledSchema{schema: sch, doc: doc}, nil
}

// validate returns the input Run should see ({} for empty input) or an
// *InputError.
func (cs *compiledSchema) validate(name string, input json.RawMessage) (json.RawMessage, error) {
	if isEmptyJSON(input) {
		input = json.RawMessage("{}")
	}
	if last := cs.lastValid.Load(); last != nil && bytes.Equal(*last, input) {
		return input, nil
	}
	if !json.Valid(input) {
		var v any
		err := json.Unmarshal(input, &v)
		return nil, &InputError{Tool: name, Problems: []Problem{{Message: "not valid JSON: " + jsonErrorText(err)}}}
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(input))
	if err != nil {
		return nil, &InputError{Tool: name, Problems: []Problem{{Message: "not valid JSON: " + err.Error()}}}
	}
	err = cs.schema.Validate(v)
	if err == nil {
		valid := bytes.Clone(input)
		cs.lastValid.Store(&valid)
		return input, nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return nil, &InputError{Tool: name, Problems: []Problem{{Message: err.Error()}}}
	}
	var probs []Problem
	types := map[Problem][]string{} // {path, got} -> wanted types
	cs.collect(ve, &probs, types)
	for k, want := range types {
		slices.Sort(want)
		want = slices.Compact(want)
		probs = append(probs, Problem{Path: k.Path, Message: "got " + k.Message + ", want " + strings.Join(want, " or ")})
	}
	slices.SortFunc(probs, func(a, b Problem) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return strings.Compare(a.Message, b.Message)
	})
	probs = slices.Compact(probs)
	return nil, &InputError{Tool: name, Problems: probs}
}

func jsonErrorText(err error) string {
	if err == nil {
		return "malformed"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

var printer = message.NewPrinter(language.English)

// collect flattens the library's error tree to its leaves: the wrapper
// levels ("validation failed", "'anyOf' failed", references) tell the
// model nothing it can act on. Type mismatches are gathered in types so
// that the branches of an anyOf read as one "want string or integer".
func (cs *compiledSchema) collect(ve *jsonschema.ValidationError, out *[]Problem, types map[Problem][]string) {
	if len(ve.Causes) > 0 {
		for _, c := range ve.Causes {
			cs.collect(c, out, types)
		}
		return
	}
	path := pointer(ve.InstanceLocation)
	if k, ok := ve.ErrorKind.(*kind.Type); ok {
		key := Problem{Path: path, Message: k.Got}
		types[key] = append(types[key], k.Want...)
		return
	}
	*out = append(*out, Problem{Path: path, Message: cs.describe(ve)})
}

// describe words the common failures the way a model expects to read them
// (double-quoted JSON names and values) and falls back to the library's
// English text for the rest.
func (cs *compiledSchema) describe(ve *jsonschema.ValidationError) string {
	switch k := ve.ErrorKind.(type) {
	case *kind.Required:
		if len(k.Missing) == 1 {
			return "missing required property " + strconv.Quote(k.Missing[0])
		}
		return "missing required properties " + quoteAll(k.Missing)
	case *kind.AdditionalProperties:
		var s string
		if len(k.Properties) == 1 {
			s = "unexpected property " + strconv.Quote(k.Properties[0])
		} else {
			s = "unexpected properties " + quoteAll(slices.Sorted(slices.Values(k.Properties)))
		}
		if allowed := cs.allowedProperties(ve.SchemaURL); len(allowed) > 0 {
			s += " (allowed: " + strings.Join(allowed, ", ") + ")"
		}
		return s
	case *kind.Enum:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			want[i] = compactJSON(w)
		}
		if len(want) == 1 {
			return "value must be " + want[0]
		}
		return "value must be one of " + strings.Join(want, ", ")
	case *kind.Const:
		return "value must be " + compactJSON(k.Want)
	case *kind.FalseSchema:
		return "not allowed"
	}
	return ve.ErrorKind.LocalizedString(printer)
}

// allowedProperties lists the properties declared by the schema at
// schemaLoc (an absolute location whose fragment is a JSON pointer into
// the tool's schema), sorted; nil when it cannot be resolved.
func (cs *compiledSchema) allowedProperties(schemaLoc string) []string {
	base, frag, _ := strings.Cut(schemaLoc, "#")
	if base != schemaURL {
		return nil
	}
	frag, err := url.PathUnescape(frag)
	if err != nil {
		return nil
	}
	node := cs.doc
	if frag != "" {
		for _, tok := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
			tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
			switch n := node.(type) {
			case map[string]any:
				node = n[tok]
			case []any:
				i, err := strconv.Atoi(tok)
				if err != nil || i < 0 || i >= len(n) {
					return nil
				}
				node = n[i]
			default:
				return nil
			}
		}
	}
	obj, _ := node.(map[string]any)
	props, _ := obj["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for name := range props {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

func pointer(tokens []string) string {
	var sb strings.Builder
	for _, t := range tokens {
		sb.WriteByte('/')
		sb.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(t))
	}
	return sb.String()
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}

func compactJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// schemaCache serves ValidateInput, whose callers (the plan validator)
// hold specs rather than a Registry. It is bounded because tool schemas
// can come from outside (MCP servers) and a long-running process must not
// grow with every schema it has ever seen.
var schemaCache = &compiledCache{m: map[string]*compiledSchema{}}

const maxCachedSchemas = 256

type compiledCache struct {
	mu sync.Mutex
	m  map[string]*compiledSchema
}

func (c *compiledCache) get(raw json.RawMessage) (*compiledSchema, error) {
	key := string(raw)
	c.mu.Lock()
	cs, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return cs, nil
	}
	cs, err := compileSchema(raw)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if len(c.m) >= maxCachedSchemas {
		clear(c.m)
	}
	c.m[key] = cs
	c.mu.Unlock()
	return cs, nil
}
