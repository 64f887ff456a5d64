package plan

import (
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/weft-run/weft/tool"
)

func testTools() map[string]tool.Spec {
	return map[string]tool.Spec{
		"Read": {Name: "Read", InputSchema: raw(`{"type":"object","properties":{"file_path":{"type":"string"},"limit":{"type":"integer"}},"required":["file_path"],"additionalProperties":false}`),
			Meta: tool.Meta{ReadOnly: true, Effect: tool.EffectRead}},
		"Fetch": {Name: "Fetch", InputSchema: raw(`{"type":"object","properties":{"url":{"type":"string"},"opts":{"type":"object","properties":{"depth":{"type":"integer"}}}},"required":["url"]}`),
			Meta: tool.Meta{ReadOnly: true, Effect: tool.EffectExternal}},
		"Write": {Name: "Write", InputSchema: raw(`{"type":"object","properties":{"file_path":{"type":"string"},"content":{"type":"string"}},"required":["file_path","content"]}`),
			Meta: tool.Meta{Effect: tool.EffectWrite}},
		"Noop": {Name: "Noop"},
	}
}

func testEnv() Env {
	tools := testTools()
	return Env{
		Tool:   func(name string) (tool.Spec, bool) { s, ok := tools[name]; return s, ok },
		Inputs: map[string]bool{"repo": true},
		Files:  map[string]bool{"report": true},
	}
}

func mustPlan(t *testing.T, s string) Plan {
	t.Helper()
	var p Plan
	if err := json.Unmarshal([]byte(s), &p); err != nil {
		t.Fatalf("decoding plan: %v", err)
	}
	return p
}

