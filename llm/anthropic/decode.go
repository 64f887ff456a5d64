package anthropic

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/weft-run/weft/internal/sse"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/internal/wire"
)

// Frame payloads, decoded into only the fields weft uses. Block and delta
// types are kept raw (quotes included) so that a reused frame decodes them
// into the same buffer instead of allocating a string per event.

type usageFrame struct {
	InputTokens         *int `json:"input_tokens"`
	CacheCreationTokens *int `json:"cache_creation_input_tokens"`
	CacheReadTokens     *int `json:"cache_read_input_tokens"`
	OutputTokens        *int `json:"output_tokens"`
}

type messageStartFrame struct {
	Message struct {
		Usage usageFrame `json:"usage"`
	} `json:"message"`
}

type messageDeltaFrame struct {
	Delta struct {
		StopReason   string `json:"stop_reason"`
		StopSequence string `json:"stop_sequence"`
	} `json:"delta"`
	Usage usageFrame `json:"usage"`
}

type blockStartFrame struct {
	Index        int `json:"index"`
	ContentBlock struct {
		Type      string          `json:"type"`
		ID        string          `json:"id"`
		Name      string          `json:"name"`
		Text      string          `json:"text"`
		Thinking  string          `json:"thinking"`
		Signature string          `json:"signature"`
		Data      string          `json:"data"`
		Input     json.RawMessage `json:"input"`
	} `json:"content_block"`
}

// blockDeltaFrame is the hot path: one per token batch. It is reused.
type blockDeltaFrame struct {
	Index int `json:"index"`
	Delta struct {
		Type        json.RawMessage `json:"type"`
		Text        string          `json:"text"`
		PartialJSON string          `json:"partial_json"`
		Thinking    string          `json:"thinking"`
		Signature   string          `json:"signature"`
	} `json:"delta"`
}

type blockStopFrame struct {
	Index int `json:"index"`
}

type errorEnvelope struct {
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
	RequestID string `json:"request_id"`
}

// payloads decodes one JSON payload at a time with a long-lived
// json.Decoder: json.Unmarshal builds a new decode state, scanner stack and
// error context for every call, which is most of the allocations of a
// stream of small frames; a Decoder keeps them.
type payloads struct {
	src []byte
	fed int64 // bytes handed to dec since it was made
	dec *json.Decoder
}

func (p *payloads) Read(b []byte) (int, error) {
	if len(p.src) == 0 {
		return 0, io.EOF
	}
	n := copy(b, p.src)
	p.src = p.src[n:]
	return n, nil
}

var errTrailing = errors.New("invalid data after the JSON value")

