package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// ElicitFunc shows an MCP server's request for input to the person and
// returns their answer (seed 000's ElicitationHandler). It is the seam
// every front door implements: the CLI with a terminal form, the HTTP API
// with an elicitation_request event answered over POST. ctx ends when the
// server gives up on the request (or the tool call behind it ends); when
// the request can be tied to the tool call that caused it (one call of
// that server in flight), ctx carries that call's context values (the
// session, the caller's policy) and the request names the call. An error
// answers "cancel".
type ElicitFunc func(ctx context.Context, req ElicitRequest) (ElicitResponse, error)

// Elicitation actions.
const (
	ActionAccept  = "accept"
	ActionDecline = "decline"
	ActionCancel  = "cancel"
)

// ElicitRequest is a server's request for input.
type ElicitRequest struct {
	Server  string `json:"server"`
	Message string `json:"message"`
	// Mode is "form" (fill in Schema's fields) or "url" (visit URL, then
	// accept or decline).
	Mode string `json:"mode"`
	// Schema is the requested schema: a flat object of string, number,
	// integer, boolean and enum properties (see Fields).
	Schema json.RawMessage `json:"requested_schema,omitempty"`
	URL    string          `json:"url,omitempty"`
	// ToolName and ToolCallID name the tool call that caused the request,
	// when it is known.
	ToolName   string `json:"tool_name,omitempty"`
	ToolCallID string `json:"tool_call_id,omitempty"`
}

// ElicitResponse is the person's answer: accept (with Content holding a
// value for each field given), decline, or cancel.
type ElicitResponse struct {
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
}

// elicit is the SDK's elicitation handler for one server.
func (s *server) elicit(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
	f := s.m.opts.Elicit
	if f == nil || req == nil || req.Params == nil {
		return &sdk.ElicitResult{Action: ActionDecline}, nil
	}
	p := req.Params
	er := ElicitRequest{Server: s.cfg.Name, Message: p.Message, Mode: p.Mode, URL: p.URL}
	if er.Mode == "" {
		er.Mode = "form"
		if p.URL != "" {
			er.Mode = "url"
		}
	}
	if p.RequestedSchema != nil {
		if b, err := json.Marshal(p.RequestedSchema); err == nil {
			er.Schema = b
		}
	}
	// Tie the request to the tool call that caused it when only one of
	// this server's calls is running: the front door finds its session
	// (and person) through that call's context.
	s.mu.Lock()
	var only *inflightCall
	if len(s.inflight) == 1 {
		for _, c := range s.inflight {
			only = &c
		}
	}
	s.mu.Unlock()
	if only != nil {
		er.ToolCallID, er.ToolName = only.call.ID, only.call.Name
		callCtx, cancel := context.WithCancel(only.ctx)
		defer cancel()
		stop := context.AfterFunc(ctx, cancel)
		defer stop()
		ctx = callCtx
	}
	resp, err := f(ctx, er)
	if err != nil {
		s.m.log.Warn("mcp: elicitation failed; answering cancel", "server", s.cfg.Name, "error", err)
		return &sdk.ElicitResult{Action: ActionCancel}, nil
	}
	switch resp.Action {
	case ActionAccept:
		return &sdk.ElicitResult{Action: ActionAccept, Content: resp.Content}, nil
	case ActionDecline, ActionCancel:
		return &sdk.ElicitResult{Action: resp.Action}, nil
	}
	return &sdk.ElicitResult{Action: ActionCancel}, nil
}

// Field is one property of a requested schema, as a form shows it.
type Field struct {
	Name        string
	Title       string
	Description string
	Type        string // string, number, integer, boolean
	Format      string // email, uri, date, date-time (strings)
	Enum        []string
	EnumNames   []string // labels of Enum, same order, when given
	Default     any
	Required    bool
	Min, Max    *float64 // minimum/maximum, or minLength/maxLength for strings
}

