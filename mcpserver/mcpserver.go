// Package mcpserver serves weft's tools over the Model Context Protocol, so
// that another agent (Claude Code, Cursor, an MCP client in any language)
// can call weft's published workflows and, when the operator opts in, its
// builtin tools. It is a front door like the HTTP API: every call goes
// through the same policy pipeline as a chat session's (rules, hooks,
// secret redaction, audit), and a call the rules leave to a person is put
// to the person behind the MCP client through elicitation; a client that
// cannot be asked gets a denial that says so.
//
// The exposed tool list follows the registry: a workflow published or
// unpublished while a client is connected appears or disappears on its
// next tools/list, and the client is sent notifications/tools/list_changed.
package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/tool"
	"github.com/weft-run/weft/tool/workflow"
)

// Config is what a Server serves and under which rules.
type Config struct {
	// Name and Version identify the server to clients (serverInfo).
	Name    string
	Version string
	// Tools is the registry the exposed tools are taken from, at every
	// tools/list and tools/call (so its changes show).
	Tools *tool.Registry
	// Expose picks the registry's tools to serve; nil serves the published
	// workflows only (workflow.IsTool). Builtin tools are an opt-in of the
	// operator, never the default.
	Expose func(spec tool.Spec) bool
	// Policy decides every call; required: a front door without rules would
	// be a way around them.
	Policy *policy.Policy
	Logger *slog.Logger
}

// Server is one MCP server over a tool registry. Its methods are safe for
// concurrent use; one Server serves any number of client sessions.
type Server struct {
	cfg Config
	srv *sdk.Server

	mu      sync.Mutex
	exposed map[string]string // tool name -> fingerprint of the spec served

	sessMu   sync.Mutex
	sessions map[*sdk.ServerSession]*tool.Session

	pending pendingQuestions
}

// New returns a Server for cfg.
func New(cfg Config) (*Server, error) {
	if cfg.Tools == nil {
		return nil, errors.New("mcpserver: Config.Tools is required")
	}
	if cfg.Policy == nil {
		return nil, errors.New("mcpserver: Config.Policy is required (calls must go through weft's rules)")
	}
	if cfg.Name == "" {
		cfg.Name = "weft"
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	if cfg.Expose == nil {
		cfg.Expose = func(s tool.Spec) bool { return workflow.IsTool(s.Name) }
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg, exposed: map[string]string{}, sessions: map[*sdk.ServerSession]*tool.Session{}}
	s.srv = sdk.NewServer(&sdk.Implementation{Name: cfg.Name, Version: cfg.Version}, &sdk.ServerOptions{
		Logger: cfg.Logger,
		// Always announce tools (with listChanged), even while none is
		// published yet: a client must learn to list them again later.
		Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{ListChanged: true}},
	})
	s.srv.AddReceivingMiddleware(s.syncBefore)
	s.Sync()
	return s, nil
}

// syncBefore brings the served tools up to date before a client lists or
// calls them, so that neither sees a tool the registry no longer has.
func (s *Server) syncBefore(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if method == "tools/list" || method == "tools/call" {
			s.Sync()
		}
		return next(ctx, method, req)
	}
}

