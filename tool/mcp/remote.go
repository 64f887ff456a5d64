package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/tool"
)

// maxImageBytes bounds one image a server returns: larger ones become a
// line of text rather than megabytes in every later request.
const maxImageBytes = 5 << 20

// remoteTool is one tool of an MCP server, as a weft tool.
type remoteTool struct {
	s      *server
	remote string // the server's name for it
	spec   tool.Spec
}

func (t *remoteTool) Spec() tool.Spec { return t.spec }

func (t *remoteTool) Run(ctx context.Context, call *tool.Call) (tool.Result, error) {
	return t.s.callTool(ctx, t, call)
}

// newRemoteTool maps an MCP tool onto a weft spec. The annotations are the
// server's hints: readOnlyHint makes the tool read-only (it runs in every
// permission mode, like Read; rules such as ask: ["mcp__srv__*"] still
// apply), anything else is an external effect that asks in the default
// and auto modes, destructive unless the server says destructiveHint:
// false (the protocol's default is destructive).
func newRemoteTool(s *server, t *sdk.Tool) (*remoteTool, error) {
	schema := json.RawMessage(`{"type":"object","properties":{}}`)
	if t.InputSchema != nil {
		b, err := json.Marshal(t.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("input schema: %w", err)
		}
		schema = b
	}
	a := t.Annotations
	readOnly := a != nil && a.ReadOnlyHint
	meta := tool.Meta{
		ReadOnly:        readOnly,
		ConcurrencySafe: readOnly,
		Timeout:         s.cfg.Config.callTimeout(s.m.opts.CallTimeout),
		OutputCap:       s.m.opts.OutputCap,
	}
	if readOnly {
		meta.Effect, meta.Permission = tool.EffectRead, tool.ClassReadOnly
	} else {
		meta.Effect, meta.Permission = tool.EffectExternal, tool.ClassGeneric
		meta.Destructive = a == nil || a.DestructiveHint == nil || *a.DestructiveHint
	}
	desc := strings.TrimSpace(t.Description)
	title := t.Title
	if title == "" && a != nil {
		title = a.Title
	}
	if desc == "" {
		desc = title
	}
	if desc == "" {
		desc = t.Name
	}
	return &remoteTool{s: s, remote: t.Name, spec: tool.Spec{
		Name:        ToolName(s.cfg.Name, t.Name),
		Description: desc,
		InputSchema: schema,
		Meta:        meta,
	}}, nil
}

// mapResult turns an MCP tool result into a weft result: text and images
// as they are, other content as a line of text saying what it was, the
// structured content in Data (and as JSON text when there is no other
// content, as the protocol asks servers to provide both).
func mapResult(res *sdk.CallToolResult) tool.Result {
	var out tool.Result
	if res == nil {
		return out
	}
	for _, c := range res.Content {
		out.Content = append(out.Content, mapContent(c)...)
	}
	if res.StructuredContent != nil {
		if len(out.Content) == 0 {
			if b, err := json.Marshal(res.StructuredContent); err == nil {
				out.Content = append(out.Content, llm.Text(string(b)))
			}
		}
		out.Data = map[string]any{"structured_content": res.StructuredContent}
	}
	out.IsError = res.IsError
	return out
}

func mapContent(c sdk.Content) []llm.Block {
	switch c := c.(type) {
	case *sdk.TextContent:
		return []llm.Block{llm.Text(c.Text)}
	case *sdk.ImageContent:
		return []llm.Block{imageBlock(c.MIMEType, c.Data, "image")}
	case *sdk.AudioContent:
		return []llm.Block{llm.Text(fmt.Sprintf("[audio %s, %d bytes: not shown]", c.MIMEType, len(c.Data)))}
	case *sdk.ResourceLink:
		line := "[resource " + c.URI
		if c.Name != "" {
			line += " (" + c.Name + ")"
		}
		line += "]"
		if c.Description != "" {
			line += " " + c.Description
		}
		return []llm.Block{llm.Text(line)}
	case *sdk.EmbeddedResource:
		if c.Resource == nil {
			return nil
		}
		return resourceBlocks(c.Resource)
	case nil:
		return nil
	}
	return []llm.Block{llm.Text(fmt.Sprintf("[content of type %T: not shown]", c))}
}

// resourceBlocks renders one resource's contents.
func resourceBlocks(r *sdk.ResourceContents) []llm.Block {
	switch {
	case r.Blob == nil:
		return []llm.Block{llm.Text(r.Text)}
	case strings.HasPrefix(r.MIMEType, "image/"):
		return []llm.Block{imageBlock(r.MIMEType, r.Blob, "resource "+r.URI)}
	}
	mime := r.MIMEType
	if mime == "" {
		mime = "binary"
	}
	return []llm.Block{llm.Text(fmt.Sprintf("[resource %s: %s, %d bytes: not shown]", r.URI, mime, len(r.Blob)))}
}

func imageBlock(mime string, data []byte, what string) llm.Block {
	switch mime {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
	default:
		return llm.Text(fmt.Sprintf("[%s %s, %d bytes: a format the models do not take]", what, mime, len(data)))
	}
	if len(data) > maxImageBytes {
		return llm.Text(fmt.Sprintf("[%s %s, %d bytes: too large to show]", what, mime, len(data)))
	}
	return llm.Image(mime, data)
}
