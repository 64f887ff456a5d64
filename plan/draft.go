package plan

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/tool"
)

// DraftConfig says how to have a model draft a plan.
type DraftConfig struct {
	Provider  llm.Provider
	Model     string
	MaxTokens int // 0: the provider's default for the model

	Goal string
	// Tools are what steps may use. They are described in the prompt, not
	// offered as callable tools: tools are disabled at planning time, so
	// the model organises the work and never executes it.
	Tools []tool.Spec
	// InputSchema is the run's input contract (a JSON Schema object),
	// shown to the model so it can use {{inputs.x}}.
	InputSchema json.RawMessage
	// Memories are relevant facts remembered from earlier sessions.
	Memories []string
	// Files are the granted file names, usable as "@file:<name>".
	Files []string
	// MaxAttempts bounds the model calls: a plan that cannot be parsed or
	// fails validation goes back to the model with the problems. 0 means 3.
	MaxAttempts int
	// Env validates the drafts. Zero fields are derived from the above:
	// Tool from Tools, Inputs from InputSchema's properties, Files from
	// Files.
	Env Env
	// OnToken, when set, receives the model's text as it streams
	// (plan_token events). Every attempt streams; a new attempt begins
	// after a rejected draft.
	OnToken func(text string)
}

// ProviderError is a planning call that did not complete (timeout,
// malformed stream, auth, ...). Draft does not retry those: the engine's
// retry policy does; Outcome.Status.Retryable says whether it may.
type ProviderError struct {
	Outcome llm.Outcome
}

func (e *ProviderError) Error() string {
	msg := e.Outcome.Message
	if msg == "" {
		msg = "no detail"
	}
	return "plan: planning call ended " + string(e.Outcome.Status) + ": " + msg
}

func (e *ProviderError) Unwrap() error { return e.Outcome.Err }

// DraftError is returned when no attempt produced a valid plan. Err is the
// last attempt's problem: a *ValidationError, or why the answer held no
// plan.
type DraftError struct {
	Attempts int
	Err      error
}

func (e *DraftError) Error() string {
	return fmt.Sprintf("plan: no valid plan after %d attempts; last problems:\n%v", e.Attempts, e.Err)
}

func (e *DraftError) Unwrap() error { return e.Err }

// Draft asks the model for a plan for cfg.Goal and returns it validated,
// with every step's id set (Plan.Normalize). The request carries no tools;
// the system prompt explains the JSON format and the placeholders, and the
// answer may wrap the JSON in a ```json fence or prose. A failed model call
// is returned at once as a *ProviderError (or ctx.Err() when ctx ended).
func Draft(ctx context.Context, cfg DraftConfig) (Plan, error) {
	if cfg.Provider == nil {
		return Plan{}, errors.New("plan: DraftConfig.Provider is nil")
	}
	attempts := cfg.MaxAttempts
	if attempts <= 0 {
		attempts = 3
	}
	env := draftEnv(cfg)
	system := systemPrompt(cfg, env)
	msgs := []llm.Message{llm.UserText(userPrompt(cfg))}
	var last error
	for range attempts {
		req := &llm.Request{Model: cfg.Model, System: llm.SystemText(system), Messages: msgs, MaxTokens: cfg.MaxTokens}
		msg, out := streamDraft(ctx, cfg, req)
		if err := ctx.Err(); err != nil {
			return Plan{}, err
		}
		if out.Status != llm.StatusCompleted {
			return Plan{}, &ProviderError{Outcome: out}
		}
		p, err := extractPlan(msg.Text())
		var feedback string
		if err != nil {
			feedback = "Your answer did not contain a usable plan: " + err.Error() + "."
			if out.StopReason == llm.StopMaxTokens {
				feedback += " It was cut off at the output limit: make the plan shorter."
			}
			feedback += ` Answer with only the JSON object {"steps": [...]}.`
		} else if err = Validate(p, env); err != nil {
			feedback = "The plan was rejected:\n" + err.Error() + "\nFix every problem and answer with the whole corrected plan as one JSON object."
		} else {
			return p.Normalize(), nil
		}
		last = err
		if len(msg.Content) > 0 {
			msgs = append(msgs, msg, llm.UserText(feedback))
		} else {
			// An empty assistant turn is invalid for some providers: fold
			// the feedback into the last user turn instead.
			u := &msgs[len(msgs)-1]
			u.Content = append(u.Content, llm.Text(feedback))
		}
	}
	return Plan{}, &DraftError{Attempts: attempts, Err: last}
}