// Sync makes the served tool list match the registry now. Changes are
// announced to connected clients with notifications/tools/list_changed.
func (s *Server) Sync() {
	s.mu.Lock()
	defer s.mu.Unlock()
	want := map[string]tool.Spec{}
	for _, spec := range s.cfg.Tools.Specs() {
		if s.cfg.Expose(spec) {
			want[spec.Name] = spec
		}
	}
	var gone []string
	for name, fp := range s.exposed {
		if spec, ok := want[name]; !ok || fingerprint(spec) != fp {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		s.srv.RemoveTools(gone...)
		for _, name := range gone {
			delete(s.exposed, name)
		}
	}
	names := make([]string, 0, len(want))
	for name := range want {
		if _, ok := s.exposed[name]; !ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		spec := want[name]
		t, err := mcpTool(spec)
		if err != nil {
			// The SDK panics on a schema that is not an object; such a tool
			// is left out (and logged) rather than taking the server down.
			s.cfg.Logger.Warn("mcpserver: tool not served", "tool", name, "error", err)
			continue
		}
		s.srv.AddTool(t, s.handler(name))
		s.exposed[name] = fingerprint(spec)
	}
}

func fingerprint(spec tool.Spec) string {
	b, _ := json.Marshal(struct {
		D string
		S json.RawMessage
		R bool
		X bool
	}{spec.Description, spec.InputSchema, spec.Meta.ReadOnly, spec.Meta.Destructive})
	return string(b)
}

// mcpTool is the MCP description of spec; its schema must be a JSON object
// schema.
func mcpTool(spec tool.Spec) (*sdk.Tool, error) {
	schema := spec.InputSchema
	if len(schema) == 0 {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	var m map[string]any
	if err := json.Unmarshal(schema, &m); err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	if m["type"] != "object" {
		return nil, fmt.Errorf(`input schema has type %v, MCP needs "object"`, m["type"])
	}
	t := &sdk.Tool{Name: spec.Name, Description: spec.Description, InputSchema: schema}
	readOnly := spec.Meta.ReadOnly
	destructive := spec.Meta.Destructive
	t.Annotations = &sdk.ToolAnnotations{ReadOnlyHint: readOnly}
	if !readOnly {
		t.Annotations.DestructiveHint = &destructive
	}
	return t, nil
}

// handler runs one call of the tool named name through the policy and the
// registry, as a chat session's loop does.
//
// A call the rules leave to a person cannot block inside the handler:
// since protocol 2026-07-28 a server may not send requests to the client
// while it serves one. The handler instead returns the question as an
// input request (an elicitation form) with a one-time request state; the
// client asks its user and calls again with the answer, and the handler
// runs the policy again with that answer (the SDK plays both parts for
// older clients, eliciting directly). The request state binds the answer
// to this tool and these arguments, so an approval cannot be replayed or
// sent ahead of the question.
func (s *Server) handler(name string) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		t, ok := s.cfg.Tools.Get(name)
		if !ok || !s.cfg.Expose(t.Spec()) {
			return errorResult("tool " + name + " is no longer available"), nil
		}
		args := json.RawMessage(`{}`)
		if req.Params != nil && len(req.Params.Arguments) > 0 {
			args = req.Params.Arguments
		}
		g := &gate{ss: req.Session, need: sdk.InputRequestMap{}}
		if req.Params != nil && req.Params.RequestState != "" {
			if s.pending.take(req.Params.RequestState, name, args) {
				g.answers = req.Params.InputResponses
			}
		}
		pol := s.cfg.Policy
		call := policy.Call{ToolUseID: callID(), Tool: name, Input: args, Spec: t.Spec()}
		v := pol.Before(ctx, call, g.human, g.checkpoint)
		if len(g.need) > 0 {
			return &sdk.CallToolResult{InputRequests: g.need, RequestState: s.pending.put(name, args)}, nil
		}
		if !v.Allow {
			msg := "permission denied: " + v.Reason
			if v.Context != "" {
				msg += "\n" + v.Context
			}
			return errorResult(msg), nil
		}
		input := args
		if len(v.Input) > 0 {
			input = v.Input
		}
		var env []string
		if pol.Secrets != nil {
			env = pol.Secrets.Env()
		}
		// A tool that makes calls of its own (a workflow's steps) finds the
		// same rules in its context; a question it raises mid-call can only
		// reach the person when the client allows requests inside a call.
		nested := nestedAsker{ss: req.Session}
		tctx := policy.WithCaller(ctx, policy.Caller{Policy: pol, Human: nested.human, Checkpoint: nested.checkpoint})
		res := s.cfg.Tools.Execute(tctx, &tool.Call{ID: call.ToolUseID, Name: name, Input: input,
			Session: s.toolSession(req.Session), Env: env, Secrets: pol.Secrets})
		pol.After(context.WithoutCancel(ctx), call, v, &res)
		return callResult(res), nil
	}
}

// toolSession is the tool state (files read, and so on) of one MCP client
// session, freed when the session ends.
func (s *Server) toolSession(ss *sdk.ServerSession) *tool.Session {
	if ss == nil {
		return tool.NewSession()
	}
	s.sessMu.Lock()
	defer s.sessMu.Unlock()
	ts, ok := s.sessions[ss]
	if !ok {
		ts = tool.NewSession()
		s.sessions[ss] = ts
		go func() {
			_ = ss.Wait()
			s.sessMu.Lock()
			delete(s.sessions, ss)
			s.sessMu.Unlock()
		}()
	}
	return ts
}

// approveSchema is the form an approval question shows.
var approveSchema = json.RawMessage(`{"type":"object","properties":{"approve":{"type":"boolean","title":"Approve","description":"Let weft run this call"}},"required":["approve"]}`)

// Input request keys: one per kind of question a call can raise.
const (
	keyApprove = "approve"
	keyConfirm = "confirm"
)

// gate collects the questions one pass of the policy raises, and answers
// them from the client's responses on the pass after.
type gate struct {
	ss      *sdk.ServerSession
	answers sdk.InputResponseMap
	need    sdk.InputRequestMap
}

func (g *gate) ask(key, message string) (bool, string) {
	if r, ok := g.answers[key]; ok {
		er, _ := r.(*sdk.ElicitResult)
		return judge(er)
	}
	if !canElicit(g.ss) {
		return false, "this call needs a person's approval, and the MCP client cannot be asked (it does not support elicitation)"
	}
	g.need[key] = &sdk.ElicitParams{Mode: "form", Message: message, RequestedSchema: approveSchema}
	return false, "waiting for the MCP client's answer"
}

