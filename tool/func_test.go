package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

type point struct {
	X int `json:"x"`
	Y int `json:"y"`
}

type shapeInput struct {
	Name   string            `json:"name" jsonschema:"what to call the shape"`
	Points []point           `json:"points" jsonschema:"the vertices, in order"`
	Origin point             `json:"origin"`
	Tags   []string          `json:"tags,omitempty"`
	Scale  float64           `json:"scale,omitempty" jsonschema:"defaults to 1"`
	Closed *bool             `json:"closed,omitempty"`
	Labels map[string]string `json:"labels,omitzero"`
	Hidden string            `json:"-"`
	secret string
}

func TestFuncSchema(t *testing.T) {
	t.Parallel()
	tl := Func("Shape", "Draws a shape.", Meta{ReadOnly: true}, func(context.Context, shapeInput, *Call) (Result, error) {
		return Text("ok"), nil
	})
	spec := tl.Spec()
	if spec.Name != "Shape" || spec.Description != "Draws a shape." || !spec.ReadOnly {
		t.Fatalf("spec = %+v", spec)
	}
	var s struct {
		Type       string   `json:"type"`
		Required   []string `json:"required"`
		Additional *bool    `json:"additionalProperties"`
		Properties map[string]struct {
			Type        any    `json:"type"`
			Description string `json:"description"`
			Required    []string
			Items       *struct {
				Type     any      `json:"type"`
				Required []string `json:"required"`
			} `json:"items"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(spec.InputSchema, &s); err != nil {
		t.Fatalf("%v: %s", err, spec.InputSchema)
	}
	if s.Type != "object" || s.Additional == nil || *s.Additional {
		t.Fatalf("top level: %s", spec.InputSchema)
	}
	if !slices.Equal(s.Required, []string{"name", "points", "origin"}) {
		t.Errorf("required = %v, want fields without omitempty/omitzero", s.Required)
	}
	props := slices.Sorted(func(yield func(string) bool) {
		for k := range s.Properties {
			if !yield(k) {
				return
			}
		}
	})
	if !slices.Equal(props, []string{"closed", "labels", "name", "origin", "points", "scale", "tags"}) {
		t.Errorf("properties = %v (json:\"-\" and unexported fields must not appear)", props)
	}
	if d := s.Properties["name"].Description; d != "what to call the shape" {
		t.Errorf("name description = %q", d)
	}
	if d := s.Properties["scale"].Description; d != "defaults to 1" {
		t.Errorf("scale description = %q", d)
	}
	pts := s.Properties["points"]
	if fmt.Sprint(pts.Type) != "[null array]" || pts.Items == nil || pts.Items.Type != "object" || !slices.Equal(pts.Items.Required, []string{"x", "y"}) {
		t.Errorf("points = %+v", pts)
	}
	if s.Properties["origin"].Type != "object" || s.Properties["scale"].Type != "number" {
		t.Errorf("origin/scale types: %v %v", s.Properties["origin"].Type, s.Properties["scale"].Type)
	}
	// The generated schema compiles: the registry accepts the tool.
	if _, err := NewRegistry(tl); err != nil {
		t.Fatal(err)
	}
}

func TestFuncDecoding(t *testing.T) {
	t.Parallel()
	var got shapeInput
	var gotCall *Call
	shape := Func("Shape", "Draws a shape.", Meta{}, func(_ context.Context, in shapeInput, c *Call) (Result, error) {
		if in.Name == "tri" {
			got, gotCall = in, c
		}
		return Text(fmt.Sprintf("%s with %d points", in.Name, len(in.Points))), nil
	})
	small := Func("Small", "", Meta{}, func(_ context.Context, in struct {
		N int8 `json:"n"`
	}, _ *Call) (Result, error) {
		return Text(fmt.Sprint(in.N)), nil
	})
	// The schema of a time.Time is a plain string: a value the schema
	// accepts can still fail to decode, and the model is told so.
	when := Func("When", "", Meta{}, func(_ context.Context, in struct {
		At time.Time `json:"at"`
	}, _ *Call) (Result, error) {
		return Text(in.At.UTC().Format(time.DateOnly)), nil
	})
	none := Func("None", "Takes nothing.", Meta{}, func(context.Context, struct{}, *Call) (Result, error) {
		return Text("nothing"), nil
	})
	anyKeys := Func("Any", "", Meta{}, func(_ context.Context, in map[string]any, _ *Call) (Result, error) {
		return Text(fmt.Sprint(len(in))), nil
	})
	fail := Func("Fail", "", Meta{}, func(context.Context, struct{}, *Call) (Result, error) {
		return Result{}, errors.New("no such shape")
	})
	r := mustRegistry(t, shape, small, when, none, anyKeys, fail)

	tests := []struct {
		tool, input, want string
		isError           bool
	}{
		{"Shape", `{"name":"tri","points":[{"x":0,"y":0},{"x":1,"y":0},{"x":0,"y":1}],"origin":{"x":5,"y":6},"closed":true,"labels":{"a":"b"}}`, "tri with 3 points", false},
		{"Shape", `{"name":"empty","points":null,"origin":{"x":0,"y":0}}`, "empty with 0 points", false},
		{"Shape", `{"name":"tri","points":[],"origin":{"x":0,"y":0},"extra":1}`,
			`invalid arguments for Shape: unexpected property "extra" (allowed: closed, labels, name, origin, points, scale, tags)`, true},
		{"Shape", `{"name":"tri","points":[{"x":0}],"origin":{"x":0,"y":0}}`,
			`invalid arguments for Shape: /points/0: missing required property "y"`, true},
		{"Shape", `{"name":"tri","points":[],"origin":{"x":0,"y":0,"z":1}}`,
			`invalid arguments for Shape: /origin: unexpected property "z" (allowed: x, y)`, true},
		{"Shape", `{"points":[],"origin":{"x":0,"y":0}}`, `invalid arguments for Shape: missing required property "name"`, true},
		{"Small", `{"n":100}`, "100", false},
		{"Small", `{"n":300}`, "invalid arguments for Small: /n: maximum: got 300, want 127", true},
		{"When", `{"at":"2026-11-29T10:00:00Z"}`, "2026-11-29", false},
		{"When", `{"at":"tomorrow"}`, `invalid arguments for When: parsing time "tomorrow" as "2006-01-02T15:04:05Z07:00": cannot parse "tomorrow" as "2006"`, true},
		{"None", ``, "nothing", false},
		{"None", `{"x":1}`, `invalid arguments for None: unexpected property "x"`, true},
		{"Any", `{"a":1,"b":[2]}`, "2", false},
		{"Fail", `{}`, "no such shape", true},
	}
	for _, tt := range tests {
		res := r.Execute(context.Background(), &Call{ID: "c", Name: tt.tool, Input: json.RawMessage(tt.input)})
		if res.IsError != tt.isError || res.TextOf() != tt.want {
			t.Errorf("%s %s:\n got %q (error=%v)\nwant %q", tt.tool, tt.input, res.TextOf(), res.IsError, tt.want)
		}
	}
	want := shapeInput{Name: "tri", Points: []point{{0, 0}, {1, 0}, {0, 1}}, Origin: point{5, 6}, Labels: map[string]string{"a": "b"}}
	if got.Closed == nil || !*got.Closed {
		t.Fatalf("closed not decoded: %+v", got)
	}
	got.Closed = nil
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("decoded %+v, want %+v", got, want)
	}
	if gotCall == nil || gotCall.ID != "c" || gotCall.Session == nil {
		t.Fatalf("call not passed: %+v", gotCall)
	}
}

func TestFuncRunDirectly(t *testing.T) {
	t.Parallel()
	// Run outside a registry (e.g. a test of the tool itself) treats empty
	// input as {} like Execute does.
	tl := Func("Count", "", Meta{}, func(_ context.Context, in struct {
		N int `json:"n,omitempty"`
	}, _ *Call) (Result, error) {
		return Text(fmt.Sprint(in.N)), nil
	})
	res, err := tl.Run(context.Background(), &Call{})
	if err != nil || res.TextOf() != "0" {
		t.Fatalf("Run with no input: %v %+v", err, res)
	}
}

func TestFuncBadType(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		tool Tool
		want string
	}{
		{"channel field", Func("Chan", "", Meta{}, func(context.Context, struct {
			C chan int `json:"c"`
		}, *Call) (Result, error) {
			return Result{}, nil
		}), "tool Chan: input schema from Go type"},
		{"not an object", Func("Str", "", Meta{}, func(context.Context, string, *Call) (Result, error) {
			return Result{}, nil
		}), `tool Str: input schema: top-level "type" must be "object"`},
		{"nil func", Func[struct{}]("Nil", "", Meta{}, nil), "tool Nil: nil function"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := NewRegistry(tt.tool)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("NewRegistry error = %v, want %q", err, tt.want)
			}
			if strings.Contains(tt.want, "Go type") || strings.Contains(tt.want, "nil function") {
				if _, err := tt.tool.Run(context.Background(), &Call{}); err == nil {
					t.Fatal("Run of a broken Func succeeded")
				}
			}
		})
	}
}

func TestIsFalseSchema(t *testing.T) {
	t.Parallel()
	for raw, want := range map[string]bool{`false`: true, ` false `: true, `{"not":{}}`: true, `true`: false, `{}`: false, ``: false, `{"type":"string"}`: false, `{"not":{"type":"string"}}`: false} {
		if got := isFalseSchema(json.RawMessage(raw)); got != want {
			t.Errorf("isFalseSchema(%s) = %v", raw, got)
		}
	}
}