func streamDraft(ctx context.Context, cfg DraftConfig, req *llm.Request) (llm.Message, llm.Outcome) {
	var msg llm.Message
	var out llm.Outcome
	for ev := range cfg.Provider.Stream(ctx, req) {
		switch ev.Kind {
		case llm.EventBlockDelta:
			if ev.Block.Type == llm.BlockText && cfg.OnToken != nil {
				cfg.OnToken(ev.Delta)
			}
		case llm.EventMessageDone:
			msg = *ev.Message
		case llm.EventOutcome:
			out = ev.Outcome
		}
	}
	msg.Role = llm.RoleAssistant
	return msg, out
}

func draftEnv(cfg DraftConfig) Env {
	env := cfg.Env
	if env.Tool == nil {
		byName := make(map[string]tool.Spec, len(cfg.Tools))
		for _, t := range cfg.Tools {
			byName[t.Name] = t
		}
		env.Tool = func(name string) (tool.Spec, bool) {
			s, ok := byName[name]
			return s, ok
		}
	}
	if env.Inputs == nil {
		if names := schemaProperties(cfg.InputSchema); len(names) > 0 {
			env.Inputs = make(map[string]bool, len(names))
			for _, n := range names {
				env.Inputs[n] = true
			}
		}
	}
	if env.Files == nil && len(cfg.Files) > 0 {
		env.Files = make(map[string]bool, len(cfg.Files))
		for _, f := range cfg.Files {
			env.Files[f] = true
		}
	}
	return env
}

// schemaProperties returns the top-level property names of a JSON Schema.
func schemaProperties(schema json.RawMessage) []string {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if len(schema) == 0 || json.Unmarshal(schema, &s) != nil {
		return nil
	}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	return names
}

// extractPlan finds the plan in a model's answer: the first JSON object
// with a "steps" key, wherever it sits (a ```json fence, prose around it).
func extractPlan(text string) (Plan, error) {
	for i := 0; i < len(text); i++ {
		k := strings.IndexByte(text[i:], '{')
		if k < 0 {
			break
		}
		i += k
		dec := json.NewDecoder(strings.NewReader(text[i:]))
		var raw json.RawMessage
		if dec.Decode(&raw) != nil {
			continue
		}
		var probe struct {
			Steps json.RawMessage `json:"steps"`
		}
		if json.Unmarshal(raw, &probe) != nil || probe.Steps == nil {
			continue
		}
		var p Plan
		if err := json.Unmarshal(raw, &p); err != nil {
			return Plan{}, fmt.Errorf("the JSON plan does not have the expected shape: %v", err)
		}
		return p, nil
	}
	return Plan{}, errors.New(`no JSON object with a "steps" list was found`)
}

