package hook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ConfigError is a problem in a hooks configuration, located by the file
// (Src) and the JSON path of the offending entry.
type ConfigError struct {
	Src  string // the file (or other origin) given to ParseConfig
	Path string // e.g. "hooks.PreToolUse[0].hooks[1]" or "[3]"
	Err  error
}

// Error reads "src: path: problem".
func (e *ConfigError) Error() string {
	var b strings.Builder
	if e.Src != "" {
		b.WriteString(e.Src + ": ")
	}
	if e.Path != "" {
		b.WriteString(e.Path + ": ")
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

// Unwrap returns the underlying problem (ErrUnknownEvent, a JSON error, ...).
func (e *ConfigError) Unwrap() error { return e.Err }

// ParseConfig reads hook definitions in either of two shapes:
//
//   - Claude Code's settings "hooks" object,
//     {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
//     "command": "...", "timeout": 60, "async": true}]}], ...}, with "type"
//     "command" or "http" (with "url", "headers", "allowedEnvVars");
//     a whole settings file, or a plugin's {"hooks": {...}}, is accepted too;
//   - FengYu's flat list, [{"name", "event", "matcher", "type",
//     "command"|"url", "timeoutSeconds", "enabled"}].
//
// Events may be named either way ("PreToolUse", "pre_tool_use"); entries
// with "enabled": false are skipped; unknown fields are ignored. Unknown
// events, unknown or unsupported types, missing commands and matchers that
// do not compile are errors (*ConfigError) naming src and the entry: a hook
// the user believes guards a tool must never be dropped silently. Hooks
// without a name are named "<src>/<Event>[n]" (n counts per event). Every
// def gets Source = source.
func ParseConfig(src string, data json.RawMessage, source string) ([]Def, error) {
	parsed, err := parseDefs(src, data)
	if err != nil {
		return nil, err
	}
	defs := make([]Def, len(parsed))
	for i, p := range parsed {
		d := p.def
		if p.generated && src != "" {
			d.Name = src + "/" + d.Name
		}
		d.Source = source
		defs[i] = d
	}
	return defs, nil
}

// LoadPluginHooks reads <root>/hooks/hooks.json (either shape of
// ParseConfig). A plugin without that file has no hooks. The hooks are
// named plugin/<id>/<name>, run in root, and see WEFT_PLUGIN_ROOT and
// WEFT_PLUGIN_DATA (and the aliases CLAUDE_PLUGIN_ROOT, CLAUDE_PLUGIN_DATA,
// FENGYU_PLUGIN_ROOT, FENGYU_PLUGIN_DATA). Register them with Source = id;
// they run only while the plugin is trusted.
func LoadPluginHooks(id, root, dataDir string) ([]Def, error) {
	if id == "" {
		return nil, errors.New("plugin hooks: empty plugin id")
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: %w", id, err)
	}
	if dataDir != "" {
		if dataDir, err = filepath.Abs(dataDir); err != nil {
			return nil, fmt.Errorf("plugin %s: %w", id, err)
		}
	}
	path := filepath.Join(root, "hooks", "hooks.json")
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("plugin %s: %w", id, err)
	}
	parsed, err := parseDefs(path, data)
	if err != nil {
		return nil, err
	}
	env := []string{
		"WEFT_PLUGIN_ROOT=" + root, "WEFT_PLUGIN_DATA=" + dataDir,
		"CLAUDE_PLUGIN_ROOT=" + root, "CLAUDE_PLUGIN_DATA=" + dataDir,
		"FENGYU_PLUGIN_ROOT=" + root, "FENGYU_PLUGIN_DATA=" + dataDir,
	}
	defs := make([]Def, len(parsed))
	for i, p := range parsed {
		d := p.def
		d.Name = "plugin/" + id + "/" + d.Name
		d.Source = id
		d.Dir = root
		d.Env = append(append([]string(nil), env...), d.Env...)
		defs[i] = d
	}
	return defs, nil
}

// parsedDef is a def with a name local to its file.
type parsedDef struct {
	def       Def
	generated bool // the name was made up from the event and position
}

// wireHook is one hook entry in either shape; the shape decides which of
// its fields are read.
type wireHook struct {
	// FengYu's flat list.
	Name           string   `json:"name"`
	Event          string   `json:"event"`
	Matcher        string   `json:"matcher"`
	TimeoutSeconds *float64 `json:"timeoutSeconds"`
	Enabled        *bool    `json:"enabled"`
	// Both.
	Type           string            `json:"type"`
	Command        string            `json:"command"`
	URL            string            `json:"url"`
	Timeout        *float64          `json:"timeout"` // seconds
	Async          bool              `json:"async"`
	Headers        map[string]string `json:"headers"`
	AllowedEnvVars []string          `json:"allowedEnvVars"`
}

// wireGroup is one matcher group of Claude Code's shape.
type wireGroup struct {
	Matcher string            `json:"matcher"`
	Hooks   []json.RawMessage `json:"hooks"`
}

func parseDefs(src string, data []byte) ([]parsedDef, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || string(data) == "null" {
		return nil, nil
	}
	cfgErr := func(path string, err error) error { return &ConfigError{Src: src, Path: path, Err: err} }
	switch data[0] {
	case '[':
		return parseFlat(src, data, "")
	case '{':
	default:
		return nil, cfgErr("", errors.New("hooks must be a JSON object or array"))
	}
	fields, err := orderedObject(data)
	if err != nil {
		return nil, cfgErr("", err)
	}
	prefix := ""
	for _, f := range fields {
		// A settings file or a plugin's {"hooks": ...}: read only "hooks".
		if f.key == "hooks" {
			inner := bytes.TrimSpace(f.value)
			if len(inner) > 0 && inner[0] == '[' {
				return parseFlat(src, inner, "hooks")
			}
			if string(inner) == "null" {
				return nil, nil
			}
			if fields, err = orderedObject(inner); err != nil {
				return nil, cfgErr("hooks", err)
			}
			prefix = "hooks."
			break
		}
	}
	var out []parsedDef
	for _, f := range fields {
		path := prefix + f.key
		ev, err := ParseEvent(f.key)
		if err != nil {
			return nil, cfgErr(path, err)
		}
		var groups []wireGroup
		if err := json.Unmarshal(f.value, &groups); err != nil {
			return nil, cfgErr(path, fmt.Errorf("want a list of {matcher, hooks}: %w", err))
		}
		n := 0
		for gi, g := range groups {
			if _, err := compileMatcher(g.Matcher); err != nil {
				return nil, cfgErr(fmt.Sprintf("%s[%d]", path, gi), err)
			}
			for hi, raw := range g.Hooks {
				hpath := fmt.Sprintf("%s[%d].hooks[%d]", path, gi, hi)
				var w wireHook
				if err := json.Unmarshal(raw, &w); err != nil {
					return nil, cfgErr(hpath, err)
				}
				if w.Enabled != nil && !*w.Enabled {
					continue
				}
				d, err := w.def(ev, g.Matcher, w.Timeout)
				if err != nil {
					return nil, cfgErr(hpath, err)
				}
				d.Name = fmt.Sprintf("%s[%d]", f.key, n)
				n++
				out = append(out, parsedDef{def: d, generated: true})
			}
		}
	}
	return out, nil
}

func parseFlat(src string, data []byte, prefix string) ([]parsedDef, error) {
	var list []json.RawMessage
	if err := json.Unmarshal(data, &list); err != nil {
		return nil, &ConfigError{Src: src, Path: prefix, Err: fmt.Errorf("want a list of hooks: %w", err)}
	}
	var out []parsedDef
	for i, raw := range list {
		path := fmt.Sprintf("%s[%d]", prefix, i)
		cfgErr := func(err error) error { return &ConfigError{Src: src, Path: path, Err: err} }
		var w wireHook
		if err := json.Unmarshal(raw, &w); err != nil {
			return nil, cfgErr(err)
		}
		if w.Enabled != nil && !*w.Enabled {
			continue
		}
		if w.Name != "" {
			path = fmt.Sprintf("%s[%d] (%s)", prefix, i, w.Name)
		}
		if w.Event == "" {
			return nil, cfgErr(errors.New("missing event"))
		}
		ev, err := ParseEvent(w.Event)
		if err != nil {
			return nil, cfgErr(err)
		}
		timeout := w.TimeoutSeconds
		if timeout == nil {
			timeout = w.Timeout
		}
		d, err := w.def(ev, w.Matcher, timeout)
		if err != nil {
			return nil, cfgErr(err)
		}
		p := parsedDef{def: d}
		p.def.Name = w.Name
		if p.def.Name == "" {
			p.def.Name, p.generated = fmt.Sprintf("%s[%d]", ev, i), true
		}
		out = append(out, p)
	}
	return out, nil
}

// def turns an entry into a validated Def.
func (w *wireHook) def(ev Event, matcher string, timeoutSeconds *float64) (Def, error) {
	d := Def{Event: ev, Matcher: matcher, Async: w.Async}
	typ := strings.ToLower(strings.TrimSpace(w.Type))
	if typ == "" {
		switch {
		case w.Command != "" && w.URL == "":
			typ = "command"
		case w.URL != "" && w.Command == "":
			typ = "http"
		}
	}
	switch typ {
	case "command":
		if strings.TrimSpace(w.Command) == "" {
			return Def{}, errors.New(`type "command" needs a non-empty "command"`)
		}
		d.Command = w.Command
	case "http":
		if strings.TrimSpace(w.URL) == "" {
			return Def{}, errors.New(`type "http" needs a "url"`)
		}
		d.URL = strings.TrimSpace(w.URL)
		d.Headers = w.Headers
		d.HeaderEnv = w.AllowedEnvVars
	case "prompt", "agent":
		return Def{}, fmt.Errorf(`hook type %q is not supported: weft runs "command" and "http" hooks`, w.Type)
	case "":
		return Def{}, errors.New(`missing "type" ("command" with "command", or "http" with "url")`)
	default:
		return Def{}, fmt.Errorf(`unknown hook type %q: want "command" or "http"`, w.Type)
	}
	if timeoutSeconds != nil {
		s := *timeoutSeconds
		if s < 0 || s > 24*3600 {
			return Def{}, fmt.Errorf("timeout %v out of range: want seconds between 0 and 86400", s)
		}
		d.Timeout = time.Duration(s * float64(time.Second))
	}
	if err := d.validate(); err != nil {
		return Def{}, err
	}
	return d, nil
}

type field struct {
	key   string
	value json.RawMessage
}

// orderedObject decodes a JSON object keeping its keys in file order, so
// hooks register (and therefore run) in the order they were written.
func orderedObject(data []byte) ([]field, error) {
	if !json.Valid(data) {
		var v any
		return nil, json.Unmarshal(data, &v) // the error says where
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("want a JSON object")
	}
	var out []field
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, errors.New("want a JSON object")
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		out = append(out, field{key, v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	return out, nil
}
