package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/tool"
)

// Names of the resource tools (Claude Code's ListMcpResourcesTool and
// ReadMcpResourceTool, with the same inputs).
const (
	ListResourcesTool = "ListMcpResources"
	ReadResourceTool  = "ReadMcpResource"
)

// maxListedResources bounds one listing: a server with a million
// resources must not fill the context.
const maxListedResources = 500

type listResourcesInput struct {
	Server string `json:"server,omitempty" jsonschema:"only this server's resources (default: every connected server's)"`
}

type readResourceInput struct {
	Server string `json:"server" jsonschema:"the MCP server's name"`
	URI    string `json:"uri" jsonschema:"the resource's URI, as ListMcpResources gives it"`
}

// listedResource is one entry of ListMcpResources' JSON answer.
type listedResource struct {
	URI         string `json:"uri"`
	Name        string `json:"name,omitempty"`
	MIMEType    string `json:"mimeType,omitempty"`
	Description string `json:"description,omitempty"`
	Server      string `json:"server"`
}

func (m *Manager) resourceTools() []tool.Tool {
	ro := tool.Meta{ReadOnly: true, ConcurrencySafe: true, Effect: tool.EffectRead, Permission: tool.ClassReadOnly,
		Timeout: m.opts.CallTimeout, OutputCap: m.opts.OutputCap}
	list := tool.Func(ListResourcesTool,
		"Lists the resources (files, records, documents) the connected MCP servers offer, as JSON: uri, name, mimeType, description and server. Read one with ReadMcpResource.",
		ro, func(ctx context.Context, in listResourcesInput, _ *tool.Call) (tool.Result, error) {
			return m.listResources(ctx, in.Server)
		})
	read := tool.Func(ReadResourceTool,
		"Reads one resource of an MCP server by its URI (see ListMcpResources).",
		ro, func(ctx context.Context, in readResourceInput, _ *tool.Call) (tool.Result, error) {
			return m.readResource(ctx, in.Server, in.URI)
		})
	return []tool.Tool{list, read}
}

func (m *Manager) listResources(ctx context.Context, only string) (tool.Result, error) {
	var servers []*server
	if only != "" {
		s := m.server(only)
		if s == nil {
			return m.unknownServer(only), nil
		}
		servers = []*server{s}
	} else {
		servers = m.connectedServers()
	}
	out := []listedResource{}
	var notes []string
	for _, s := range servers {
		sess, err := s.session()
		if err != nil {
			if only != "" {
				return tool.Errorf("%s", err.Error()), nil
			}
			continue
		}
		s.mu.Lock()
		has := s.resources
		s.mu.Unlock()
		if !has {
			if only != "" {
				return tool.Errorf("MCP server %q offers no resources", only), nil
			}
			continue
		}
		for r, err := range sess.Resources(ctx, nil) {
			if err != nil {
				if ctx.Err() != nil {
					return tool.Result{}, ctx.Err()
				}
				notes = append(notes, fmt.Sprintf("listing %s's resources failed: %v", s.cfg.Name, err))
				break
			}
			if len(out) == maxListedResources {
				notes = append(notes, fmt.Sprintf("only the first %d resources are listed; pass server to narrow", maxListedResources))
				break
			}
			out = append(out, listedResource{URI: r.URI, Name: r.Name, MIMEType: r.MIMEType, Description: r.Description, Server: s.cfg.Name})
		}
		if len(out) == maxListedResources {
			break
		}
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return tool.Result{}, err
	}
	res := tool.Text(string(b))
	if len(out) == 0 && len(notes) == 0 {
		res = tool.Text("No resources found in the connected MCP servers.")
	}
	for _, n := range notes {
		res.Content = append(res.Content, llm.Text("\n"+n))
	}
	return res, nil
}

func (m *Manager) readResource(ctx context.Context, name, uri string) (tool.Result, error) {
	s := m.server(name)
	if s == nil {
		return m.unknownServer(name), nil
	}
	sess, err := s.session()
	if err != nil {
		return tool.Errorf("%s", err.Error()), nil
	}
	res, err := sess.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
	if err != nil {
		if ctx.Err() != nil {
			return tool.Result{}, ctx.Err()
		}
		return tool.Errorf("reading %s from MCP server %q: %v", uri, name, err), nil
	}
	var out tool.Result
	for _, c := range res.Contents {
		if c == nil {
			continue
		}
		if len(res.Contents) > 1 {
			out.Content = append(out.Content, llm.Text(fmt.Sprintf("\n--- %s (%s)\n", c.URI, c.MIMEType)))
		}
		out.Content = append(out.Content, resourceBlocks(c)...)
	}
	return out, nil
}

func (m *Manager) unknownServer(name string) tool.Result {
	var names []string
	for _, s := range m.connectedServers() {
		names = append(names, s.cfg.Name)
	}
	slices.Sort(names)
	return tool.Errorf("no MCP server %q; configured: %s", name, strings.Join(names, ", "))
}

// Prompt is a server prompt offered as a chat slash command.
type Prompt struct {
	Server      string           `json:"server"`
	Name        string           `json:"name"`
	Command     string           `json:"command"` // without the slash
	Description string           `json:"description,omitempty"`
	Arguments   []PromptArgument `json:"arguments,omitempty"`
}