const promptIntro = `You are the planner of a plan-and-execute runner. Turn the user's goal into a plan: an ordered list of tool calls that the runner will execute later. You cannot call tools now and must not try; you only organise the work.

Answer with one JSON object and nothing else:

{"steps": [
  {"id": "<short unique id>", "description": "<what this step does and why>", "tool": "<tool name>", "args": {<the tool's arguments>}, "dependsOn": ["<ids of earlier steps>"], "requiresApproval": false}
]}

Rules:
- "tool" must be one of the tools listed below, and "args" a JSON object that satisfies its input schema.
- "id" uses letters, digits, '_' and '-', is unique, and is not only digits.
- Steps run in parallel unless "dependsOn" orders them: a step starts once every step it depends on has completed. "dependsOn" may name only EARLIER steps (by id, or by 0-based position).
- A step's args can use the results of its dependencies (direct or through other dependencies) with placeholders in string values:
  {{steps.<id>.result}} the whole result of an earlier step (<id> may also be its 0-based position);
  {{steps.<id>.result.field.list[0]}} a part of a JSON result;
  {{last.result}} the result of the step just before in the list (it must be a dependency);
  {{inputs.<name>}} a run input (only the declared ones);
  "@file:<name>" as a whole string value: a granted file.
  A string that is exactly one placeholder takes the JSON type of what it refers to; inside longer text the value is inserted as text.
- Set "requiresApproval": true on steps a person should confirm before they run: sending messages, deleting or overwriting data, spending money, anything hard to undo.
- Prefer few, independent steps; put dependencies only where a step needs another's result or must come after it.
`

const promptExample = `Example (the tool names here are only illustrations; use the tools listed below):

{"steps": [
  {"id": "find", "description": "Find the files that mention the deprecated API", "tool": "Grep", "args": {"pattern": "OldClient", "path": "{{inputs.repo}}"}},
  {"id": "readme", "description": "Read the README for the project's conventions", "tool": "Read", "args": {"file_path": "README.md"}},
  {"id": "report", "description": "Write the findings", "tool": "Write", "args": {"file_path": "report.md", "content": "Matches:\n{{steps.find.result}}\n\nConventions:\n{{steps.readme.result}}"}, "dependsOn": ["find", "readme"], "requiresApproval": true}
]}
`

func systemPrompt(cfg DraftConfig, env Env) string {
	var sb strings.Builder
	sb.WriteString(promptIntro)
	limit := env.MaxSteps
	if limit == 0 {
		limit = MaxSteps
	}
	if limit > 0 {
		fmt.Fprintf(&sb, "- Use at most %d steps.\n", limit)
	}
	sb.WriteString("\n")
	sb.WriteString(promptExample)
	sb.WriteString("\nTools:\n")
	if len(cfg.Tools) == 0 {
		sb.WriteString("(none)\n")
	}
	for _, t := range cfg.Tools {
		sb.WriteString("\n## " + t.Name + "\n")
		if d := strings.TrimSpace(t.Description); d != "" {
			sb.WriteString(d + "\n")
		}
		if t.ReadOnly {
			sb.WriteString("Read-only.\n")
		} else if t.Effect != "" {
			sb.WriteString("Effect: " + string(t.Effect) + ".\n")
		}
		schema := t.InputSchema
		if len(bytes.TrimSpace(schema)) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		var c bytes.Buffer
		if json.Compact(&c, schema) == nil {
			sb.WriteString("Input schema: " + c.String() + "\n")
		}
	}
	return sb.String()
}

func userPrompt(cfg DraftConfig) string {
	var sb strings.Builder
	sb.WriteString("Goal:\n" + strings.TrimSpace(cfg.Goal) + "\n")
	if len(bytes.TrimSpace(cfg.InputSchema)) > 0 {
		var c bytes.Buffer
		if json.Compact(&c, cfg.InputSchema) == nil {
			sb.WriteString("\nRun inputs (JSON Schema; use them as {{inputs.<name>}}):\n" + c.String() + "\n")
		}
	}
	if len(cfg.Files) > 0 {
		sb.WriteString("\nGranted files (use them as \"@file:<name>\"):\n")
		for _, f := range cfg.Files {
			sb.WriteString("- " + strconv.Quote(f) + "\n")
		}
	}
	if len(cfg.Memories) > 0 {
		sb.WriteString("\nThings remembered from earlier sessions (may be relevant; may be out of date):\n")
		for _, m := range cfg.Memories {
			sb.WriteString("- " + strings.TrimSpace(m) + "\n")
		}
	}
	return sb.String()
}
