package main

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/weft-run/weft/tool/mcp"
)

// TestMCPNotStarted: what GET /v1/mcp/servers shows as disabled is what
// weft serve does not start: project servers not approved (with the
// command that approves them) or rejected; user and CLI servers and
// approved project servers are started, so not listed.
func TestMCPNotStarted(t *testing.T) {
	t.Parallel()
	cfg := mcp.ServerConfig{Command: "./tools.sh"}
	st := &mcpSetup{ws: t.TempDir(), project: mcp.ProjectSettings{Disabled: []string{"off"}, Enabled: []string{"on"}}, servers: []mcp.Server{
		{Name: "mine", Scope: mcp.ScopeUser, Raw: cfg, Config: cfg},
		{Name: "flag", Scope: mcp.ScopeCLI, Raw: cfg, Config: cfg},
		{Name: "repo", Scope: mcp.ScopeProject, Raw: cfg, Config: cfg},
		{Name: "off", Scope: mcp.ScopeProject, Raw: cfg, Config: cfg},
		{Name: "on", Scope: mcp.ScopeProject, Raw: cfg, Config: cfg},
	}}
	got := st.notStarted()
	if names := slices.Sorted(maps.Keys(got)); !slices.Equal(names, []string{"off", "repo"}) {
		t.Fatalf("not started: %v", got)
	}
	if !strings.HasPrefix(got["repo"], "not approved") || !strings.Contains(got["repo"], "weft mcp approve repo") {
		t.Errorf("repo: %q", got["repo"])
	}
	if !strings.HasPrefix(got["off"], "rejected") || !strings.Contains(got["off"], "disabledMcpjsonServers") {
		t.Errorf("off: %q", got["off"])
	}
}
