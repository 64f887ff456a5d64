package hook

import (
	"bytes"
	"encoding/json"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Input is what a hook is told about the event: the JSON envelope a command
// reads on stdin and an HTTP hook receives as its body. Fields that do not
// apply to the event are left zero (and omitted). The envelope also carries
// "hook_event_name" (Claude Code's name when one exists, else the seed
// name) and "weft_event" (the seed name).
type Input struct {
	Event          Event           `json:"-"`
	SessionID      string          `json:"session_id"`
	Cwd            string          `json:"cwd"`
	ToolName       string          `json:"tool_name,omitempty"`
	ToolInput      json.RawMessage `json:"tool_input,omitempty"`
	ToolUseID      string          `json:"tool_use_id,omitempty"`
	ToolResponse   json.RawMessage `json:"tool_response,omitempty"`
	IsError        bool            `json:"is_error,omitempty"`
	Prompt         string          `json:"prompt,omitempty"`
	Reason         string          `json:"reason,omitempty"` // permission reason, stop or end reason
	PermissionMode string          `json:"permission_mode,omitempty"`

	Model           string `json:"model,omitempty"`
	Turn            int    `json:"turn,omitempty"`
	MessageCount    int    `json:"message_count,omitempty"`
	InputTokens     int    `json:"input_tokens,omitempty"`
	OutputTokens    int    `json:"output_tokens,omitempty"`
	StopReason      string `json:"stop_reason,omitempty"`
	ResponsePreview string `json:"response_preview,omitempty"` // cut to PreviewLimit bytes

	Message string `json:"message,omitempty"` // notification text
	Level   string `json:"level,omitempty"`   // notification level

	TaskID          string `json:"task_id,omitempty"`
	TaskDescription string `json:"task_description,omitempty"`

	// Extra is merged into the envelope (for example "source" on
	// session_start, "trigger" on pre_compact, "stop_hook_active",
	// "transcript_path"). The fields above win over Extra keys of the same
	// name, so a caller cannot spoof hook_event_name by accident.
	Extra map[string]any `json:"-"`
}

// PreviewLimit bounds Input.ResponsePreview (seed 000: at most 500 bytes).
const PreviewLimit = 500

// maxEnvString is the longest NAME=value string (with its NUL) the kernel
// lets exec pass: Linux's MAX_ARG_STRLEN, 32 pages (128 KiB with 4 KiB
// pages). A value that does not fit is never cut short: a guard hook that
// reads a shortened TOOL_INPUT would pass a command whose dangerous part
// lies past the cut.
var maxEnvString = 32 * os.Getpagesize()

// OmittedEnv names the variable that lists, comma-separated, the hook
// variables left empty because their value could not be passed in full
// (too long for one environment string, or holding a NUL byte). The stdin
// envelope always carries the full values.
const OmittedEnv = "WEFT_HOOK_OMITTED"

// eventName is the hook_event_name a hook sees.
func (e Event) eventName() string {
	if n := e.ClaudeName(); n != "" {
		return n
	}
	return string(e)
}

// envelope encodes in as the JSON a hook receives. It never fails: raw
// fields that are not valid JSON are sent as strings and Extra values that
// cannot be encoded are dropped, because a hook that sees a slightly
// degraded envelope is better than a hook that silently does not run.
func (in Input) envelope() []byte {
	type plain Input // same fields, without methods
	p := plain(in)
	p.ResponsePreview = truncateUTF8(p.ResponsePreview, PreviewLimit)
	p.ToolInput = validRaw(p.ToolInput)
	p.ToolResponse = validRaw(p.ToolResponse)
	core, err := json.Marshal(p)
	fields := map[string]json.RawMessage{}
	for k, v := range in.Extra {
		if b, err := json.Marshal(v); err == nil {
			fields[k] = b
		}
	}
	var coreFields map[string]json.RawMessage
	if err == nil && json.Unmarshal(core, &coreFields) == nil {
		for k, v := range coreFields {
			fields[k] = v
		}
	}
	fields["hook_event_name"], _ = json.Marshal(in.Event.eventName())
	fields["weft_event"], _ = json.Marshal(string(in.Event))
	return envelopeObject(fields)
}

// envelopeOrder is Claude Code's key order: scripts that match the raw
// text (grep, case patterns) rather than parse it see what they expect.
var envelopeOrder = []string{"session_id", "transcript_path", "cwd", "permission_mode", "hook_event_name",
	"tool_name", "tool_input", "tool_response", "tool_use_id", "prompt"}

// envelopeObject encodes fields with envelopeOrder's keys first, then the
// rest sorted.
func envelopeObject(fields map[string]json.RawMessage) []byte {
	keys := make([]string, 0, len(fields))
	seen := map[string]bool{}
	for _, k := range envelopeOrder {
		if _, ok := fields[k]; ok {
			keys = append(keys, k)
			seen[k] = true
		}
	}
	rest := make([]string, 0, len(fields))
	for k := range fields {
		if !seen[k] {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	keys = append(keys, rest...)
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		name, _ := json.Marshal(k)
		b.Write(name)
		b.WriteByte(':')
		b.Write(fields[k])
	}
	b.WriteByte('}')
	return b.Bytes()
}

func validRaw(r json.RawMessage) json.RawMessage {
	if len(r) == 0 || json.Valid(r) {
		return r
	}
	b, _ := json.Marshal(string(r))
	return b
}

// env returns seed 000's hook environment for in (the env builders'
// table), plus CLAUDE_PROJECT_DIR for Claude Code scripts. Each value is
// passed whole or not at all: omitted lists the variables set empty
// because their value cannot be an environment string (see maxEnvString),
// which are also named in OmittedEnv.
func (in Input) env(projectRoot string) (env, omitted []string) {
	if projectRoot == "" {
		projectRoot = in.Cwd
	}
	kv := []string{
		"HOOK_TYPE", string(in.Event),
		"PROJECT_ROOT", projectRoot,
		"CLAUDE_PROJECT_DIR", projectRoot,
		"PLATFORM", runtime.GOOS,
		"ARCH", runtime.GOARCH,
		"CWD", in.Cwd,
	}
	if in.SessionID != "" {
		kv = append(kv, "SESSION_ID", in.SessionID)
	}
	switch in.Event {
	case PreSampling:
		kv = append(kv, "MODEL", in.Model, "TURN", strconv.Itoa(in.Turn), "MESSAGE_COUNT", strconv.Itoa(in.MessageCount))
	case PostSampling:
		kv = append(kv, "MODEL", in.Model, "TURN", strconv.Itoa(in.Turn),
			"INPUT_TOKENS", strconv.Itoa(in.InputTokens), "OUTPUT_TOKENS", strconv.Itoa(in.OutputTokens),
			"STOP_REASON", in.StopReason, "RESPONSE_PREVIEW", truncateUTF8(in.ResponsePreview, PreviewLimit))
	case PreToolUse:
		kv = append(kv, "TOOL_NAME", in.ToolName, "TOOL_INPUT", string(in.ToolInput))
	case PostToolUse, PostToolUseFailure:
		kv = append(kv, "TOOL_NAME", in.ToolName, "TOOL_INPUT", string(in.ToolInput),
			"TOOL_OUTPUT", rawText(in.ToolResponse), "TOOL_IS_ERROR", strconv.FormatBool(in.IsError || in.Event == PostToolUseFailure))
	case PermissionRequest, PermissionDenied:
		kv = append(kv, "TOOL_NAME", in.ToolName, "PERMISSION_REASON", in.Reason)
	case Notification:
		kv = append(kv, "NOTIFICATION_MESSAGE", in.Message, "NOTIFICATION_LEVEL", in.Level)
	case TaskCreated, TaskCompleted:
		kv = append(kv, "TASK_ID", in.TaskID, "TASK_DESCRIPTION", in.TaskDescription)
	case Stop, SubagentStop, RunComplete, RunError, SessionEnd:
		if in.StopReason != "" {
			kv = append(kv, "STOP_REASON", in.StopReason)
		}
	}
	env = make([]string, 0, len(kv)/2+1)
	for i := 0; i+1 < len(kv); i += 2 {
		name, value := kv[i], kv[i+1]
		if len(name)+1+len(value)+1 > maxEnvString || strings.IndexByte(value, 0) >= 0 {
			// Set empty rather than left out, so that a variable of the
			// same name in weft's own environment cannot stand in for it.
			omitted = append(omitted, name)
			value = ""
		}
		env = append(env, name+"="+value)
	}
	env = append(env, OmittedEnv+"="+strings.Join(omitted, ","))
	return env, omitted
}

// rawText is a tool response as a script wants it: a JSON string unquoted,
// anything else as JSON text.
func rawText(r json.RawMessage) string {
	var s string
	if len(r) > 0 && r[0] == '"' && json.Unmarshal(r, &s) == nil {
		return s
	}
	return string(r)
}

// truncateUTF8 cuts s to at most n bytes without splitting a character.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