func (g *gate) human(_ context.Context, c policy.Call, reason string) (bool, string) {
	return g.ask(keyApprove, approvalMessage(c, reason))
}

func (g *gate) checkpoint(_ context.Context, req policy.CheckpointRequest) bool {
	ok, _ := g.ask(keyConfirm, "weft: confirm an irreversible call: "+req.Message)
	return ok
}

func approvalMessage(c policy.Call, reason string) string {
	input := string(c.Input)
	if len(input) > 2000 {
		input = input[:2000] + "..."
	}
	return fmt.Sprintf("weft: %s wants to run with %s\n(%s)", c.Tool, input, reason)
}

// judge reads an answer to the approval form.
func judge(r *sdk.ElicitResult) (bool, string) {
	switch {
	case r == nil:
		return false, "the MCP client's answer was not an elicitation result"
	case r.Action != "accept":
		return false, "the person behind the MCP client answered " + r.Action
	}
	if ok, _ := r.Content["approve"].(bool); !ok {
		return false, "the person behind the MCP client did not approve"
	}
	return true, ""
}

func canElicit(ss *sdk.ServerSession) bool {
	if ss == nil {
		return false
	}
	p := ss.InitializeParams()
	return p != nil && p.Capabilities != nil && p.Capabilities.Elicitation != nil
}

// multiRoundTrip is the first protocol version in which a server may not
// send requests while serving one (SEP-2322).
const multiRoundTrip = "2026-07-28"

// nestedAsker answers questions raised inside a running call (a workflow's
// step needing confirmation): it elicits directly when the client's
// protocol allows that, and otherwise refuses, saying why.
type nestedAsker struct{ ss *sdk.ServerSession }

func (n nestedAsker) elicit(ctx context.Context, message string) (bool, string) {
	if !canElicit(n.ss) {
		return false, "this step needs a person's approval, and the MCP client cannot be asked (it does not support elicitation)"
	}
	if p := n.ss.InitializeParams(); p != nil && p.ProtocolVersion >= multiRoundTrip {
		return false, "this step needs a person's approval, which an MCP client on protocol " + p.ProtocolVersion + " cannot give in the middle of a call; run it from weft, or allow it by a rule"
	}
	res, err := n.ss.Elicit(ctx, &sdk.ElicitParams{Mode: "form", Message: message, RequestedSchema: approveSchema})
	if err != nil {
		return false, "asking the MCP client failed: " + err.Error()
	}
	return judge(res)
}

func (n nestedAsker) human(ctx context.Context, c policy.Call, reason string) (bool, string) {
	return n.elicit(ctx, approvalMessage(c, reason))
}

func (n nestedAsker) checkpoint(ctx context.Context, req policy.CheckpointRequest) bool {
	ok, _ := n.elicit(ctx, "weft: confirm an irreversible call: "+req.Message)
	return ok
}

func callID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "mcp_" + hex.EncodeToString(b[:])
}

func errorResult(msg string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: msg}}, IsError: true}
}

// callResult turns a tool result into MCP content: text and images.
func callResult(res tool.Result) *sdk.CallToolResult {
	out := &sdk.CallToolResult{IsError: res.IsError}
	for _, b := range res.Content {
		switch b.Type {
		case llm.BlockImage:
			if len(b.Data) > 0 {
				out.Content = append(out.Content, &sdk.ImageContent{Data: b.Data, MIMEType: b.MediaType})
			} else if b.URL != "" {
				out.Content = append(out.Content, &sdk.TextContent{Text: "[image: " + b.URL + "]"})
			}
		default:
			if b.Text != "" {
				out.Content = append(out.Content, &sdk.TextContent{Text: b.Text})
			}
		}
	}
	if len(out.Content) == 0 {
		out.Content = []sdk.Content{&sdk.TextContent{Text: ""}}
	}
	return out
}

// ServeStdio serves one client on r and w (the process's stdin and stdout
// for `weft mcp serve`) until the client leaves or ctx ends.
func (s *Server) ServeStdio(ctx context.Context, r io.ReadCloser, w io.WriteCloser) error {
	return s.Run(ctx, &sdk.IOTransport{Reader: r, Writer: w})
}

// Run serves one client on transport t until the client leaves or ctx
// ends; either is a clean end.
func (s *Server) Run(ctx context.Context, t sdk.Transport) error {
	err := s.srv.Run(ctx, t)
	if errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// Handler serves MCP's streamable HTTP transport (and its older SSE
// variant's GET stream) for `weft serve --mcp` at /mcp; authentication is
// the caller's (the HTTP server wraps it in the same bearer check as the
// API).
func (s *Server) Handler() http.Handler {
	return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.srv }, nil)
}
