package session

import (
	"encoding/json"
	"testing"
)

// checkContent holds an accepted answer to the requested schema before
// the MCP server sees it.
func TestCheckContent(t *testing.T) {
	t.Parallel()
	schema := json.RawMessage(`{"type":"object","properties":{
		"name":{"type":"string","minLength":2,"maxLength":5},
		"age":{"type":"integer","minimum":0,"maximum":150},
		"score":{"type":"number"},
		"ok":{"type":"boolean"},
		"colour":{"type":"string","enum":["red","blue"]},
		"size":{"type":"string","oneOf":[{"const":"s","title":"Small"},{"const":"l","title":"Large"}]}},
		"required":["name"]}`)
	for _, tt := range []struct {
		name    string
		schema  json.RawMessage
		content string
		ok      bool
	}{
		{"all fields", schema, `{"name":"Ada","age":36,"score":1.5,"ok":true,"colour":"red","size":"l"}`, true},
		{"required only", schema, `{"name":"Ada"}`, true},
		{"required missing", schema, `{"age":3}`, false},
		{"no content", schema, `null`, false},
		{"unknown field", schema, `{"name":"Ada","x":1}`, false},
		{"string too short", schema, `{"name":"A"}`, false},
		{"string too long", schema, `{"name":"Adelaide"}`, false},
		{"string as number", schema, `{"name":5}`, false},
		{"integer not whole", schema, `{"name":"Ada","age":1.5}`, false},
		{"integer out of range", schema, `{"name":"Ada","age":151}`, false},
		{"integer as string", schema, `{"name":"Ada","age":"3"}`, false},
		{"number as bool", schema, `{"name":"Ada","score":true}`, false},
		{"boolean as string", schema, `{"name":"Ada","ok":"yes"}`, false},
		{"enum miss", schema, `{"name":"Ada","colour":"green"}`, false},
		{"oneOf by title", schema, `{"name":"Ada","size":"Large"}`, false},
		{"object for a string", schema, `{"name":{"first":"Ada"}}`, false},
		{"url mode, nothing", nil, `null`, true},
		{"url mode, content", nil, `{"a":1}`, false},
		{"malformed schema", json.RawMessage(`{"properties":[]}`), `{}`, false},
	} {
		var content map[string]any
		if err := json.Unmarshal([]byte(tt.content), &content); err != nil {
			t.Fatal(err)
		}
		if err := checkContent(tt.schema, content); (err == nil) != tt.ok {
			t.Errorf("%s: checkContent = %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
}
