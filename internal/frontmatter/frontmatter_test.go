package frontmatter

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name, text string
		meta       map[string]any
		body       string
		err        string
	}{
		{name: "yaml", text: "---\nname: a\ndescription: does a\n---\n\nbody\n", meta: map[string]any{"name": "a", "description": "does a"}, body: "body"},
		{name: "bom and CRLF", text: "\uFEFF---\r\nname: a\r\n---\r\nbody\r\nmore\r\n", meta: map[string]any{"name": "a"}, body: "body\nmore"},
		{name: "loose: colon in a value, continuation, quotes", text: "---\nname: a\ndescription: Cut a release: tag, publish\n  then announce\nmodel: \"sonnet\"\n---\nb",
			meta: map[string]any{"name": "a", "description": "Cut a release: tag, publish then announce", "model": "sonnet"}, body: "b"},
		{name: "empty front matter", text: "---\n---\nb", meta: map[string]any{}, body: "b"},
		{name: "no front matter", text: "name: a\n", err: "no front matter"},
		{name: "not closed", text: "---\nname: a\n", err: "not closed"},
		{name: "neither yaml nor lines", text: "---\n  - x\n---\n", err: "not a valid YAML mapping"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			meta, body, err := Parse(tt.text)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if body != tt.body || len(meta) != len(tt.meta) {
				t.Fatalf("got %v %q, want %v %q", meta, body, tt.meta, tt.body)
			}
			for k, v := range tt.meta {
				if meta[k] != v {
					t.Fatalf("meta[%q] = %v, want %v", k, meta[k], v)
				}
			}
		})
	}
}

func TestStringAndCheckName(t *testing.T) {
	meta := map[string]any{"name": "  x  ", "n": 3}
	if s, err := String(meta, "name"); err != nil || s != "x" {
		t.Fatalf("String = %q, %v", s, err)
	}
	if _, err := String(meta, "n"); err == nil {
		t.Fatal("a number passed as a string")
	}
	if s, err := String(meta, "absent"); err != nil || s != "" {
		t.Fatalf("absent = %q, %v", s, err)
	}
	for name, ok := range map[string]bool{"code-review": true, "A_b.c": true, "": false, "-x": false, ".x": false, "a b": false, "a/b": false, strings.Repeat("a", 65): false} {
		if err := CheckName("skill", name, 64); (err == nil) != ok {
			t.Errorf("CheckName(%q) = %v, want ok %v", name, err, ok)
		}
	}
}
