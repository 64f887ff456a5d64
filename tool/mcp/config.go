// Package mcp makes the tools of MCP (Model Context Protocol) servers weft
// tools. It reads server configurations in Claude Code's shape (.mcp.json,
// ~/.weft/mcp.json, "mcpServers" in settings files, --mcp-config), keeps
// the approval of project servers, connects over stdio, streamable HTTP or
// SSE with the official Go SDK, and registers each server's tools in a
// tool.Registry as mcp__<server>__<tool>, so every call goes through the
// same framework (schema, deadline, redaction, output cap) and policy
// pipeline as a builtin. Servers that die are reconnected with bounded
// backoff; tool lists follow notifications/tools/list_changed.
package mcp

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/weft-run/weft/policy/secret"
)

// Scope says where a server's configuration came from; it decides whether
// the server needs approval (project) and which variables its values may
// expand.
type Scope string

const (
	// ScopeUser: ~/.weft/mcp.json and "mcpServers" in ~/.weft/settings.json.
	ScopeUser Scope = "user"
	// ScopeProject: the workspace's .mcp.json and "mcpServers" in its
	// .weft/settings.json. Anyone who can commit to the repository writes
	// these, so each server needs the person's approval once.
	ScopeProject Scope = "project"
	// ScopeCLI: --mcp-config files and "mcpServers" in the --settings file:
	// given by the person starting weft.
	ScopeCLI Scope = "cli"
)

// Transport types, as Claude Code spells them in "type".
const (
	TypeStdio = "stdio"
	TypeHTTP  = "http"
	TypeSSE   = "sse"
)

// ServerConfig is one entry of "mcpServers", Claude Code's shape: a stdio
// server {"command","args","env"} or a remote one {"type":"http"|"sse",
// "url","headers"}. Keys weft does not know are ignored, so a file written
// for Claude Code loads unchanged.
type ServerConfig struct {
	Type    string            `json:"type,omitempty"`
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// Timeout of one tool call in milliseconds (Claude Code's
	// MCP_TOOL_TIMEOUT, per server); 0 means the manager's default.
	Timeout int64 `json:"timeout,omitempty"`
	// OAuth configures `weft mcp login` for a server whose authorization
	// server does not register clients dynamically.
	OAuth *OAuthConfig `json:"oauth,omitempty"`
}

// OAuthConfig is the optional "oauth" object of an HTTP server.
type OAuthConfig struct {
	ClientID     string   `json:"clientId,omitempty"`
	ClientSecret string   `json:"clientSecret,omitempty"`
	CallbackPort int      `json:"callbackPort,omitempty"`
	Scopes       []string `json:"scopes,omitempty"`
}

// transport returns the normalised transport type.
func (c ServerConfig) transport() string {
	switch strings.ToLower(c.Type) {
	case "", TypeStdio:
		if c.Type == "" && c.Command == "" && c.URL != "" {
			return TypeHTTP
		}
		return TypeStdio
	case TypeHTTP, "streamable-http", "streamablehttp":
		return TypeHTTP
	case TypeSSE:
		return TypeSSE
	}
	return strings.ToLower(c.Type)
}

// Server is one configured server, resolved from every source.
type Server struct {
	Name  string
	Scope Scope
	Path  string // the file it came from
	// Raw is the configuration as written (before ${VAR} expansion): what
	// an approval shows and what its hash covers.
	Raw ServerConfig
	// Config is Raw with ${VAR} expanded; valid only when Err is nil.
	Config ServerConfig
	// Err is a problem with this server's configuration (an unknown type,
	// an unset variable); such a server is listed but never started.
	Err error
}

// Transport is the server's transport type: stdio, http or sse.
func (s Server) Transport() string { return s.Raw.transport() }

// Hash identifies the configuration as written: an approval is for this
// hash, so a changed command, URL or environment asks again.
func (s Server) Hash() string { return configHash(s.Raw) }

