package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// maxToolName is the providers' limit on tool names (tool.Registry holds
// every name to it).
const maxToolName = 64

// ToolName is the weft name of an MCP server's tool: mcp__<server>__<tool>
// (Claude Code's naming, which permission rules such as mcp__github__* and
// Mcp(github__*) match), with every character providers reject replaced by
// '_'. A name longer than 64 characters keeps its first part and ends in a
// hash of the whole, so two long names stay distinct.
func ToolName(server, tool string) string {
	full := "mcp__" + sanitize(server) + "__" + sanitize(tool)
	if len(full) <= maxToolName {
		return full
	}
	sum := sha256.Sum256([]byte("mcp__" + server + "__" + tool))
	suffix := "_" + hex.EncodeToString(sum[:])[:8]
	return full[:maxToolName-len(suffix)] + suffix
}

// sanitize maps s onto [A-Za-z0-9_-]; an empty name becomes "_".
func sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "_"
	}
	return b.String()
}

// PromptCommand is the chat slash command of a server's prompt, without
// the slash: mcp__<server>__<prompt>.
func PromptCommand(server, prompt string) string { return ToolName(server, prompt) }
