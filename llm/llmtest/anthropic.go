package llmtest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/weft-run/weft/llm"
)

// BlockRedactedThinking is an Anthropic-only script block type: a
// redacted_thinking block whose encrypted data is the Block's Signature.
// Other protocols do not render it.
const BlockRedactedThinking llm.BlockType = "redacted_thinking"

// RedactedThinkingBlock is a redacted_thinking block carrying data.
func RedactedThinkingBlock(data string) Block {
	return Block{Type: BlockRedactedThinking, Signature: data}
}

// NewAnthropic starts a fake of the Anthropic Messages API
// (POST /v1/messages). Besides what every Server does, it answers 404 to
// other paths and 400 invalid_request_error to a body without model,
// max_tokens or messages, as the real API does; such a request is recorded
// but consumes no script. Every response carries a request-id header.
func NewAnthropic(t testing.TB) *Server {
	s := &Server{proto: AnthropicProtocol{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serveAnthropic))
	s.URL = s.Server.URL
	if t != nil {
		t.Cleanup(s.Close)
	}
	return s
}

var anthropicSeq atomic.Int64

func anthropicID(prefix string) string {
	return prefix + "_fake" + strconv.FormatInt(anthropicSeq.Add(1), 10)
}

func (s *Server) serveAnthropic(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("request-id", anthropicID("req"))
	body, _ := io.ReadAll(r.Body)
	status, msg := http.StatusOK, ""
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		status, msg = http.StatusNotFound, "Not found: "+r.Method+" "+r.URL.Path
	} else {
		msg = anthropicInvalid(body)
		if msg != "" {
			status = http.StatusBadRequest
		}
	}
	if status != http.StatusOK {
		s.mu.Lock()
		s.reqs = append(s.reqs, Request{Method: r.Method, Path: r.URL.RequestURI(), Header: r.Header.Clone(), Body: body})
		s.mu.Unlock()
		b := AnthropicProtocol{}.ErrorBody(&Script{Status: status, ErrorMessage: msg}, w.Header())
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(b)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	s.serve(w, r)
}

// anthropicInvalid reports what the API would reject in body, or "".
func anthropicInvalid(body []byte) string {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		return "There was an error parsing the body of your request: " + err.Error()
	}
	for _, f := range []struct{ name, first string }{{"model", `"`}, {"max_tokens", ""}, {"messages", "["}} {
		v, ok := m[f.name]
		if !ok || string(v) == "null" {
			return f.name + ": Field required"
		}
		if f.first != "" && !bytes.HasPrefix(v, []byte(f.first)) || f.first == "" && !isNumber(v) {
			return f.name + ": Input has the wrong type"
		}
	}
	return ""
}

func isNumber(v json.RawMessage) bool {
	_, err := strconv.ParseFloat(string(v), 64)
	return err == nil
}

// AnthropicProtocol renders scripts as the Messages API streams them
// (wire-protocols.md §1): every frame has an event line naming the data's
// type, block indexes are dense, a ping follows the first block start, and
// usage in message_delta is cumulative. anthropic-sdk-go's Message.Accumulate
// accepts what it renders.
type AnthropicProtocol struct{}

type anthUsage struct {
	InputTokens         int `json:"input_tokens"`
	CacheCreationTokens int `json:"cache_creation_input_tokens"`
	CacheReadTokens     int `json:"cache_read_input_tokens"`
	OutputTokens        int `json:"output_tokens"`
}

type anthStartMessage struct {
	ID           string    `json:"id"`
	Type         string    `json:"type"`
	Role         string    `json:"role"`
	Model        string    `json:"model"`
	Content      []any     `json:"content"`
	StopReason   *string   `json:"stop_reason"`
	StopSequence *string   `json:"stop_sequence"`
	Usage        anthUsage `json:"usage"`
}

type anthTextBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type anthThinkingBlock struct {
	Type      string `json:"type"`
	Thinking  string `json:"thinking"`
	Signature string `json:"signature"`
}

type anthRedactedBlock struct {
	Type string `json:"type"`
	Data string `json:"data"`
}

type anthToolBlock struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

type anthDelta struct {
	Type        string  `json:"type"`
	Text        *string `json:"text,omitempty"`
	Thinking    *string `json:"thinking,omitempty"`
	Signature   *string `json:"signature,omitempty"`
	PartialJSON *string `json:"partial_json,omitempty"`
}

func anthFrame(event string, data any) string {
	return "event: " + event + "\ndata: " + MustJSON(data) + "\n\n"
}