// PromptArgument is one argument of a prompt.
type PromptArgument struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

// Usage is the command with its arguments, for help lines.
func (p Prompt) Usage() string {
	var b strings.Builder
	b.WriteString("/" + p.Command)
	for _, a := range p.Arguments {
		if a.Required {
			b.WriteString(" <" + a.Name + ">")
		} else {
			b.WriteString(" [" + a.Name + "]")
		}
	}
	return b.String()
}

// Prompts lists the prompts of the connected servers.
func (m *Manager) Prompts() []Prompt {
	var out []Prompt
	for _, s := range m.connectedServers() {
		s.mu.Lock()
		for _, p := range s.prompts {
			if p == nil {
				continue
			}
			pr := Prompt{Server: s.cfg.Name, Name: p.Name, Command: PromptCommand(s.cfg.Name, p.Name), Description: p.Description}
			for _, a := range p.Arguments {
				if a != nil {
					pr.Arguments = append(pr.Arguments, PromptArgument{Name: a.Name, Description: a.Description, Required: a.Required})
				}
			}
			out = append(out, pr)
		}
		s.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b Prompt) int { return strings.Compare(a.Command, b.Command) })
	return out
}

// ErrNoPrompt is returned by RunPrompt for a command no server offers.
var ErrNoPrompt = errors.New("no such MCP prompt")

// RunPrompt expands a slash command line ("/mcp__server__prompt args...")
// into the text of the server's prompt, to be sent as a user message.
// Arguments are given in the prompt's order, space-separated (quote one
// with spaces), or as name=value; a prompt with a single argument takes
// the whole rest of the line.
func (m *Manager) RunPrompt(ctx context.Context, line string) (string, error) {
	line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "/"))
	cmd, rest, _ := strings.Cut(line, " ")
	var p *Prompt
	for _, x := range m.Prompts() {
		if x.Command == cmd {
			p = &x
			break
		}
	}
	if p == nil {
		return "", fmt.Errorf("%w: /%s", ErrNoPrompt, cmd)
	}
	args, err := promptArgs(*p, strings.TrimSpace(rest))
	if err != nil {
		return "", err
	}
	s := m.server(p.Server)
	if s == nil {
		return "", fmt.Errorf("%w: /%s", ErrNoPrompt, cmd)
	}
	sess, err := s.session()
	if err != nil {
		return "", err
	}
	res, err := sess.GetPrompt(ctx, &sdk.GetPromptParams{Name: p.Name, Arguments: args})
	if err != nil {
		return "", fmt.Errorf("MCP server %q: prompt %s: %w", p.Server, p.Name, err)
	}
	var parts []string
	roles := map[sdk.Role]bool{}
	for _, msg := range res.Messages {
		if msg != nil {
			roles[msg.Role] = true
		}
	}
	for _, msg := range res.Messages {
		if msg == nil {
			continue
		}
		var text []string
		for _, b := range mapContent(msg.Content) {
			switch b.Type {
			case llm.BlockText:
				text = append(text, b.Text)
			case llm.BlockImage:
				text = append(text, "[image: not included]")
			}
		}
		t := strings.Join(text, "\n")
		if len(roles) > 1 {
			t = "[" + string(msg.Role) + "]\n" + t
		}
		parts = append(parts, t)
	}
	out := strings.TrimSpace(strings.Join(parts, "\n\n"))
	if out == "" {
		return "", fmt.Errorf("MCP server %q: prompt %s returned no text", p.Server, p.Name)
	}
	return out, nil
}

// promptArgs maps a command's argument text onto the prompt's arguments.
func promptArgs(p Prompt, rest string) (map[string]string, error) {
	args := map[string]string{}
	known := map[string]bool{}
	for _, a := range p.Arguments {
		known[a.Name] = true
	}
	if len(p.Arguments) == 1 && rest != "" {
		name := p.Arguments[0].Name
		if v, ok := strings.CutPrefix(rest, name+"="); ok {
			rest = v
		}
		args[name] = unquote(rest)
	} else if rest != "" {
		words, err := splitWords(rest)
		if err != nil {
			return nil, err
		}
		next := 0
		for _, w := range words {
			if k, v, ok := strings.Cut(w, "="); ok && known[k] {
				args[k] = v
				continue
			}
			for next < len(p.Arguments) && args[p.Arguments[next].Name] != "" {
				next++
			}
			if next == len(p.Arguments) {
				return nil, fmt.Errorf("too many arguments; usage: %s", p.Usage())
			}
			args[p.Arguments[next].Name] = w
			next++
		}
	}
	var missing []string
	for _, a := range p.Arguments {
		if a.Required && args[a.Name] == "" {
			missing = append(missing, a.Name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("missing %s; usage: %s", strings.Join(missing, ", "), p.Usage())
	}
	return args, nil
}

func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' || s[0] == '\'') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1]
	}
	return s
}

// splitWords splits on spaces, keeping quoted runs ("a b" or 'a b')
// together.
func splitWords(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	var quote rune
	inWord := false
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '"' || r == '\'':
			quote, inWord = r, true
		case unicode.IsSpace(r):
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, errors.New("unclosed quote in the arguments")
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out, nil
}