// decode decodes data, which must hold exactly one JSON value, into v, as
// json.Unmarshal would.
func (p *payloads) decode(data []byte, v any) error {
	for len(data) > 0 && isSpace(data[len(data)-1]) {
		data = data[:len(data)-1]
	}
	if p.dec == nil {
		p.dec, p.fed = json.NewDecoder(p), 0
	}
	p.src = data
	p.fed += int64(len(data))
	err := p.dec.Decode(v)
	// With trailing space trimmed, the value must end where data does.
	if err == nil && p.dec.InputOffset() != p.fed {
		err = errTrailing
	}
	if err != nil {
		// A Decoder's error is sticky, and what it buffered is suspect.
		p.dec = nil
	}
	return err
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// decoder turns one response's SSE stream into Framer calls.
type decoder struct {
	f    *llm.Framer
	resp *wire.Response
	// idx maps the wire's block index to the Framer's, -1 for blocks weft
	// does not model (server tool calls and results). The wire's indexes
	// are dense and in order, so a slice suffices.
	idx   []int
	delta blockDeltaFrame
	json  payloads
	usage llm.Usage
	stop  llm.StopReason
	seq   string
}

// run reads the stream to its end. It returns nil after finishing the
// stream or when the consumer stopped, and otherwise the error the stream
// must fail with.
func (d *decoder) run() error {
	r := sse.NewReader(d.resp.Body)
	defer r.Release()
	for {
		ev, err := r.Next()
		if err != nil {
			if errors.Is(err, sse.ErrTooLarge) {
				return malformed("%v", err)
			}
			// A clean EOF before message_stop is a cut stream too.
			return d.resp.Err(name, err)
		}
		var ok bool
		switch string(ev.Name) {
		case "content_block_delta":
			ok, err = d.blockDelta(ev.Data)
		case "content_block_start":
			ok, err = d.blockStart(ev.Data)
		case "content_block_stop":
			ok, err = d.blockStop(ev.Data)
		case "message_start":
			ok, err = true, d.messageStart(ev.Data)
		case "message_delta":
			ok, err = true, d.messageDelta(ev.Data)
		case "message_stop":
			d.f.SetUsage(d.usage)
			d.f.Finish(llm.Outcome{Status: llm.StatusCompleted, StopReason: d.stop, StopSequence: d.seq})
			if !d.f.Stopped() {
				d.resp.Drain()
			}
			return nil
		case "error":
			return d.streamError(ev.Data)
		default:
			// ping, and event types added after this was written: the API
			// promises new event types may appear and are safe to skip.
			continue
		}
		if err != nil {
			return err
		}
		if !ok {
			return nil
		}
	}
}

func malformed(format string, args ...any) *llm.Error {
	return &llm.Error{Provider: name, Category: llm.CategoryMalformed, Message: fmt.Sprintf(format, args...)}
}

func decodeErr(event string, err error) *llm.Error {
	e := malformed("decoding %s: %v", event, err)
	e.Err = err
	return e
}

// block returns the Framer index of wire block i (-1 for a skipped block),
// or a malformed error when the server addressed a block it never started.
func (d *decoder) block(i int) (int, error) {
	if i < 0 || i >= len(d.idx) {
		return 0, malformed("event for content block %d, which was not started", i)
	}
	return d.idx[i], nil
}

func (d *decoder) blockStart(data []byte) (bool, error) {
	var fr blockStartFrame
	if err := d.json.decode(data, &fr); err != nil {
		return false, decodeErr("content_block_start", err)
	}
	if fr.Index != len(d.idx) {
		return false, malformed("content block %d started out of order (expected %d)", fr.Index, len(d.idx))
	}
	cb := &fr.ContentBlock
	var b llm.Block
	switch cb.Type {
	case "text":
		b = llm.Block{Type: llm.BlockText, Text: cb.Text}
	case "thinking":
		b = llm.Block{Type: llm.BlockThinking, Text: cb.Thinking}
		if cb.Signature != "" {
			b.SetMeta(MetaSignature, cb.Signature)
		}
	case "redacted_thinking":
		b = llm.Block{Type: llm.BlockThinking, Meta: map[string]string{MetaRedacted: cb.Data}}
	case "tool_use":
		b = llm.Block{Type: llm.BlockToolUse, ToolUseID: cb.ID, ToolName: cb.Name, Input: cb.Input}
	default:
		d.idx = append(d.idx, -1)
		return true, nil
	}
	i, ok := d.f.Start(b)
	d.idx = append(d.idx, i)
	return ok, nil
}

func (d *decoder) blockDelta(data []byte) (bool, error) {
	fr := &d.delta
	fr.Index = 0
	fr.Delta.Type = fr.Delta.Type[:0]
	fr.Delta.Text, fr.Delta.PartialJSON, fr.Delta.Thinking, fr.Delta.Signature = "", "", "", ""
	if err := d.json.decode(data, fr); err != nil {
		return false, decodeErr("content_block_delta", err)
	}
	i, err := d.block(fr.Index)
	if err != nil || i < 0 {
		return true, err
	}
	switch string(fr.Delta.Type) {
	case `"text_delta"`:
		return d.f.Delta(i, fr.Delta.Text), nil
	case `"input_json_delta"`:
		return d.f.Delta(i, fr.Delta.PartialJSON), nil
	case `"thinking_delta"`:
		return d.f.Delta(i, fr.Delta.Thinking), nil
	case `"signature_delta"`:
		// Appended, as the SDK's accumulator does, should it come in parts.
		d.f.SetMeta(i, MetaSignature, d.f.Block(i).MetaValue(MetaSignature)+fr.Delta.Signature)
	}
	// citations_delta and later delta types carry nothing weft keeps.
	return true, nil
}

func (d *decoder) blockStop(data []byte) (bool, error) {
	var fr blockStopFrame
	if err := d.json.decode(data, &fr); err != nil {
		return false, decodeErr("content_block_stop", err)
	}
	i, err := d.block(fr.Index)
	if err != nil || i < 0 {
		return true, err
	}
	return d.f.Stop(i), nil
}

func (d *decoder) messageStart(data []byte) error {
	var fr messageStartFrame
	if err := d.json.decode(data, &fr); err != nil {
		return decodeErr("message_start", err)
	}
	d.mergeUsage(&fr.Message.Usage)
	return nil
}

func (d *decoder) messageDelta(data []byte) error {
	var fr messageDeltaFrame
	if err := d.json.decode(data, &fr); err != nil {
		return decodeErr("message_delta", err)
	}
	d.stop = stopReason(fr.Delta.StopReason)
	d.seq = fr.Delta.StopSequence
	d.mergeUsage(&fr.Usage)
	return nil
}

// mergeUsage applies a usage report as anthropic-sdk-go's accumulator does:
// the counts are cumulative, so each one present overwrites.
func (d *decoder) mergeUsage(u *usageFrame) {
	if u.InputTokens != nil {
		// Anthropic's input_tokens already excludes cached tokens, which is
		// what llm.Usage.InputTokens means.
		d.usage.InputTokens = *u.InputTokens
	}
	if u.CacheReadTokens != nil {
		d.usage.CacheReadTokens = *u.CacheReadTokens
	}
	if u.CacheCreationTokens != nil {
		d.usage.CacheWriteTokens = *u.CacheCreationTokens
	}
	if u.OutputTokens != nil {
		d.usage.OutputTokens = *u.OutputTokens
	}
	d.f.SetUsage(d.usage)
}

func stopReason(s string) llm.StopReason {
	if s == "model_context_window_exceeded" {
		// The answer was cut by the context window rather than by
		// max_tokens, but for the engine it is the same: output ran out.
		return llm.StopMaxTokens
	}
	// The rest are llm's own names; unknown future reasons pass through.
	return llm.StopReason(s)
}

// streamError turns an in-stream error event into the *llm.Error the stream
// fails with.
func (d *decoder) streamError(data []byte) error {
	var env errorEnvelope
	if err := d.json.decode(data, &env); err != nil {
		e := malformed("undecodable error event: %s", truncate(string(data), 500))
		e.StatusCode, e.Err = 200, err
		return e
	}
	e := &llm.Error{
		Provider:   name,
		Category:   categoryForType(env.Error.Type, env.Error.Message),
		StatusCode: 200,
		Type:       env.Error.Type,
		RequestID:  llm.RequestID(d.resp.Header),
		Message:    env.Error.Message,
	}
	if e.RequestID == "" {
		e.RequestID = env.RequestID
	}
	if e.Category == llm.CategoryPromptTooLong {
		e.TokenGap = llm.TokenGap(e.Message)
	}
	e.Hint = llm.HintFor(e.Category)
	return e
}

// categoryForType classifies an error by the API's error.type, for errors
// that come without a meaningful HTTP status.
func categoryForType(typ, message string) llm.Category {
	switch typ {
	case "overloaded_error":
		return llm.CategoryOverloaded
	case "rate_limit_error":
		return llm.CategoryRateLimit
	case "api_error":
		return llm.CategoryServer
	case "timeout_error":
		return llm.CategoryTimeout
	case "authentication_error":
		return llm.CategoryAuth
	case "permission_error":
		return llm.CategoryPermission
	case "not_found_error":
		return llm.CategoryNotFound
	case "request_too_large":
		return llm.CategoryPromptTooLong
	case "invalid_request_error", "billing_error":
		if llm.IsPromptTooLong(typ, message) {
			return llm.CategoryPromptTooLong
		}
		return llm.CategoryBadRequest
	}
	return llm.CategoryServer
}

// httpError decodes a non-2xx response. A body that is not the API's JSON
// envelope (a proxy's HTML page, a load balancer's text) still yields an
// *llm.Error, with the raw text as its message.
func httpError(resp *wire.Response) *llm.Error {
	raw := wire.ReadErrorBody(resp)
	var env errorEnvelope
	var code, msg string
	if json.Unmarshal(raw, &env) == nil && (env.Error.Type != "" || env.Error.Message != "") {
		code, msg = env.Error.Type, env.Error.Message
	} else {
		msg = truncate(strings.TrimSpace(string(raw)), 2000)
		if msg == "" {
			msg = resp.Status
		}
	}
	e := llm.HTTPError(name, resp.Response, code, msg)
	if e.RequestID == "" {
		e.RequestID = env.RequestID
	}
	return e
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
