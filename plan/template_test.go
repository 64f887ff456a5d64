package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func raw(s string) json.RawMessage { return json.RawMessage(s) }

// testScope has two steps ("fetch" at 0, "count" at 1) and renders step 2.
func testScope() Scope {
	return Scope{
		Results: map[string]json.RawMessage{
			"fetch": raw(`{ "items": [ {"name": "a", "tags": ["x", "y"]}, {"name": "b"} ], "a.b": true, "q\"k": 7 }`),
			"count": raw(`42`),
			"text":  raw(`plain text, not JSON`),
			"n":     raw(`null`),
		},
		Order:  []string{"fetch", "count", "text", "n"},
		Inputs: map[string]json.RawMessage{"name": raw(`"Ada"`), "opts": raw(`{"depth": 2, "on": true}`), "nothing": raw(`null`)},
		Files:  map[string]json.RawMessage{"report": raw(`{"path": "/tmp/r.xlsx", "id": "f1"}`)},
		Index:  2,
	}
}

func TestRender(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args string
		want string
	}{
		{"no placeholders compacts and keeps key order", `{ "z": 1, "a": [ true, null, 1.50e3 ], "m": {"b": "x", "a": "y"} }`,
			`{"z":1,"a":[true,null,1.50e3],"m":{"b":"x","a":"y"}}`},
		{"whole value keeps object type", `{"v": "{{steps.0.result}}"}`,
			`{"v":{"items":[{"name":"a","tags":["x","y"]},{"name":"b"}],"a.b":true,"q\"k":7}}`},
		{"whole value by id keeps number type", `{"n": "{{steps.count.result}}"}`, `{"n":42}`},
		{"path with index", `{"v": "{{steps.fetch.result.items[0].tags[1]}}"}`, `{"v":"y"}`},
		{"numeric field on an array indexes it", `{"v": "{{steps.0.result.items.1.name}}"}`, `{"v":"b"}`},
		{"quoted field with a dot", `{"v": "{{steps.0.result[\"a.b\"]}}"}`, `{"v":true}`},
		{"quoted field with a quote", `{"v": "{{steps.0.result[\"q\\\"k\"]}}"}`, `{"v":7}`},
		{"path to an array", `{"v": "{{steps.0.result.items[0].tags}}"}`, `{"v":["x","y"]}`},
		{"whitespace inside braces", `{"v": "{{  steps.1.result }}"}`, `{"v":42}`},
		{"last result", `{"v": "{{last.result}}"}`, `{"v":42}`},
		{"input whole", `{"v": "{{inputs.opts}}"}`, `{"v":{"depth":2,"on":true}}`},
		{"input path", `{"v": "{{inputs.opts.depth}}"}`, `{"v":2}`},
		// A null input (an optional input left out) leaves its argument out.
		{"null input alone removes its key", `{"v": "{{inputs.nothing}}"}`, `{}`},
		{"null input between keys", `{"a": 1, "v": "{{ inputs.nothing }}", "b": "{{inputs.name}}"}`, `{"a":1,"b":"Ada"}`},
		{"null input first and last", `{"v": "{{inputs.nothing}}", "a": [], "w": "{{inputs.nothing}}"}`, `{"a":[]}`},
		{"null input in an array", `["x", "{{inputs.nothing}}", "y", "{{inputs.nothing}}"]`, `["x","y"]`},
		{"null input nested", `{"o": {"v": "{{inputs.nothing}}"}, "l": [{"v": "{{inputs.nothing}}"}]}`, `{"o":{},"l":[{}]}`},
		{"null input as the whole args", `"{{inputs.nothing}}"`, `null`},
		{"null step result keeps null", `{"v": "{{steps.n.result}}"}`, `{"v":null}`},
		{"file", `{"f": "@file:report"}`, `{"f":{"path":"/tmp/r.xlsx","id":"f1"}}`},
		{"embedded string is unquoted", `{"v": "Hello {{inputs.name}}!"}`, `{"v":"Hello Ada!"}`},
		{"embedded number", `{"v": "n={{steps.count.result}}"}`, `{"v":"n=42"}`},
		{"embedded object is compact JSON", `{"v": "o={{inputs.opts}}"}`, `{"v":"o={\"depth\":2,\"on\":true}"}`},
		{"embedded null result", `{"v": "[{{steps.n.result}}]"}`, `{"v":"[null]"}`},
		{"two placeholders", `{"v": "{{inputs.name}}:{{steps.count.result}}"}`, `{"v":"Ada:42"}`},
		{"plain text result is a string", `{"v": "{{steps.text.result}}", "w": "<{{steps.2.result}}>"}`,
			`{"v":"plain text, not JSON","w":"<plain text, not JSON>"}`},
		{"escapes around a placeholder", `{"v": "line\n\"{{inputs.name}}\"\t\u00e9<&>"}`, `{"v":"line\n\"Ada\"\té<&>"}`},
		{"escaped braces are still a placeholder", `{"v": "\u007b{inputs.name}}"}`, `{"v":"Ada"}`},
		{"keys are not expanded", `{"{{inputs.name}}": "{{inputs.name}}"}`, `{"{{inputs.name}}":"Ada"}`},
		{"other template languages untouched", `{"v": "{{ name }} and {{user.id}} and {{}}"}`, `{"v":"{{ name }} and {{user.id}} and {{}}"}`},
		{"extra braces around a placeholder", `{"v": "{{{inputs.name}}}"}`, `{"v":"{Ada}"}`},
		{"unterminated braces are text", `{"v": "{{inputs.name"}`, `{"v":"{{inputs.name"}`},
		{"file prefix only as the whole value", `{"v": "see @file:report"}`, `{"v":"see @file:report"}`},
		{"nested arrays and objects", `{"a": [{"b": ["{{steps.count.result}}", "x{{steps.count.result}}"]}]}`, `{"a":[{"b":[42,"x42"]}]}`},
		{"non-object args", `["{{steps.count.result}}"]`, `[42]`},
		{"empty args", ``, ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Render(raw(tt.args), testScope())
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			if string(got) != tt.want {
				t.Errorf("Render(%s)\n got %s\nwant %s", tt.args, got, tt.want)
			}
			if len(got) > 0 && !json.Valid(got) {
				t.Errorf("output is not valid JSON: %s", got)
			}
		})
	}
}

func TestRenderErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args string
		want []string // substrings of the error
	}{
		{"missing result", `{"v": "{{steps.later.result}}"}`, []string{"{{steps.later.result}}", "/v", `step "later" has no result`}},
		{"position out of range", `{"v": "{{steps.9.result}}"}`, []string{"{{steps.9.result}}", "no step at position 9"}},
		{"missing field", `{"v": "{{steps.0.result.items[0].nope}}"}`, []string{"{{steps.0.result.items[0].nope}}", `no field "nope" in ".items[0]"`}},
		{"index out of range", `{"v": "x {{steps.0.result.items[5]}}"}`, []string{"index 5 is out of range", "has 2 elements"}},
		{"index on an object", `{"v": "{{steps.0.result[0]}}"}`, []string{"cannot index the value: it is an object"}},
		{"field of a number", `{"v": "{{steps.count.result.x}}"}`, []string{`no field "x": the value is a number`}},
		{"missing input", `{"v": "{{inputs.missing}}"}`, []string{`input "missing" was not given`}},
		{"null input inside text", `{"v": "rm -rf /tmp/{{inputs.nothing}}"}`, []string{`input "nothing" was not given (it is null)`, "only as a whole value"}},
		{"path into a null input", `{"v": "{{inputs.nothing.a}}"}`, []string{`input "nothing" was not given (it is null)`}},
		{"missing file", `{"v": "@file:secret"}`, []string{"@file:secret", `file "secret" is not granted`}},
		{"empty file name", `{"v": "@file:"}`, []string{"needs a file name"}},
		{"steps without result", `{"v": "{{steps.0}}"}`, []string{"{{steps.0}}", "write {{steps.<position or id>.result}}"}},
		{"results is not result", `{"v": "{{steps.0.results}}"}`, []string{"write {{steps"}},
		{"last without result", `{"a": {"b": "{{ last }}"}}`, []string{"{{ last }}", "/a/b", "write {{last.result}}"}},
		{"inputs without a name", `{"v": "{{inputs}}"}`, []string{"write {{inputs.<name>}}"}},
		{"bad index", `{"v": "{{steps.0.result.items[x]}}"}`, []string{"index must be [<digits>]"}},
		{"empty field", `{"v": "{{steps.0.result..a}}"}`, []string{"empty field name"}},
		{"space inside the path", `{"v": "{{inputs.name .a}}"}`, []string{"unexpected"}},
		{"space after result", `{"v": "{{steps.0.result .a}}"}`, []string{"write {{steps"}},
		{"invalid JSON", `{"v": `, []string{"not valid JSON"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Render(raw(tt.args), testScope())
			if err == nil {
				t.Fatalf("Render(%s) succeeded, want an error", tt.args)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestRenderErrorIsTyped(t *testing.T) {
	t.Parallel()
	_, err := Render(raw(`{"x": ["{{steps.nope.result}}"]}`), Scope{})
	var te *TemplateError
	if !errors.As(err, &te) {
		t.Fatalf("error %v is not a *TemplateError", err)
	}
	if te.Placeholder != "{{steps.nope.result}}" || te.Pointer != "/x/0" {
		t.Errorf("got placeholder %q pointer %q", te.Placeholder, te.Pointer)
	}
}

func TestLastWithoutPreviousStep(t *testing.T) {
	t.Parallel()
	sc := testScope()
	sc.Index = 0
	if _, err := Render(raw(`{"v": "{{last.result}}"}`), sc); err == nil || !strings.Contains(err.Error(), "no previous step") {
		t.Fatalf("got %v, want a no-previous-step error", err)
	}
}

func TestRefs(t *testing.T) {
	t.Parallel()
	args := raw(`{"a": "{{steps.fetch.result.items[0]}}", "b": ["x {{last.result}} {{inputs.n.k}}"], "c/d": {"~e": "@file:rep"}, "{{inputs.key}}": 1, "z": "{{ other }}"}`)
	got, err := Refs(args)
	if err != nil {
		t.Fatal(err)
	}
	want := []Placeholder{
		{Kind: KindStep, Target: "fetch", Path: ".items[0]", Text: "{{steps.fetch.result.items[0]}}", Pointer: "/a", Whole: true},
		{Kind: KindLast, Text: "{{last.result}}", Pointer: "/b/0"},
		{Kind: KindInput, Target: "n", Path: ".k", Text: "{{inputs.n.k}}", Pointer: "/b/0"},
		{Kind: KindFile, Target: "rep", Text: "@file:rep", Pointer: "/c~1d/~0e", Whole: true},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d placeholders %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		g := got[i]
		g.elems, want[i].elems = nil, nil
		if !reflect.DeepEqual(g, want[i]) {
			t.Errorf("placeholder %d:\n got %+v\nwant %+v", i, g, want[i])
		}
	}
	if _, err := Refs(raw(`{"a": "{{steps.x}}"}`)); err == nil {
		t.Error("Refs accepted a malformed placeholder")
	}
}

func TestResultOf(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		`{"a": 1}`:      `{"a":1}`,
		" 42\n":         `42`,
		`hello "world"`: `"hello \"world\""`,
		``:              `""`,
		`[1, 2`:         `"[1, 2"`,
	} {
		if got := string(ResultOf(in)); got != want {
			t.Errorf("ResultOf(%q) = %s, want %s", in, got, want)
		}
	}
}

func FuzzRender(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"a": "{{steps.0.result}}"}`, `{"a": "x{{last.result}}y", "b": [1, 2.5e3, null]}`,
		`{"a": "{{inputs.x.y[0]}}"}`, `{"f": "@file:f"}`, `{"k": "{{ not ours }}"}`, `"{{steps.a.result[\"q\"]}}"`,
		`{"a": "\u007b{steps.0.result}}"}`, `[{"a": {"b": ["{{{inputs.x}}}"]}}]`, `{"a":"{{steps.0.result.0.1}}"}`,
		`{"a": "\ud800 bad surrogate {{inputs.x}}"}`, `{"{{steps.0.result}}": "{{inputs.x"}`,
		`{"a": "{{inputs.n}}", "b": ["{{inputs.n}}", 1, "{{inputs.n}}"], "c": {"d": "{{ inputs.n }}"}}`, `"{{inputs.n}}"`,
	} {
		f.Add(s)
	}
	sc := Scope{
		Results: map[string]json.RawMessage{"s0": raw(`{"q": [1, {"r": "s"}], "0": [[5, 6]]}`), "a": raw(`"text"`)},
		Order:   []string{"s0", "a"},
		Inputs:  map[string]json.RawMessage{"x": raw(`{"y": ["z"]}`), "n": raw(`null`)},
		Files:   map[string]json.RawMessage{"f": raw(`"/tmp/f"`)},
		Index:   2,
	}
	f.Fuzz(func(t *testing.T, s string) {
		args := json.RawMessage(s)
		out, err := Render(args, sc)
		if err == nil && len(bytes.TrimSpace(args)) > 0 && !json.Valid(out) {
			t.Fatalf("Render(%q) = %q: not valid JSON", s, out)
		}
		refs, rerr := Refs(args)
		if rerr != nil || len(refs) > 0 || !json.Valid(args) {
			return
		}
		// Without placeholders, rendering is the identity up to compaction,
		// whatever the scope holds.
		out, err = Render(args, Scope{})
		if err != nil {
			t.Fatalf("Render(%q) without placeholders failed: %v", s, err)
		}
		var want bytes.Buffer
		if err := json.Compact(&want, args); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out, want.Bytes()) {
			t.Fatalf("Render(%q)\n got %q\nwant %q", s, out, want.Bytes())
		}
	})
}
