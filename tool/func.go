package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
)

// Func returns a tool whose input schema is generated from In and whose
// validated input is decoded into an In before fn runs.
//
// The schema follows google/jsonschema-go (jsonschema.For): properties take
// their JSON names, a field is required unless its json tag says omitempty
// or omitzero, a `jsonschema:"..."` tag is the property's description,
// nested structs and slices become nested object and array schemas, and
// structs allow no properties beyond their fields. For example
//
//	type readInput struct {
//		Path   string `json:"path" jsonschema:"absolute path of the file"`
//		Offset int    `json:"offset,omitempty" jsonschema:"line to start at"`
//	}
//
// yields an object schema with "path" required and "offset" optional. Decoding
// rejects unknown fields exactly when the schema does (additionalProperties
// false), so a map-typed In still accepts any keys.
//
// If In has no JSON Schema (a channel or func field, a map with non-string
// keys), Registry.Add and NewRegistry report it, and Run returns the error.
func Func[In any](name, description string, meta Meta, fn func(ctx context.Context, in In, call *Call) (Result, error)) Tool {
	f := &funcTool[In]{fn: fn}
	f.spec = Spec{Name: name, Description: description, Meta: meta, InputSchema: emptyObjectSchema()}
	if fn == nil {
		f.err = errors.New("nil function")
		return f
	}
	s, err := jsonschema.For[In](nil)
	if err != nil {
		f.err = fmt.Errorf("input schema from Go type: %w", err)
		return f
	}
	raw, err := json.Marshal(s)
	if err != nil {
		f.err = fmt.Errorf("input schema from Go type: %w", err)
		return f
	}
	f.spec.InputSchema = raw
	var top struct {
		AdditionalProperties json.RawMessage `json:"additionalProperties"`
	}
	if json.Unmarshal(raw, &top) == nil {
		f.strict = isFalseSchema(top.AdditionalProperties)
	}
	return f
}

// isFalseSchema reports whether raw is a schema nothing satisfies, in the
// two spellings generators use.
func isFalseSchema(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	if string(raw) == "false" {
		return true
	}
	var not struct {
		Not *map[string]json.RawMessage `json:"not"`
	}
	return json.Unmarshal(raw, &not) == nil && not.Not != nil && len(*not.Not) == 0
}

type funcTool[In any] struct {
	spec   Spec
	err    error
	strict bool
	fn     func(ctx context.Context, in In, call *Call) (Result, error)
}

func (f *funcTool[In]) Spec() Spec { return f.spec }

func (f *funcTool[In]) specError() error { return f.err }

func (f *funcTool[In]) Run(ctx context.Context, call *Call) (Result, error) {
	if f.err != nil {
		return Result{}, fmt.Errorf("tool %s: %w", f.spec.Name, f.err)
	}
	input := call.Input
	if isEmptyJSON(input) {
		input = json.RawMessage("{}")
	}
	var in In
	dec := json.NewDecoder(bytes.NewReader(input))
	if f.strict {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(&in); err != nil {
		// Validation passed, so this is a value the schema allows but Go
		// cannot hold (e.g. 300 for an int8); the model can still fix it.
		return Errorf("invalid arguments for %s: %s", f.spec.Name, jsonErrorText(err)), nil
	}
	return f.fn(ctx, in, call)
}