// Frames renders sc as a complete stream.
func (AnthropicProtocol) Frames(sc *Script, req *Request) []string {
	model := "claude-fake"
	if req != nil {
		var m struct {
			Model string `json:"model"`
		}
		if json.Unmarshal(req.Body, &m) == nil && m.Model != "" {
			model = m.Model
		}
	}
	startOut := min(sc.Usage.OutputTokens, 1)
	frames := make([]string, 0, 4+len(sc.Blocks)*4)
	frames = append(frames, anthFrame("message_start", struct {
		Type    string           `json:"type"`
		Message anthStartMessage `json:"message"`
	}{"message_start", anthStartMessage{
		ID: anthropicID("msg"), Type: "message", Role: "assistant", Model: model, Content: []any{},
		Usage: anthUsage{InputTokens: sc.Usage.InputTokens, CacheCreationTokens: sc.Usage.CacheWriteTokens,
			CacheReadTokens: sc.Usage.CacheReadTokens, OutputTokens: startOut},
	}}))
	type blockEvent struct {
		Type         string `json:"type"`
		Index        int    `json:"index"`
		ContentBlock any    `json:"content_block"`
	}
	type deltaEvent struct {
		Type  string    `json:"type"`
		Index int       `json:"index"`
		Delta anthDelta `json:"delta"`
	}
	type stopEvent struct {
		Type  string `json:"type"`
		Index int    `json:"index"`
	}
	delta := func(i int, d anthDelta) string {
		return anthFrame("content_block_delta", deltaEvent{"content_block_delta", i, d})
	}
	for i, b := range sc.Blocks {
		var cb any
		switch b.Type {
		case llm.BlockThinking:
			cb = anthThinkingBlock{Type: "thinking"}
		case BlockRedactedThinking:
			cb = anthRedactedBlock{Type: "redacted_thinking", Data: b.Signature}
		case llm.BlockToolUse:
			cb = anthToolBlock{Type: "tool_use", ID: b.ID, Name: b.Name, Input: json.RawMessage(`{}`)}
		default:
			cb = anthTextBlock{Type: "text"}
		}
		frames = append(frames, anthFrame("content_block_start", blockEvent{"content_block_start", i, cb}))
		if i == 0 {
			frames = append(frames, "event: ping\ndata: {\"type\": \"ping\"}\n\n")
		}
		switch b.Type {
		case llm.BlockThinking:
			for _, c := range b.Chunks {
				frames = append(frames, delta(i, anthDelta{Type: "thinking_delta", Thinking: &c}))
			}
			sig := b.Signature
			if sig == "" {
				sig = "RmFrZVNpZ25hdHVyZQ==" // the API always signs thinking
			}
			frames = append(frames, delta(i, anthDelta{Type: "signature_delta", Signature: &sig}))
		case BlockRedactedThinking:
			// redacted_thinking has no deltas.
		case llm.BlockToolUse:
			empty := ""
			frames = append(frames, delta(i, anthDelta{Type: "input_json_delta", PartialJSON: &empty}))
			for _, c := range b.Chunks {
				frames = append(frames, delta(i, anthDelta{Type: "input_json_delta", PartialJSON: &c}))
			}
		default:
			for _, c := range b.Chunks {
				frames = append(frames, delta(i, anthDelta{Type: "text_delta", Text: &c}))
			}
		}
		frames = append(frames, anthFrame("content_block_stop", stopEvent{"content_block_stop", i}))
	}
	stop := string(sc.Stop())
	var seq *string
	if sc.StopSequence != "" {
		seq = &sc.StopSequence
	}
	frames = append(frames, anthFrame("message_delta", struct {
		Type  string `json:"type"`
		Delta struct {
			StopReason   *string `json:"stop_reason"`
			StopSequence *string `json:"stop_sequence"`
		} `json:"delta"`
		Usage anthUsage `json:"usage"`
	}{Type: "message_delta", Delta: struct {
		StopReason   *string `json:"stop_reason"`
		StopSequence *string `json:"stop_sequence"`
	}{&stop, seq}, Usage: anthUsage{InputTokens: sc.Usage.InputTokens, CacheCreationTokens: sc.Usage.CacheWriteTokens,
		CacheReadTokens: sc.Usage.CacheReadTokens, OutputTokens: sc.Usage.OutputTokens}}))
	frames = append(frames, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	return frames
}

// anthropicErrorType is the error.type the API sends with each status.
func anthropicErrorType(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusPaymentRequired:
		return "billing_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusGatewayTimeout:
		return "timeout_error"
	case 529:
		return "overloaded_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

func anthropicErrorMessage(typ string) string {
	switch typ {
	case "authentication_error":
		return "invalid x-api-key"
	case "permission_error":
		return "Your API key does not have permission to use the specified resource."
	case "not_found_error":
		return "model: claude-nonexistent"
	case "request_too_large":
		return "Request exceeds the maximum allowed number of bytes."
	case "rate_limit_error":
		return "Number of request tokens has exceeded your per-minute rate limit"
	case "overloaded_error":
		return "Overloaded"
	case "api_error":
		return "Internal server error"
	case "timeout_error":
		return "Request timed out"
	case "billing_error":
		return "Your credit balance is too low."
	}
	return "Invalid request"
}

type anthError struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
	RequestID string `json:"request_id,omitempty"`
}

func newAnthError(sc *Script, defaultType string) anthError {
	e := anthError{Type: "error"}
	e.Error.Type = sc.ErrorType
	if e.Error.Type == "" {
		e.Error.Type = defaultType
	}
	e.Error.Message = sc.ErrorMessage
	if e.Error.Message == "" {
		e.Error.Message = anthropicErrorMessage(e.Error.Type)
	}
	return e
}

// ErrorBody renders the API's error envelope for sc.Status, with the
// request-id header (and request_id in the body) and, when sc.RetryAfter is
// set, retry-after in seconds.
func (AnthropicProtocol) ErrorBody(sc *Script, h http.Header) []byte {
	e := newAnthError(sc, anthropicErrorType(sc.Status))
	e.RequestID = h.Get("request-id")
	if e.RequestID == "" {
		e.RequestID = anthropicID("req")
		h.Set("request-id", e.RequestID)
	}
	if sc.RetryAfter > 0 {
		h.Set("retry-after", strconv.FormatFloat(sc.RetryAfter.Seconds(), 'f', -1, 64))
	}
	return []byte(MustJSON(e))
}

// ErrorFrame renders an in-stream error event; the type defaults to
// overloaded_error, the commonest one.
func (AnthropicProtocol) ErrorFrame(sc *Script) string {
	return anthFrame("error", newAnthError(sc, "overloaded_error"))
}

// MalformedFrame renders a content_block_delta whose data is cut-off JSON.
func (AnthropicProtocol) MalformedFrame() string {
	return "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"unterminated\n\n"
}

var _ Protocol = AnthropicProtocol{}
