package main

import "github.com/weft-run/weft/tool/mcp"

// notStarted says why each configured server that mcpStart does not run
// (without a terminal to ask on) is left out: what GET /v1/mcp/servers
// shows as disabled.
func (st *mcpSetup) notStarted() map[string]string {
	out := map[string]string{}
	for _, s := range st.servers {
		switch d := st.decide(s); d.Approval {
		case mcp.Pending:
			out[s.Name] = "not approved: " + d.Reason + " (weft mcp approve " + s.Name + ")"
		case mcp.Rejected:
			out[s.Name] = "rejected: " + d.Reason
		}
	}
	return out
}
