// Package frontmatter reads the Markdown files with YAML front matter that
// Claude Code's agents and skills are written in (a first line "---", the
// YAML, a line "---", then the body), leniently enough that users' existing
// files work unchanged.
package frontmatter

import (
	"errors"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Parse splits text into its front matter's mapping and the body (trimmed).
// Front matter that is not valid YAML but is plainly lines of "key: value"
// (a description with ": " in it is the usual case in Claude Code's own
// files) is read as such (Loose).
func Parse(text string) (map[string]any, string, error) {
	yamlText, body, err := Split(text)
	if err != nil {
		return nil, "", err
	}
	meta, err := Mapping(yamlText)
	if err != nil {
		loose, ok := Loose(yamlText)
		if !ok {
			return nil, "", err
		}
		meta = loose
	}
	return meta, body, nil
}

// Split cuts text into the front matter's YAML and the body (trimmed). A
// byte-order mark and CRLF line ends are accepted.
func Split(text string) (yamlText, body string, err error) {
	text = strings.TrimPrefix(text, "\uFEFF")
	text = strings.ReplaceAll(text, "\r\n", "\n")
	first, rest, ok := strings.Cut(text, "\n")
	if !ok || strings.TrimRight(first, " \t") != "---" {
		return "", "", errors.New(`no front matter: the file must start with a line "---", then YAML with name and description, then "---"`)
	}
	for off := 0; off <= len(rest); {
		line, after, more := strings.Cut(rest[off:], "\n")
		if strings.TrimRight(line, " \t") == "---" {
			return rest[:off], strings.TrimSpace(after), nil
		}
		if !more {
			break
		}
		off += len(line) + 1
	}
	return "", "", errors.New(`the front matter is not closed: add a line "---" after it`)
}

// Mapping parses the front matter as a YAML mapping (empty: an empty map).
func Mapping(yamlText string) (map[string]any, error) {
	var meta map[string]any
	if err := yaml.Unmarshal([]byte(yamlText), &meta); err != nil {
		return nil, fmt.Errorf("the front matter is not a valid YAML mapping: %v", err)
	}
	if meta == nil {
		meta = map[string]any{}
	}
	return meta, nil
}

// Loose reads lines of "key: value" (a value in matching quotes loses
// them), a line that starts with white space continuing the previous
// value, and skips blank and comment lines. It fails unless every line has
// one of those shapes.
func Loose(yamlText string) (map[string]any, bool) {
	meta := map[string]any{}
	last := ""
	for _, line := range strings.Split(yamlText, "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			if last == "" {
				return nil, false
			}
			meta[last] = meta[last].(string) + " " + trimmed
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok || k == "" || strings.ContainsAny(k, " \t\"'") {
			return nil, false
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"' || v[0] == '\'' && v[len(v)-1] == '\'') {
			v = v[1 : len(v)-1]
		}
		meta[k], last = v, k
	}
	return meta, true
}

// String is meta[key] as a trimmed string ("" when absent); any other
// type is an error naming the key.
func String(meta map[string]any, key string) (string, error) {
	v, ok := meta[key]
	if !ok || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("the front matter's %q must be a string, not %T", key, v)
	}
	return strings.TrimSpace(s), nil
}

// CheckName accepts Claude Code's names (lower-case letters, digits,
// hyphens) and, leniently, upper case, '_' and '.', not starting with '-'
// or '.', up to max bytes; kind ("agent", "skill") names the thing in
// errors.
func CheckName(kind, name string, max int) error {
	if name == "" {
		return errors.New(`the front matter has no "name"`)
	}
	if len(name) > max {
		return fmt.Errorf("the %s name %q is longer than %d characters", kind, name, max)
	}
	for i, c := range name {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
		if !ok || i == 0 && (c == '-' || c == '.') {
			return fmt.Errorf("the %s name %q is not valid: use letters, digits and hyphens", kind, name)
		}
	}
	return nil
}
