package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/weft-run/weft/llm"
)

// runTool is a tool made of a spec and a function, for exercising the
// framework with arbitrary behaviour.
type runTool struct {
	spec Spec
	run  func(ctx context.Context, call *Call) (Result, error)
}

func (t *runTool) Spec() Spec { return t.spec }
func (t *runTool) Run(ctx context.Context, call *Call) (Result, error) {
	if t.run == nil {
		return Text("ok"), nil
	}
	return t.run(ctx, call)
}

func newTool(name string, meta Meta, run func(ctx context.Context, call *Call) (Result, error)) *runTool {
	return &runTool{spec: Spec{Name: name, Description: "test tool " + name, InputSchema: json.RawMessage(`{"type":"object"}`), Meta: meta}, run: run}
}

func withSchema(t *runTool, schema string) *runTool {
	t.spec.InputSchema = json.RawMessage(schema)
	return t
}

func mustRegistry(t *testing.T, tools ...Tool) *Registry {
	t.Helper()
	r, err := NewRegistry(tools...)
	if err != nil {
		t.Fatalf("NewRegistry: %v", err)
	}
	return r
}

// logBuffer collects a registry's log output; slog handlers may write from
// tool goroutines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func captureLog(r *Registry) *logBuffer {
	b := &logBuffer{}
	r.SetLogger(slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})))
	return b
}

func specNames(specs []Spec) []string {
	out := make([]string, len(specs))
	for i, s := range specs {
		out[i] = s.Name
	}
	return out
}

func TestRegistryNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		ok   bool
	}{
		{"Read", true},
		{"a-b_C9", true},
		{strings.Repeat("x", 64), true},
		{"", false},
		{strings.Repeat("x", 65), false},
		{"a b", false},
		{"a.b", false},
		{"mcp:tool", false},
		{"ünï", false},
		{"a/b", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := (&Registry{}).Add(newTool(tt.name, Meta{}, nil))
			if (err == nil) != tt.ok {
				t.Fatalf("Add(%q) error = %v, want ok=%v", tt.name, err, tt.ok)
			}
			if err != nil && !strings.Contains(err.Error(), "is invalid") {
				t.Errorf("error %q does not say the name is invalid", err)
			}
		})
	}
}

func TestRegistrySchemas(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		schema  string
		wantErr string // "" means valid
	}{
		{"object", `{"type":"object","properties":{"a":{"type":"string"}}}`, ""},
		{"no type", `{"properties":{"a":{"type":"string"}}}`, ""},
		{"draft-07 with definitions", `{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"a":{"$ref":"#/definitions/A"}},"definitions":{"A":{"type":"string"}}}`, ""},
		{"2020-12 with defs", `{"type":"object","properties":{"a":{"$ref":"#/$defs/A"}},"$defs":{"A":{"type":"string"}}}`, ""},
		{"empty is defaulted", ``, ""},
		{"null is defaulted", `null`, ""},
		{"not JSON", `{"type":`, "not valid JSON"},
		{"array", `[1]`, "must be a JSON object"},
		{"boolean", `true`, "must be a JSON object"},
		{"string type", `{"type":"string"}`, `top-level "type" must be "object", got "string"`},
		{"bad keyword value", `{"type":"object","properties":{"a":{"type":"nope"}}}`, "input schema"},
		{"bad regexp", `{"type":"object","properties":{"a":{"type":"string","pattern":"("}}}`, "input schema"},
		{"file ref refused", `{"type":"object","properties":{"a":{"$ref":"file:///etc/passwd"}}}`, "external $ref"},
		{"http ref refused", `{"type":"object","properties":{"a":{"$ref":"https://example.com/s.json"}}}`, "external $ref"},
		{"dangling local ref", `{"type":"object","properties":{"a":{"$ref":"#/$defs/missing"}}}`, "input schema"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tl := withSchema(newTool("T", Meta{}, nil), tt.schema)
			_, err := NewRegistry(tl)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("NewRegistry: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
			}
			if !strings.HasPrefix(err.Error(), "tool T: ") {
				t.Errorf("error %q does not name the tool", err)
			}
		})
	}
}

func TestRegistryEmptySchemaDefault(t *testing.T) {
	t.Parallel()
	r := mustRegistry(t, withSchema(newTool("T", Meta{}, nil), ""))
	got := string(r.Specs()[0].InputSchema)
	if got != `{"type":"object","properties":{}}` {
		t.Fatalf("defaulted schema = %s", got)
	}
}

