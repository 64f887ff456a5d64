package server

import (
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/weft-run/weft/tool/mcp"
)

// The MCP servers weft is a client of, over HTTP (issue 19: Settings):
//
//	GET /v1/mcp/servers
//	{"servers": [{"name": "docs", "scope": "user", "source": "/home/me/.weft/mcp.json",
//	   "transport": "stdio", "command": "npx", "args": ["-y", "docs-mcp", "--token=***"],
//	   "env": ["DOCS_TOKEN"], "state": "connected", "tools": 2,
//	   "tool_names": ["mcp__docs__get", "mcp__docs__search"]},
//	  {"name": "jira", "transport": "http", "url": "https://jira.example.com/mcp?key=***",
//	   "state": "failed", "detail": "reconnecting", "error": "...", "tools": 0, "tool_names": []},
//	  {"name": "repo-tools", "scope": "project", "transport": "stdio", "command": "./tools.sh",
//	   "state": "disabled", "reason": "not approved yet", "tools": 0, "tool_names": []}]}
//
// The configuration is shown as written (before ${VAR} expansion, so a
// secret kept in the environment stays a ${NAME}); what may still be a
// secret written literally is masked here, whatever the source reports:
// environment and header values are never shown (their names are), a
// URL's password and query values are masked, and so are command-line
// values of options named like a credential (--token, --api-key=...).

// MCPSource is what GET /v1/mcp/servers reads (*MCPList is one). The
// composition root supplies it; the server masks what it reports.
type MCPSource interface {
	MCPServers() []MCPServerInfo
}

// MCPServerInfo is one configured MCP server.
type MCPServerInfo struct {
	Name string `json:"name"`
	// Scope is where it is configured (user, project, cli) and Source the
	// file.
	Scope     string `json:"scope,omitempty"`
	Source    string `json:"source,omitempty"`
	Transport string `json:"transport"`
	// Command and Args start a stdio server; URL is an http or sse
	// server's.
	Command string   `json:"command,omitempty"`
	Args    []string `json:"args,omitempty"`
	URL     string   `json:"url,omitempty"`
	// Env and Headers are the names of the variables and headers it is
	// given, never their values.
	Env     []string `json:"env,omitempty"`
	Headers []string `json:"headers,omitempty"`
	// State is connected, connecting, failed (Detail says how: failed,
	// reconnecting, needs-login, closed) or disabled (Reason says why:
	// not approved, rejected, a configuration error).
	State  string `json:"state"`
	Detail string `json:"detail,omitempty"`
	Reason string `json:"reason,omitempty"`
	Error  string `json:"error,omitempty"`
	// Tools are the tools it added to weft's registry.
	Tools     int      `json:"tools"`
	ToolNames []string `json:"tool_names"`
}

// MCP server states of MCPServerInfo.
const (
	MCPConnected  = "connected"
	MCPConnecting = "connecting"
	MCPFailed     = "failed"
	MCPDisabled   = "disabled"
)

// MCPServersResponse is the body of GET /v1/mcp/servers.
type MCPServersResponse struct {
	Servers []MCPServerInfo `json:"servers"`
}

// MCPHandler serves GET /v1/mcp/servers from src; nil lists none (a
// server with no MCP configuration has none, which is not an error).
func MCPHandler(src MCPSource) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		out := MCPServersResponse{Servers: []MCPServerInfo{}}
		if src != nil {
			for _, s := range src.MCPServers() {
				out.Servers = append(out.Servers, maskMCP(s))
			}
		}
		writeJSON(w, http.StatusOK, out)
	})
}

// MCPList is an MCPSource over the configured servers and the manager
// that runs the approved ones. weft serve creates it before the server
// and sets it once the servers are started (they need the app's tool
// registry, which exists only then); until then it lists none.
type MCPList struct {
	mu       sync.Mutex
	servers  []mcp.Server
	disabled map[string]string
	manager  *mcp.Manager
	redact   func(string) string
}

// Set records the configured servers; disabled maps the name of each
// server that was not started to why; m runs the others (nil: none
// started). redact, when set, is applied to every error shown (the
// server's secret set).
func (l *MCPList) Set(servers []mcp.Server, disabled map[string]string, m *mcp.Manager, redact func(string) string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.servers, l.disabled, l.manager, l.redact = slices.Clone(servers), disabled, m, redact
}