func configHash(c ServerConfig) string {
	// encoding/json sorts map keys: equal configurations hash equally
	// however their files are formatted.
	b, _ := json.Marshal(c)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Source is the "mcpServers" of one file.
type Source struct {
	Scope   Scope
	Path    string
	Servers map[string]ServerConfig
	order   []string // the file's order, for stable listings
}

// fileShape is an MCP configuration file.
type fileShape struct {
	MCPServers json.RawMessage `json:"mcpServers"`
}

// ParseFile parses an MCP configuration file ({"mcpServers": {...}}).
func ParseFile(scope Scope, path string, data []byte) (Source, error) {
	var f fileShape
	if err := json.Unmarshal(data, &f); err != nil {
		return Source{}, fmt.Errorf("%s: %s", path, jsonError(data, err))
	}
	return ParseServers(scope, path, f.MCPServers)
}

// ParseServers parses the value of an "mcpServers" key (null or absent
// means none).
func ParseServers(scope Scope, path string, raw json.RawMessage) (Source, error) {
	src := Source{Scope: scope, Path: path, Servers: map[string]ServerConfig{}}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return src, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return src, fmt.Errorf("%s: mcpServers: want an object of servers by name", path)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return src, fmt.Errorf("%s: mcpServers: %v", path, err)
		}
		name := tok.(string)
		var c ServerConfig
		if err := dec.Decode(&c); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				return src, fmt.Errorf("%s: mcpServers.%s.%s: expected %s, got %s", path, name, te.Field, te.Type, te.Value)
			}
			return src, fmt.Errorf("%s: mcpServers.%s: %v", path, name, err)
		}
		if _, dup := src.Servers[name]; !dup {
			src.order = append(src.order, name)
		}
		src.Servers[name] = c
	}
	return src, nil
}

// LoadFile reads and parses an MCP configuration file. A missing file is
// an empty source when optional.
func LoadFile(scope Scope, path string, optional bool) (Source, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if optional && errors.Is(err, fs.ErrNotExist) {
			return Source{Scope: scope, Path: path, Servers: map[string]ServerConfig{}}, nil
		}
		return Source{Scope: scope, Path: path}, fmt.Errorf("reading MCP configuration: %w", err)
	}
	return ParseFile(scope, path, data)
}

// UserPath and ProjectPath are the conventional files of the user and
// project scopes.
func UserPath(home string) string         { return filepath.Join(home, ".weft", "mcp.json") }
func ProjectPath(workspace string) string { return filepath.Join(workspace, ".mcp.json") }