func TestNewRegistryReportsAllProblems(t *testing.T) {
	t.Parallel()
	_, err := NewRegistry(
		newTool("A", Meta{}, nil),
		newTool("A", Meta{}, nil),
		newTool("bad name", Meta{}, nil),
		withSchema(newTool("C", Meta{}, nil), `{"type":"array"}`),
		nil,
	)
	if err == nil {
		t.Fatal("NewRegistry accepted duplicate, invalid and broken tools")
	}
	for _, want := range []string{`tool "A" is already registered`, `tool name "bad name" is invalid`, "tool C: input schema", "tool is nil"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestRegistryAddReplaceRemoveGet(t *testing.T) {
	t.Parallel()
	a, b, c := newTool("A", Meta{}, nil), newTool("B", Meta{}, nil), newTool("C", Meta{}, nil)
	r := mustRegistry(t, a, b, c)

	if err := r.Add(newTool("B", Meta{}, nil)); err == nil || !strings.Contains(err.Error(), `"B" is already registered`) {
		t.Fatalf("Add duplicate: %v", err)
	}
	if got := specNames(r.Specs()); !slices.Equal(got, []string{"A", "B", "C"}) {
		t.Fatalf("Specs order = %v", got)
	}

	b2 := newTool("B", Meta{ReadOnly: true}, nil)
	b2.spec.Description = "replaced"
	if err := r.Replace(b2); err != nil {
		t.Fatal(err)
	}
	specs := r.Specs()
	if got := specNames(specs); !slices.Equal(got, []string{"A", "B", "C"}) {
		t.Fatalf("Replace moved the tool: %v", got)
	}
	if specs[1].Description != "replaced" || !specs[1].ReadOnly {
		t.Fatalf("Replace kept the old spec: %+v", specs[1])
	}
	if got, ok := r.Get("B"); !ok || got != Tool(b2) {
		t.Fatalf("Get(B) = %v, %v; want the replacement", got, ok)
	}

	if err := r.Replace(newTool("D", Meta{}, nil)); err != nil {
		t.Fatal(err)
	}
	if err := r.Replace(newTool("bad name", Meta{}, nil)); err == nil {
		t.Fatal("Replace accepted an invalid name")
	}
	if !r.Remove("A") {
		t.Fatal("Remove(A) = false")
	}
	if r.Remove("A") {
		t.Fatal("Remove(A) twice = true")
	}
	if _, ok := r.Get("A"); ok {
		t.Fatal("Get(A) after Remove")
	}
	if got := specNames(r.Specs()); !slices.Equal(got, []string{"B", "C", "D"}) {
		t.Fatalf("Specs after Replace/Remove = %v", got)
	}
	if err := r.Add(newTool("A", Meta{}, nil)); err != nil {
		t.Fatalf("re-Add after Remove: %v", err)
	}
	if got := specNames(r.Specs()); !slices.Equal(got, []string{"B", "C", "D", "A"}) {
		t.Fatalf("Specs after re-Add = %v", got)
	}
	if _, ok := r.Get("nope"); ok {
		t.Fatal("Get(nope) found something")
	}
}

func TestRegistryZeroValue(t *testing.T) {
	t.Parallel()
	var r Registry
	if len(r.Specs()) != 0 || r.Remove("x") {
		t.Fatal("zero registry not empty")
	}
	if err := r.Add(newTool("A", Meta{}, nil)); err != nil {
		t.Fatal(err)
	}
	res := r.Execute(context.Background(), &Call{Name: "A"})
	if res.IsError || res.TextOf() != "ok" {
		t.Fatalf("Execute on zero-value registry: %+v", res)
	}
}

func TestRegistrySpecsAreCopies(t *testing.T) {
	t.Parallel()
	tl := withSchema(newTool("T", Meta{}, nil), `{"type":"object","properties":{"n":{"type":"integer"}}}`)
	r := mustRegistry(t, tl)
	// Neither the tool's later changes nor a caller scribbling on Specs may
	// change what Execute validates against.
	tl.spec.InputSchema[0] = 'X'
	s := r.Specs()
	for i := range s[0].InputSchema {
		s[0].InputSchema[i] = ' '
	}
	if !json.Valid(r.Specs()[0].InputSchema) {
		t.Fatalf("stored schema was modified: %s", r.Specs()[0].InputSchema)
	}
	if res := r.Execute(context.Background(), &Call{Name: "T", Input: json.RawMessage(`{"n":"x"}`)}); !res.IsError {
		t.Fatal("validation lost after schema bytes were modified")
	}
}

func TestLLMSpecs(t *testing.T) {
	t.Parallel()
	r := mustRegistry(t,
		withSchema(newTool("Read", Meta{ReadOnly: true, ConcurrencySafe: true}, nil), `{"type":"object","properties":{"file_path":{"type":"string"}},"required":["file_path"]}`),
		newTool("Bash", Meta{}, nil),
	)
	got := r.LLMSpecs()
	if len(got) != 2 || got[0].Name != "Read" || got[1].Name != "Bash" {
		t.Fatalf("LLMSpecs = %+v", got)
	}
	if got[0].Description != "test tool Read" {
		t.Errorf("description = %q", got[0].Description)
	}
	b, err := json.Marshal(got[0])
	if err != nil {
		t.Fatal(err)
	}
	// Only what the model may see: no Meta.
	want := `{"name":"Read","description":"test tool Read","input_schema":{"type":"object","properties":{"file_path":{"type":"string"}},"required":["file_path"]}}`
	if string(b) != want {
		t.Errorf("LLMSpecs JSON\n got %s\nwant %s", b, want)
	}
	var _ []llm.ToolSpec = got

	// The schema is the caller's copy: changing it leaves the registry's.
	got[0].InputSchema[0] = '['
	if again := r.LLMSpecs(); again[0].InputSchema[0] != '{' {
		t.Fatalf("stored schema was modified: %s", again[0].InputSchema)
	}
}

// TestLLMSpecsAllocs: the engine calls LLMSpecs on every model call; it
// costs the slice and one copy of each schema, nothing else (it used to
// copy every whole Spec first).
func TestLLMSpecsAllocs(t *testing.T) {
	r := mustRegistry(t,
		withSchema(newTool("Read", Meta{ReadOnly: true}, nil), `{"type":"object","properties":{"file_path":{"type":"string"}}}`),
		withSchema(newTool("Grep", Meta{ReadOnly: true}, nil), `{"type":"object","properties":{"pattern":{"type":"string"}}}`),
	)
	if n := testing.AllocsPerRun(100, func() { _ = r.LLMSpecs() }); n > 1+2 {
		t.Fatalf("%.0f allocations per call for two tools, want at most 3", n)
	}
}

func TestRegistryConcurrentMutation(t *testing.T) {
	t.Parallel()
	r := mustRegistry(t, newTool("Stable", Meta{}, nil))
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				name := fmt.Sprintf("T%d_%d", i, j)
				if err := r.Add(newTool(name, Meta{}, nil)); err != nil {
					t.Error(err)
					return
				}
				_ = r.Replace(newTool(name, Meta{}, nil))
				_ = r.Specs()
				_ = r.LLMSpecs()
				if res := r.Execute(context.Background(), &Call{Name: "Stable"}); res.IsError {
					t.Errorf("Execute(Stable): %s", res.TextOf())
				}
				if !r.Remove(name) {
					t.Errorf("Remove(%s) = false", name)
				}
			}
		})
	}
	wg.Wait()
	if got := specNames(r.Specs()); !slices.Equal(got, []string{"Stable"}) {
		t.Fatalf("after concurrent add/remove: %v", got)
	}
}

// The registry remembers the last valid input of a schema (the policy
// validates a call before Execute does); the memo must never let an
// invalid input through.
func TestValidateMemoNeverPassesInvalidInput(t *testing.T) {
	t.Parallel()
	type in struct {
		N int `json:"n"`
	}
	reg, err := NewRegistry(Func("count", "counts", Meta{ReadOnly: true}, func(ctx context.Context, v in, _ *Call) (Result, error) {
		return Text("ok"), nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		input string
		ok    bool
	}{
		{`{"n":1}`, true}, {`{"n":1}`, true}, {`{"n":"1"}`, false}, {`{"n":1}`, true}, {`{"n":1.5}`, false}, {`{"n":2}`, true},
	} {
		_, err := reg.Validate("count", json.RawMessage(tc.input))
		if (err == nil) != tc.ok {
			t.Fatalf("%d: Validate(%s) = %v, want ok=%v", i, tc.input, err, tc.ok)
		}
		res := reg.Execute(context.Background(), &Call{Name: "count", Input: json.RawMessage(tc.input)})
		if res.IsError == tc.ok {
			t.Fatalf("%d: Execute(%s) = %+v", i, tc.input, res)
		}
	}
}