type fieldSchema struct {
	Type        any       `json:"type"`
	Title       string    `json:"title"`
	Description string    `json:"description"`
	Format      string    `json:"format"`
	Enum        []any     `json:"enum"`
	EnumNames   []string  `json:"enumNames"`
	OneOf       []enumOpt `json:"oneOf"`
	Default     any       `json:"default"`
	Minimum     *float64  `json:"minimum"`
	Maximum     *float64  `json:"maximum"`
	MinLength   *float64  `json:"minLength"`
	MaxLength   *float64  `json:"maxLength"`
}

type enumOpt struct {
	Const any    `json:"const"`
	Title string `json:"title"`
}

// Fields reads the properties of a requested schema: required ones first,
// then the rest, each group by name (the protocol's schema is a JSON
// object, whose order does not survive decoding).
func Fields(schema json.RawMessage) ([]Field, error) {
	if len(schema) == 0 {
		return nil, nil
	}
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, fmt.Errorf("requested schema: %w", err)
	}
	var out []Field
	for name, raw := range s.Properties {
		var fs fieldSchema
		if err := json.Unmarshal(raw, &fs); err != nil {
			return nil, fmt.Errorf("requested schema: property %q: %w", name, err)
		}
		f := Field{Name: name, Title: fs.Title, Description: fs.Description, Format: fs.Format,
			Default: fs.Default, Required: slices.Contains(s.Required, name)}
		if t, ok := fs.Type.(string); ok {
			f.Type = t
		} else if f.Type = "string"; fs.Type != nil {
			return nil, fmt.Errorf("requested schema: property %q: unsupported type %v", name, fs.Type)
		}
		for _, e := range fs.Enum {
			f.Enum = append(f.Enum, fmt.Sprint(e))
		}
		if len(fs.EnumNames) == len(f.Enum) {
			f.EnumNames = fs.EnumNames
		}
		for _, o := range fs.OneOf {
			f.Enum = append(f.Enum, fmt.Sprint(o.Const))
			f.EnumNames = append(f.EnumNames, o.Title)
		}
		f.Min, f.Max = fs.Minimum, fs.Maximum
		if f.Type == "string" {
			f.Min, f.Max = fs.MinLength, fs.MaxLength
		}
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b Field) int {
		if a.Required != b.Required {
			if a.Required {
				return -1
			}
			return 1
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out, nil
}

// Label is the field's title, else its name.
func (f Field) Label() string {
	if f.Title != "" {
		return f.Title
	}
	return f.Name
}

// Parse turns what a person typed into the field's value, checking its
// type, enum and bounds; the error says what is wanted.
func (f Field) Parse(input string) (any, error) {
	input = strings.TrimSpace(input)
	if len(f.Enum) > 0 {
		for i, e := range f.Enum {
			if strings.EqualFold(input, e) || (i < len(f.EnumNames) && strings.EqualFold(input, f.EnumNames[i])) || input == strconv.Itoa(i+1) {
				return e, nil
			}
		}
		return nil, fmt.Errorf("want one of %s (or its number)", strings.Join(f.Enum, ", "))
	}
	switch f.Type {
	case "boolean":
		switch strings.ToLower(input) {
		case "y", "yes", "true", "1":
			return true, nil
		case "n", "no", "false", "0":
			return false, nil
		}
		return nil, fmt.Errorf("want yes or no")
	case "integer", "number":
		v, err := strconv.ParseFloat(input, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("want a number")
		}
		if f.Type == "integer" && v != math.Trunc(v) {
			return nil, fmt.Errorf("want a whole number")
		}
		if f.Min != nil && v < *f.Min {
			return nil, fmt.Errorf("want at least %g", *f.Min)
		}
		if f.Max != nil && v > *f.Max {
			return nil, fmt.Errorf("want at most %g", *f.Max)
		}
		if f.Type == "integer" {
			return int64(v), nil
		}
		return v, nil
	}
	n := float64(len([]rune(input)))
	if f.Min != nil && n < *f.Min {
		return nil, fmt.Errorf("want at least %g characters", *f.Min)
	}
	if f.Max != nil && n > *f.Max {
		return nil, fmt.Errorf("want at most %g characters", *f.Max)
	}
	return input, nil
}