func TestValidateAccepts(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, plan string }{
		{"ids optional, positions and ids mixed", `{"steps": [
			{"tool": "Read", "args": {"file_path": "a"}},
			{"id": "b", "tool": "Read", "args": {"file_path": "b"}},
			{"tool": "Write", "args": {"file_path": "c", "content": "{{steps.0.result}} {{steps.b.result}}"}, "dependsOn": [0, "b"]}]}`},
		{"transitive dependency", `{"steps": [
			{"id": "a", "tool": "Read", "args": {"file_path": "a"}},
			{"id": "b", "tool": "Noop", "dependsOn": ["a"]},
			{"id": "c", "tool": "Write", "args": {"file_path": "{{steps.a.result.path}}", "content": "x"}, "dependsOn": ["b"]}]}`},
		{"whole placeholders satisfy required and skip type checks", `{"steps": [
			{"id": "a", "tool": "Fetch", "args": {"url": "{{inputs.repo}}", "opts": "{{inputs.repo}}"}},
			{"id": "b", "tool": "Read", "args": {"file_path": "@file:report", "limit": "{{last.result.n}}"}, "dependsOn": ["a"]}]}`},
		{"default id referenced by name", `{"steps": [
			{"tool": "Noop"}, {"tool": "Noop", "args": {}, "dependsOn": ["step-1"]}]}`},
		{"null args mean none", `{"steps": [{"id": "a", "tool": "Noop", "args": null}]}`},
		{"unknown fields ignored", `{"title": "x", "steps": [{"id": "a", "tool": "Noop", "position": {"x": 1}}]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if err := Validate(mustPlan(t, tt.plan), testEnv()); err != nil {
				t.Fatalf("Validate: %v", err)
			}
		})
	}
}

func TestValidateRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		plan string
		env  func(*Env)
		want string // one line of the error
	}{
		{"too many steps", `{"steps": [{"id":"a","tool":"Noop"},{"id":"b","tool":"Noop"},{"id":"c","tool":"Noop"}]}`,
			func(e *Env) { e.MaxSteps = 2 }, `plan: has 3 steps, more than the limit of 2`},
		{"default limit is 64", manySteps(65), nil, `plan: has 65 steps, more than the limit of 64`},
		{"no steps", `{"steps": []}`, nil, `plan: has no steps`},
		{"bad id", `{"steps": [{"id": "a b", "tool": "Noop"}]}`, nil, `step 0 ("a b"): id "a b" may hold only letters, digits, '_' and '-'`},
		{"numeric id", `{"steps": [{"id": "7", "tool": "Noop"}]}`, nil, `step 0 ("7"): id "7" is a number`},
		{"duplicate id", `{"steps": [{"id": "a", "tool": "Noop"}, {"id": "a", "tool": "Noop"}]}`, nil, `step 1 ("a"): duplicate id "a" (step 0 has it too)`},
		{"default id taken", `{"steps": [{"id": "step-2", "tool": "Noop"}, {"tool": "Noop"}]}`, nil, `step 1 ("step-2"): has no id and its default id "step-2" is the id of step 0`},
		{"id is another's default", `{"steps": [{"tool": "Noop"}, {"id": "step-1", "tool": "Noop"}]}`, nil, `step 1 ("step-1"): id "step-1" is the default id of step 0`},
		{"no tool", `{"steps": [{"id": "a"}]}`, nil, `step 0 ("a"): has no tool`},
		{"unknown tool", `{"steps": [{"id": "a", "tool": "Nuke"}]}`, nil, `step 0 ("a"): unknown tool "Nuke"`},
		{"no tools at all", `{"steps": [{"id": "a", "tool": "Noop"}]}`, func(e *Env) { e.Tool = nil }, `step 0 ("a"): unknown tool "Noop"`},
		{"unknown dependency", `{"steps": [{"id": "a", "tool": "Noop"}, {"id": "fetch", "tool": "Noop", "dependsOn": ["x"]}]}`, nil,
			`step 1 ("fetch"): depends on unknown step "x"`},
		{"dependency out of range", `{"steps": [{"id": "a", "tool": "Noop", "dependsOn": [3]}]}`, nil, `step 0 ("a"): depends on step 3, but the plan has 1 steps`},
		{"negative dependency", `{"steps": [{"id": "a", "tool": "Noop", "dependsOn": [-1]}]}`, nil, `step 0 ("a"): depends on unknown step "-1"`},
		{"forward dependency", `{"steps": [{"id": "a", "tool": "Noop", "dependsOn": ["b"]}, {"id": "b", "tool": "Noop"}]}`, nil,
			`step 0 ("a"): depends on step 1 ("b"), which comes later`},
		{"self dependency", `{"steps": [{"id": "a", "tool": "Noop", "dependsOn": [0]}]}`, nil, `step 0 ("a"): depends on itself`},
		{"reference to a non-dependency", `{"steps": [{"id": "a", "tool": "Noop"}, {"id": "b", "tool": "Read", "args": {"file_path": "{{steps.a.result}}"}}]}`, nil,
			`step 1 ("b"): args /file_path: {{steps.a.result}} refers to step 0 ("a"), which is not among its dependencies`},
		{"reference to a later step", `{"steps": [{"id": "a", "tool": "Read", "args": {"file_path": "x{{steps.1.result}}"}}, {"id": "b", "tool": "Noop"}]}`, nil,
			`step 0 ("a"): args /file_path: {{steps.1.result}} refers to step 1 ("b"), which comes later`},
		{"reference to an unknown step", `{"steps": [{"id": "a", "tool": "Read", "args": {"file_path": "{{steps.zz.result}}"}}]}`, nil,
			`step 0 ("a"): args /file_path: {{steps.zz.result}} refers to unknown step "zz"`},
		{"reference to itself", `{"steps": [{"id": "a", "tool": "Read", "args": {"file_path": "{{steps.a.result}}"}}]}`, nil,
			`step 0 ("a"): args /file_path: {{steps.a.result}} refers to this step's own result`},
		{"last in the first step", `{"steps": [{"id": "a", "tool": "Read", "args": {"file_path": "{{last.result}}"}}]}`, nil,
			`step 0 ("a"): args /file_path: {{last.result}}: the first step has no previous step`},
		{"last not a dependency", `{"steps": [{"id": "a", "tool": "Noop"}, {"id": "b", "tool": "Read", "args": {"file_path": "{{last.result}}"}}]}`, nil,
			`step 1 ("b"): args /file_path: {{last.result}} refers to the previous step 0 ("a"), which is not among its dependencies`},
		{"undeclared input", `{"steps": [{"id": "a", "tool": "Read", "args": {"file_path": "{{inputs.branch}}"}}]}`, nil,
			`step 0 ("a"): args /file_path: {{inputs.branch}}: input "branch" is not declared`},
		{"no inputs declared", `{"steps": [{"id": "a", "tool": "Read", "args": {"file_path": "{{inputs.repo}}"}}]}`, func(e *Env) { e.Inputs = nil },
			`step 0 ("a"): args /file_path: {{inputs.repo}}: input "repo" is not declared`},
		{"file not granted", `{"steps": [{"id": "a", "tool": "Read", "args": {"file_path": "@file:secrets"}}]}`, nil,
			`step 0 ("a"): args /file_path: @file:secrets: file "secrets" is not granted`},
		{"args not an object", `{"steps": [{"id": "a", "tool": "Read", "args": ["x"]}]}`, nil, `step 0 ("a"): args must be a JSON object, got an array`},
		{"args a whole placeholder", `{"steps": [{"id": "a", "tool": "Read", "args": "{{inputs.repo}}"}]}`, nil, `step 0 ("a"): args must be a JSON object, got a string`},
		{"malformed placeholder", `{"steps": [{"id": "a", "tool": "Read", "args": {"file_path": "{{steps.a}}"}}]}`, nil,
			`step 0 ("a"): args /file_path: {{steps.a}}: write {{steps.<position or id>.result}}`},
		{"missing required property", `{"steps": [{"id": "a", "tool": "Write", "args": {"file_path": "x"}}]}`, nil,
			`step 0 ("a"): args: missing required property "content"`},
		{"no args for a tool with required properties", `{"steps": [{"id": "a", "tool": "Read"}]}`, nil,
			`step 0 ("a"): args: missing required property "file_path"`},
		{"wrong type", `{"steps": [{"id": "a", "tool": "Read", "args": {"file_path": 3}}]}`, nil,
			`step 0 ("a"): args /file_path: got number, want string`},
		{"embedded placeholder is a string", `{"steps": [{"id": "a", "tool": "Read", "args": {"file_path": "x", "limit": "n{{inputs.repo}}"}}]}`, nil,
			`step 0 ("a"): args /limit: got string, want integer`},
		{"unexpected property", `{"steps": [{"id": "a", "tool": "Read", "args": {"file_path": "x", "mode": "fast"}}]}`, nil,
			`step 0 ("a"): args: unexpected property "mode"`},
		{"nested type under a known value", `{"steps": [{"id": "a", "tool": "Fetch", "args": {"url": "u", "opts": {"depth": "deep"}}}]}`, nil,
			`step 0 ("a"): args /opts/depth: got string, want integer`},
	}
	lineRE := regexp.MustCompile(`^(plan|step \d+ \(".*"\)): `)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := testEnv()
			if tt.env != nil {
				tt.env(&env)
			}
			err := Validate(mustPlan(t, tt.plan), env)
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("Validate = %v, want a *ValidationError", err)
			}
			found := false
			for _, line := range strings.Split(err.Error(), "\n") {
				if !lineRE.MatchString(line) {
					t.Errorf("line %q does not name the step", line)
				}
				found = found || strings.HasPrefix(line, tt.want)
			}
			if !found {
				t.Errorf("error\n%v\nhas no line starting with\n%s", err, tt.want)
			}
		})
	}
}

