// Package tool is weft's tool contract: "loose tools, tight framework"
// (seed 003). A tool declares its name, JSON Schema and metadata and only
// produces content (and optionally progress). The framework (Registry.Execute)
// validates arguments, enforces the deadline, recovers panics, caps output
// and always yields exactly one result per call, so a tool author cannot
// break the protocol.
//
// Everything the engine needs to know about a tool is in its Meta, never
// in its name: the permission layer keys on ReadOnly, Effect and
// Permission; the agent loop runs ConcurrencySafe calls in parallel, lets
// calls of other tools that declare a PathArg run in parallel on distinct
// paths, and ends the run after a call of an EndsTurn tool. A tool of your
// own (or an MCP server's) that declares the same Meta as a builtin is
// treated the same way.
package tool

import (
	"context"
	"encoding/json"
	"time"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/policy/secret"
)

// Effect says what a tool does to the world; the permission layer keys on it.
type Effect string

const (
	EffectRead     Effect = "read"
	EffectWrite    Effect = "write"
	EffectExecute  Effect = "execute"
	EffectExternal Effect = "external"
)

// PermissionClass groups tools for permission rules and modes.
type PermissionClass string

const (
	ClassBash     PermissionClass = "bash"
	ClassFile     PermissionClass = "file"
	ClassWebFetch PermissionClass = "webfetch"
	ClassReadOnly PermissionClass = "readonly"
	ClassGeneric  PermissionClass = "generic"
)

// Defaults applied by the framework.
const (
	DefaultTimeout   = 120 * time.Second
	DefaultOutputCap = 16000 // characters
)

// Meta is what the framework and the permission layer need to know about a
// tool. The zero value is the conservative choice: not read-only, not
// concurrency-safe, generic, default timeout and cap.
type Meta struct {
	ReadOnly           bool            `json:"read_only"`
	ConcurrencySafe    bool            `json:"concurrency_safe"`
	Effect             Effect          `json:"effect,omitempty"`
	Permission         PermissionClass `json:"permission_class,omitempty"`
	RequiresCheckpoint bool            `json:"requires_checkpoint,omitempty"`
	Destructive        bool            `json:"destructive,omitempty"`
	// Timeout: 0 means DefaultTimeout, negative means none.
	Timeout time.Duration `json:"timeout,omitempty"`
	// OutputCap in characters: 0 means DefaultOutputCap, negative means none.
	OutputCap int `json:"output_cap,omitempty"`
	// PathArg names the input field holding the one path a call changes
	// (Write's and Edit's "file_path"). Calls of a tool that is not
	// ConcurrencySafe may then run in parallel with other such calls as
	// long as no two name the same path (compared as the policy passes
	// the input on: weft's file tools get resolved paths). "" means calls
	// of the tool run alone.
	PathArg string `json:"path_arg,omitempty"`
	// EndsTurn says that a call which succeeds hands the turn to the user
	// (AskUserQuestion: the answer comes as the next user message), so the
	// loop ends the run after the turn's tool calls instead of calling the
	// model again.
	EndsTurn bool `json:"ends_turn,omitempty"`
}

// Spec declares a tool.
type Spec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
	Meta
}

// LLM returns the part of the spec the model sees.
func (s Spec) LLM() llm.ToolSpec {
	return llm.ToolSpec{Name: s.Name, Description: s.Description, InputSchema: s.InputSchema}
}

// Tool is implemented by every tool. Run may return an error instead of an
// error result; the framework turns it into one. Run must honour ctx.
type Tool interface {
	Spec() Spec
	Run(ctx context.Context, call *Call) (Result, error)
}

// Call is one invocation of a tool.
type Call struct {
	ID    string          // the model's tool_use id
	Name  string          // the tool's name
	Input json.RawMessage // validated against the tool's schema before Run
	// Session is the state the tools of one session share (files read,
	// todo list). The framework supplies an empty one when nil.
	Session *Session
	// Progress reports a line of progress (e.g. streamed command output);
	// it is never nil inside Run and is safe for concurrent use.
	Progress func(text string)
	// Notify emits a side event of the run (e.g. ask_user with its
	// questions, todos with the new list); never nil inside Run.
	Notify func(kind string, data any)
	// Env is added to the environment of processes the tool starts (the
	// secrets of the run, hook-provided variables); later entries win.
	Env []string
	// Secrets are the run's registered secrets. Execute redacts the
	// result with them before capping it, so that no cut can leave a piece
	// of a value in clear; a tool that starts a process builds its
	// environment with secret.ToolEnv from them and redacts what it
	// streams or cuts itself the same way. nil means none.
	Secrets *secret.Set
}

// Result is what a tool produced. Content holds text and image blocks.
type Result struct {
	Content []llm.Block `json:"content"`
	IsError bool        `json:"is_error,omitempty"`
	// Truncated is how many characters the output cap removed.
	Truncated int `json:"truncated,omitempty"`
	// Data is optional structured detail for clients (e.g. an exit code);
	// the model sees only Content.
	Data map[string]any `json:"data,omitempty"`
}

// Text returns a text result.
func Text(s string) Result { return Result{Content: []llm.Block{llm.Text(s)}} }

// Errorf returns an error result the model sees.
func Errorf(format string, args ...any) Result {
	return Result{Content: []llm.Block{llm.Text(sprintf(format, args...))}, IsError: true}
}

// TextOf concatenates the result's text blocks.
func (r Result) TextOf() string {
	m := llm.Message{Content: r.Content}
	return m.Text()
}
