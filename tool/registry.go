package tool

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/weft-run/weft/llm"
)

// validName is the tool-name grammar Anthropic, OpenAI and Gemini all
// accept; anything else would be rejected by at least one provider only
// when the first request goes out, far from the registration that caused it.
var validName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// Registry holds the tools of a session or an agent and is the one place
// tool calls are executed (see Execute). It is safe for concurrent use; the
// zero value is an empty registry ready to use.
type Registry struct {
	mu      sync.RWMutex
	entries []*entry // registration order: the order the model sees
	byName  map[string]*entry

	logger atomic.Pointer[slog.Logger]
}

// entry is a registered tool with what Add derived from it once, so that
// Execute never recompiles a schema and always sees the spec it validated.
type entry struct {
	tool   Tool
	spec   Spec
	schema *compiledSchema
}

// NewRegistry returns a registry holding tools, in order. It reports every
// problem at once (duplicate names, invalid names, schemas that do not
// compile) so a misconfigured tool set is fixed in one pass.
func NewRegistry(tools ...Tool) (*Registry, error) {
	r := &Registry{}
	var errs []error
	for _, t := range tools {
		if err := r.Add(t); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return r, nil
}

// SetLogger sets where the registry logs recovered panics (with their
// stack) and abandoned tool goroutines; nil means slog.Default().
func (r *Registry) SetLogger(l *slog.Logger) { r.logger.Store(l) }

func (r *Registry) log() *slog.Logger {
	if l := r.logger.Load(); l != nil {
		return l
	}
	return slog.Default()
}

// Add registers t. It fails if the name is taken or invalid, or if the
// input schema does not compile.
func (r *Registry) Add(t Tool) error {
	e, err := newEntry(t)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.byName[e.spec.Name]; ok {
		return fmt.Errorf("tool %q is already registered", e.spec.Name)
	}
	r.insert(e)
	return nil
}

// Replace registers t, replacing a tool of the same name in its position
// (so the order the model sees, and with it the prompt cache, is kept).
func (r *Registry) Replace(t Tool) error {
	e, err := newEntry(t)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if old, ok := r.byName[e.spec.Name]; ok {
		r.entries[slices.Index(r.entries, old)] = e
		r.byName[e.spec.Name] = e
		return nil
	}
	r.insert(e)
	return nil
}

func (r *Registry) insert(e *entry) {
	if r.byName == nil {
		r.byName = map[string]*entry{}
	}
	r.entries = append(r.entries, e)
	r.byName[e.spec.Name] = e
}

// Subset returns a registry of the tools keep accepts, in this one's
// order, sharing what Add derived from each (the compiled schemas): a
// sub-agent's filtered tool set costs no recompilation. keep must not
// change the spec it is given. The two registries are independent from
// then on.
func (r *Registry) Subset(keep func(t Tool, spec Spec) bool) *Registry {
	out := &Registry{}
	if l := r.logger.Load(); l != nil {
		out.logger.Store(l)
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, e := range r.entries {
		if keep(e.tool, e.spec) {
			out.insert(e)
		}
	}
	return out
}

// Remove unregisters the named tool and reports whether it was there.
// Calls already executing finish normally.
func (r *Registry) Remove(name string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.byName[name]
	if !ok {
		return false
	}
	delete(r.byName, name)
	r.entries = slices.DeleteFunc(r.entries, func(x *entry) bool { return x == e })
	return true
}

// Get returns the named tool.
func (r *Registry) Get(name string) (Tool, bool) {
	e := r.lookup(name)
	if e == nil {
		return nil, false
	}
	return e.tool, true
}

func (r *Registry) lookup(name string) *entry {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.byName[name]
}

// names returns the registered tool names in registration order.
func (r *Registry) names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, len(r.entries))
	for i, e := range r.entries {
		out[i] = e.spec.Name
	}
	return out
}

// Specs returns the specs of the registered tools in registration order,
// as captured when each was added. The input schemas are copies: changing
// them cannot desynchronise what the model is told from what Execute
// validates.
func (r *Registry) Specs() []Spec {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]Spec, len(r.entries))
	for i, e := range r.entries {
		s := e.spec
		s.InputSchema = bytes.Clone(s.InputSchema)
		out[i] = s
	}
	return out
}

// LLMSpecs returns what the model is told about the registered tools, in
// registration order.
func (r *Registry) LLMSpecs() []llm.ToolSpec {
	// The engine asks for these on every model call: built here directly
	// rather than through Specs, which copies every whole Spec first.
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]llm.ToolSpec, len(r.entries))
	for i, e := range r.entries {
		out[i] = e.spec.LLM()
		out[i].InputSchema = bytes.Clone(e.spec.InputSchema)
	}
	return out
}

// specErrorer is implemented by tools that can be constructed in a broken
// state (Func with an input type that has no JSON Schema); Add reports the
// problem instead of the constructor panicking.
type specErrorer interface{ specError() error }

func newEntry(t Tool) (*entry, error) {
	if t == nil {
		return nil, errors.New("tool is nil")
	}
	spec := t.Spec()
	if !validName.MatchString(spec.Name) {
		return nil, fmt.Errorf("tool name %q is invalid: use 1 to 64 letters, digits, '_' or '-'", spec.Name)
	}
	if se, ok := t.(specErrorer); ok {
		if err := se.specError(); err != nil {
			return nil, fmt.Errorf("tool %s: %w", spec.Name, err)
		}
	}
	if isEmptyJSON(spec.InputSchema) {
		spec.InputSchema = emptyObjectSchema()
	}
	cs, err := compileSchema(spec.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("tool %s: input schema: %w", spec.Name, err)
	}
	spec.InputSchema = bytes.Clone(spec.InputSchema)
	return &entry{tool: t, spec: spec, schema: cs}, nil
}