// MCPServers implements MCPSource: every configured server in
// configuration order, with the manager's state for those it runs.
func (l *MCPList) MCPServers() []MCPServerInfo {
	l.mu.Lock()
	servers, disabled, m, redact := l.servers, l.disabled, l.manager, l.redact
	l.mu.Unlock()
	status := map[string]mcp.ServerStatus{}
	if m != nil {
		for _, st := range m.Status() {
			status[st.Name] = st
		}
	}
	out := make([]MCPServerInfo, 0, len(servers))
	for _, s := range servers {
		raw := s.Raw
		info := MCPServerInfo{Name: s.Name, Scope: string(s.Scope), Source: s.Path, Transport: s.Transport(),
			Command: raw.Command, Args: slices.Clone(raw.Args), URL: raw.URL,
			Env: sortedKeys(raw.Env), Headers: sortedKeys(raw.Headers), ToolNames: []string{}}
		st, running := status[s.Name]
		switch {
		case s.Err != nil:
			info.State, info.Reason, info.Error = MCPDisabled, "configuration error", s.Err.Error()
		case disabled[s.Name] != "":
			info.State, info.Reason = MCPDisabled, disabled[s.Name]
		case !running:
			info.State, info.Reason = MCPDisabled, "not started"
		default:
			switch st.State {
			case mcp.StateConnected:
				info.State = MCPConnected
			case mcp.StateConnecting:
				info.State = MCPConnecting
			default:
				info.State, info.Detail = MCPFailed, string(st.State)
			}
			info.Error = st.Error
			info.Tools = st.Tools
			if st.ToolNames != nil {
				info.ToolNames = st.ToolNames
			}
		}
		if redact != nil && info.Error != "" {
			info.Error = redact(info.Error)
		}
		out = append(out, info)
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	if len(m) == 0 {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// credentialName matches option and parameter names that carry a
// credential.
var credentialName = regexp.MustCompile(`(?i)(key|token|secret|passw|pwd|auth|credential|bearer|cookie|session)`)

const masked = "***"

// maskMCP masks what may be a secret written literally in a server's
// configuration, and any of it that an error repeats.
func maskMCP(s MCPServerInfo) MCPServerInfo {
	out := s
	out.Args = maskArgs(s.Args)
	out.URL = maskURL(s.URL)
	if out.Error != "" {
		for i, a := range s.Args {
			if out.Args[i] != a && len(a) > 3 {
				out.Error = strings.ReplaceAll(out.Error, a, out.Args[i])
			}
		}
		if s.URL != "" && out.URL != s.URL {
			out.Error = strings.ReplaceAll(out.Error, s.URL, out.URL)
		}
	}
	out.Env = slices.Clone(s.Env)
	out.Headers = slices.Clone(s.Headers)
	if out.ToolNames == nil {
		out.ToolNames = []string{}
	}
	return out
}

// maskArgs masks the value of each credential-named option: --token=v,
// --token v, -api-key v, and a bare "Bearer v"/"Basic v" argument.
func maskArgs(args []string) []string {
	if args == nil {
		return nil
	}
	out := make([]string, len(args))
	next := false
	for i, a := range args {
		switch {
		case next && !strings.HasPrefix(a, "-"):
			out[i], next = masked, false
			continue
		case next:
			next = false
		}
		out[i] = a
		if !strings.HasPrefix(a, "-") {
			if f := strings.Fields(a); len(f) == 2 && (strings.EqualFold(f[0], "bearer") || strings.EqualFold(f[0], "basic")) {
				out[i] = f[0] + " " + masked
			}
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !credentialName.MatchString(name) {
			continue
		}
		if hasValue {
			if value != "" && !isVarRef(value) {
				out[i] = a[:len(a)-len(value)] + masked
			}
		} else {
			next = true
		}
	}
	return out
}

// isVarRef says whether v is only a ${NAME} reference: no secret in it.
func isVarRef(v string) bool {
	return strings.HasPrefix(v, "${") && strings.HasSuffix(v, "}") && strings.Count(v, "${") == 1
}

// maskURL masks a URL's password (or a user name alone, which is often a
// token) and every query value.
func maskURL(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		// Not a URL weft could use anyway: show none of it.
		return masked
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), masked)
		} else {
			u.User = url.User(masked)
		}
	}
	if u.RawQuery != "" {
		q := u.Query()
		keys := make([]string, 0, len(q))
		for k := range q {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, 0, len(keys))
		for _, k := range keys {
			for _, v := range q[k] {
				if isVarRef(v) {
					parts = append(parts, url.QueryEscape(k)+"="+v)
				} else {
					parts = append(parts, url.QueryEscape(k)+"="+masked)
				}
			}
		}
		u.RawQuery = strings.Join(parts, "&")
	}
	u.Fragment = ""
	s := u.String()
	// url.URL escapes the mask in userinfo; show it as written.
	return strings.ReplaceAll(s, url.PathEscape(masked), masked)
}
