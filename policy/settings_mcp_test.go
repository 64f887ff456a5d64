package policy

import (
	"encoding/json"
	"testing"
)

// The MCP keys of a Claude Code settings file are kept for tool/mcp:
// mcpServers as written, and the project-approval keys.
func TestSettingsMCPKeys(t *testing.T) {
	t.Parallel()
	src, err := Parse(ScopeUser, "settings.json", []byte(`{
		"permissions": {"deny": ["mcp__github__*"]},
		"mcpServers": {"github": {"type": "http", "url": "https://x/mcp"}},
		"enableAllProjectMcpServers": true,
		"enabledMcpjsonServers": ["a"],
		"disabledMcpjsonServers": ["b"]
	}`))
	if err != nil {
		t.Fatal(err)
	}
	s := src.Settings
	var servers map[string]map[string]string
	if err := json.Unmarshal(s.MCPServers, &servers); err != nil || servers["github"]["url"] != "https://x/mcp" {
		t.Errorf("mcpServers = %s (%v)", s.MCPServers, err)
	}
	if s.EnableAllProjectMcpServers == nil || !*s.EnableAllProjectMcpServers || len(s.EnabledMcpjsonServers) != 1 || s.DisabledMcpjsonServers[0] != "b" {
		t.Errorf("approval keys = %+v", s)
	}
	if _, err := Parse(ScopeUser, "settings.json", []byte(`{"enabledMcpjsonServers": "a"}`)); err == nil {
		t.Error("a mistyped enabledMcpjsonServers was accepted")
	}
}