func manySteps(n int) string {
	var sb strings.Builder
	sb.WriteString(`{"steps": [`)
	for i := range n {
		if i > 0 {
			sb.WriteString(",")
		}
		sb.WriteString(`{"tool": "Noop"}`)
	}
	sb.WriteString("]}")
	return sb.String()
}

func TestValidateLiftedLimit(t *testing.T) {
	t.Parallel()
	p := mustPlan(t, manySteps(1000))
	env := testEnv()
	env.MaxSteps = 1000
	if err := Validate(p, env); err != nil {
		t.Fatal(err)
	}
	env.MaxSteps = -1
	if err := Validate(p, env); err != nil {
		t.Fatal(err)
	}
}

func TestValidateListsEveryProblem(t *testing.T) {
	t.Parallel()
	p := mustPlan(t, `{"steps": [{"id": "a", "tool": "Nuke"}, {"id": "b", "tool": "Noop", "dependsOn": ["zz"]}]}`)
	var ve *ValidationError
	if !errors.As(Validate(p, testEnv()), &ve) || len(ve.Problems) != 2 {
		t.Fatalf("got %+v, want two problems", ve)
	}
	if ve.Problems[0].Step != 0 || ve.Problems[0].StepID != "a" || ve.Problems[1].Step != 1 || ve.Problems[1].StepID != "b" {
		t.Errorf("problems do not name their steps: %+v", ve.Problems)
	}
}