// validServerName keeps names usable inside tool names and permission
// rules: "__" separates server from tool in mcp__server__tool, so a
// server name must not contain it.
var validServerName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,48}$`)

// Resolve merges sources given lowest precedence first (user, project,
// CLI, as Claude Code ranks local over project over user): a name defined
// again replaces the earlier definition. getenv expands ${VAR} and
// ${VAR:-default}. The result is sorted by name.
func Resolve(sources []Source, getenv func(string) string) []Server {
	byName := map[string]Server{}
	for _, src := range sources {
		names := src.order
		if len(names) == 0 {
			for n := range src.Servers {
				names = append(names, n)
			}
			slices.Sort(names)
		}
		for _, name := range names {
			raw := src.Servers[name]
			s := Server{Name: name, Scope: src.Scope, Path: src.Path, Raw: raw}
			s.Config, s.Err = expandConfig(name, src.Scope, raw, getenv)
			byName[name] = s
		}
	}
	out := make([]Server, 0, len(byName))
	for _, s := range byName {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b Server) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// expandConfig validates c and expands its variables.
func expandConfig(name string, scope Scope, c ServerConfig, getenv func(string) string) (ServerConfig, error) {
	if !validServerName.MatchString(name) || strings.Contains(name, "__") {
		return c, fmt.Errorf("server name %q is invalid: use up to 48 letters, digits, '-' or '_' (not \"__\", which separates server and tool in tool names)", name)
	}
	if c.Timeout < 0 {
		return c, fmt.Errorf("timeout %d: want milliseconds, 0 for the default", c.Timeout)
	}
	e := expander{scope: scope, getenv: getenv}
	out := c
	out.Type = c.transport()
	switch out.Type {
	case TypeStdio:
		if c.Command == "" {
			return c, errors.New(`a stdio server needs "command"`)
		}
		if c.URL != "" {
			return c, errors.New(`a stdio server takes "command", not "url"; set "type": "http" or "sse" for a remote server`)
		}
	case TypeHTTP, TypeSSE:
		if c.URL == "" {
			return c, fmt.Errorf(`a %s server needs "url"`, out.Type)
		}
		if c.Command != "" {
			return c, fmt.Errorf(`a %s server takes "url", not "command"`, out.Type)
		}
	default:
		return c, fmt.Errorf("unknown type %q: want stdio, http or sse", c.Type)
	}
	out.Command = e.expand(c.Command)
	out.Args = make([]string, len(c.Args))
	for i, a := range c.Args {
		out.Args[i] = e.expand(a)
	}
	out.Env = expandMap(&e, c.Env)
	out.URL = e.expand(c.URL)
	out.Headers = expandMap(&e, c.Headers)
	if err := e.err(); err != nil {
		return c, err
	}
	if out.Type != TypeStdio {
		if !strings.HasPrefix(out.URL, "http://") && !strings.HasPrefix(out.URL, "https://") {
			return c, fmt.Errorf("url %q: want an http:// or https:// URL", out.URL)
		}
	}
	return out, nil
}

func expandMap(e *expander, m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = e.expand(v)
	}
	return out
}

// varRef is ${NAME} or ${NAME:-default}, as Claude Code expands them.
var varRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

type expander struct {
	scope   Scope
	getenv  func(string) string
	missing []string
	refused []string
}

// expand replaces variable references in s. An unset variable without a
// default is an error (the server would start half-configured). A project
// file may not read weft's own settings or credentials (WEFT_*,
// *_API_KEY, *_AUTH_TOKEN): a cloned repository's .mcp.json must not be
// able to send the person's provider key to a server of its choosing, even
// once approved; such a reference is refused.
func (e *expander) expand(s string) string {
	if !strings.Contains(s, "${") {
		return s
	}
	return varRef.ReplaceAllStringFunc(s, func(ref string) string {
		m := varRef.FindStringSubmatch(ref)
		name, hasDefault, def := m[1], m[2] != "", m[3]
		if e.scope == ScopeProject && secret.WeftVariable(name) {
			e.refused = append(e.refused, name)
			return ""
		}
		v := ""
		if e.getenv != nil {
			v = e.getenv(name)
		}
		if v == "" {
			if hasDefault {
				return def
			}
			e.missing = append(e.missing, name)
		}
		return v
	})
}

func (e *expander) err() error {
	var errs []error
	if len(e.refused) > 0 {
		slices.Sort(e.refused)
		errs = append(errs, fmt.Errorf("a project configuration may not read %s (weft's settings and credentials); put the server in ~/.weft/mcp.json or pass it with --mcp-config",
			strings.Join(slices.Compact(e.refused), ", ")))
	}
	if len(e.missing) > 0 {
		slices.Sort(e.missing)
		errs = append(errs, fmt.Errorf("environment variable %s is not set (and has no ${VAR:-default})",
			strings.Join(slices.Compact(e.missing), ", ")))
	}
	return errors.Join(errs...)
}

// callTimeout is the server's per-call timeout, or def.
func (c ServerConfig) callTimeout(def time.Duration) time.Duration {
	if c.Timeout > 0 {
		return time.Duration(c.Timeout) * time.Millisecond
	}
	return def
}

func jsonError(data []byte, err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line := 1 + bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n"))
		return fmt.Sprintf("line %d: %v", line, err)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("%s: expected %s, got %s", te.Field, te.Type, te.Value)
	}
	return err.Error()
}
