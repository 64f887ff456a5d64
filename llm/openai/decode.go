package openai

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"

	"github.com/weft-run/weft/internal/sse"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/internal/wire"
)

// chunk holds only the fields weft reads. One value is reused for every
// frame of a stream (see reset), so that decoding a frame allocates little
// beyond the delta strings themselves.
type chunk struct {
	Choices []choice        `json:"choices"`
	Usage   *chunkUsage     `json:"usage"`
	Error   json.RawMessage `json:"error"`
}

type choice struct {
	Index        int    `json:"index"`
	Delta        delta  `json:"delta"`
	FinishReason string `json:"finish_reason"`
}

type delta struct {
	Content          string          `json:"content"`
	Refusal          string          `json:"refusal"`
	ReasoningContent string          `json:"reasoning_content"`
	Reasoning        string          `json:"reasoning"`
	ToolCalls        []toolCallDelta `json:"tool_calls"`
}

type toolCallDelta struct {
	Index    int    `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chunkUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
	// DeepSeek's name for cached prompt tokens.
	PromptCacheHitTokens int `json:"prompt_cache_hit_tokens"`
}

func (u *chunkUsage) usage() llm.Usage {
	cached := u.PromptTokensDetails.CachedTokens
	if cached == 0 {
		cached = u.PromptCacheHitTokens
	}
	return llm.Usage{
		InputTokens:     max(u.PromptTokens-cached, 0),
		OutputTokens:    u.CompletionTokens,
		CacheReadTokens: cached,
		ReasoningTokens: u.CompletionTokensDetails.ReasoningTokens,
	}
}

// reset empties c for the next frame. encoding/json neither clears fields
// that a frame omits or sets to null nor zeroes reused slice elements, so
// that is done here, keeping the slices' capacity.
func (c *chunk) reset() {
	cs := c.Choices[:cap(c.Choices)]
	for i := range cs {
		tcs := cs[i].Delta.ToolCalls[:0]
		clear(tcs[:cap(tcs)])
		cs[i] = choice{}
		cs[i].Delta.ToolCalls = tcs
	}
	c.Choices = cs[:0]
	c.Usage = nil
	c.Error = nil
}

// toolSlot maps a tool call's wire index onto its block.
type toolSlot struct {
	index, block int
}

type decoder struct {
	f    *llm.Framer
	name string
	// The open text, reasoning and refusal blocks, or -1. They follow one
	// another; tool calls may interleave, so each keeps its own block.
	text, thinking, refusal int
	tools                   []toolSlot
	finish                  string
	finished                bool
	refused                 bool
	c                       chunk
	// One json.Decoder per stream, fed a frame at a time: unlike
	// json.Unmarshal it keeps its scanner and decode state between calls,
	// which is most of what decoding a small chunk would allocate.
	dec  *json.Decoder
	fr   frameReader
	feed int64 // bytes handed to dec so far
	// fast decodes the usual frames without encoding/json (fastdecode.go);
	// usage is where it puts a frame's usage.
	fast  fastScanner
	usage chunkUsage
}

// frameReader hands the decoder the current frame's payload.
type frameReader struct{ data []byte }

func (r *frameReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

var done = []byte("[DONE]")

// decodeStream reads the SSE body into f. On success it finishes f and
// returns nil; otherwise it returns the error to fail with. It returns nil
// at once when the consumer stops.
func decodeStream(ctx context.Context, name string, resp *wire.Response, f *llm.Framer) error {
	d := decoder{f: f, name: name, text: -1, thinking: -1, refusal: -1}
	err := d.read(ctx, resp)
	if err != nil {
		// The partial message keeps what arrived, tool calls with ids.
		d.stopAll()
	}
	return err
}

func (d *decoder) read(ctx context.Context, resp *wire.Response) error {
	name, f := d.name, d.f
	rd := sse.NewReader(resp.Body)
	defer rd.Release()
	for {
		ev, err := rd.Next()
		if err != nil {
			// openai-go, Ollama and others treat an end after the
			// finish_reason as complete even without [DONE]; before it,
			// the answer is cut short.
			if d.finished && (err == io.EOF || err == io.ErrUnexpectedEOF) && ctx.Err() == nil {
				return d.complete()
			}
			if errors.Is(err, sse.ErrTooLarge) {
				return &llm.Error{Provider: name, Category: llm.CategoryMalformed, StatusCode: resp.StatusCode, Message: err.Error(),
					Hint: llm.HintFor(llm.CategoryMalformed), Err: err}
			}
			return resp.Err(name, err)
		}
		if len(ev.Data) == 0 {
			continue
		}
		if bytes.HasPrefix(ev.Data, done) {
			resp.Drain()
			return d.complete()
		}
		if err := d.frame(ev.Data); err != nil {
			return err
		}
		if f.Stopped() {
			return nil
		}
	}
}

func (d *decoder) malformed(why string, err error) *llm.Error {
	msg := "undecodable chunk: " + why
	if err != nil {
		msg += ": " + err.Error()
	}
	return &llm.Error{Provider: d.name, Category: llm.CategoryMalformed, StatusCode: 200,
		Message: msg, Hint: llm.HintFor(llm.CategoryMalformed), Err: err}
}

// decode decodes one payload into d.c, as json.Unmarshal would.
func (d *decoder) decode(data []byte) error {
	data = bytes.TrimLeft(data, " \t\r\n")
	// Only an object ends without the decoder reading past it, so only an
	// object can be fed without the decoder taking the frame's end for the
	// stream's (its errors are sticky).
	if len(data) == 0 || data[0] != '{' {
		return d.malformed("not a JSON object", nil)
	}
	if d.fast.chunk(data, &d.c, &d.usage) {
		return nil
	}
	// Whatever the fast path left in d.c goes; encoding/json decides.
	d.c.reset()
	return d.decodeJSON(data)
}

// decodeJSON decodes an object payload with encoding/json.
func (d *decoder) decodeJSON(data []byte) error {
	if d.dec == nil {
		d.dec = json.NewDecoder(&d.fr)
	}
	d.fr.data = data
	d.feed += int64(len(data))
	if err := d.dec.Decode(&d.c); err != nil {
		return d.malformed("invalid JSON", err)
	}
	// What the decoder left unread is this frame's tail.
	rest := d.feed - d.dec.InputOffset()
	if rest < 0 || rest > int64(len(data)) || len(bytes.TrimSpace(data[int64(len(data))-rest:])) != 0 {
		return d.malformed("data after the JSON object", nil)
	}
	return nil
}

func (d *decoder) frame(data []byte) error {
	d.c.reset()
	if err := d.decode(data); err != nil {
		return err
	}
	if e := d.c.Error; len(e) > 0 && string(e) != "null" {
		return streamError(d.name, data)
	}
	for i := range d.c.Choices {
		ch := &d.c.Choices[i]
		if ch.Index != 0 {
			continue // weft asks for one choice
		}
		dl := &ch.Delta
		// Servers in transition between the two names send both with the
		// same text; reasoning_content wins.
		switch {
		case dl.ReasoningContent != "":
			d.reasoning("reasoning_content", dl.ReasoningContent)
		case dl.Reasoning != "":
			d.reasoning("reasoning", dl.Reasoning)
		}
		if dl.Content != "" {
			d.textDelta(&d.text, dl.Content)
		}
		if dl.Refusal != "" {
			d.refused = true
			d.textDelta(&d.refusal, dl.Refusal)
		}
		for j := range dl.ToolCalls {
			d.toolDelta(&dl.ToolCalls[j])
		}
		if ch.FinishReason != "" {
			d.finish, d.finished = ch.FinishReason, true
			d.stopAll()
		}
	}
	if d.c.Usage != nil {
		d.f.SetUsage(d.c.Usage.usage())
	}
	return nil
}

// closeSequential stops the open text, reasoning and refusal blocks except
// keep: a new kind of content means the previous one is over.
func (d *decoder) closeSequential(keep *int) {
	for _, p := range [3]*int{&d.text, &d.thinking, &d.refusal} {
		if p != keep && *p >= 0 {
			d.f.Stop(*p)
			*p = -1
		}
	}
}

func (d *decoder) reasoning(field, s string) {
	if d.thinking < 0 {
		d.closeSequential(&d.thinking)
		d.thinking, _ = d.f.Start(llm.Block{Type: llm.BlockThinking, Meta: map[string]string{MetaReasoningField: field}})
	}
	d.f.Delta(d.thinking, s)
}

func (d *decoder) textDelta(open *int, s string) {
	if *open < 0 {
		d.closeSequential(open)
		*open, _ = d.f.Start(llm.Block{Type: llm.BlockText})
	}
	d.f.Delta(*open, s)
}

func (d *decoder) toolDelta(tc *toolCallDelta) {
	idx := tc.Index
	if idx < 0 {
		idx = 0 // some servers number a lone call -1
	}
	blk := -1
	for _, s := range d.tools {
		if s.index == idx {
			blk = s.block
			break
		}
	}
	if blk < 0 {
		d.closeSequential(nil)
		blk, _ = d.f.Start(llm.Block{Type: llm.BlockToolUse, ToolUseID: tc.ID, ToolName: tc.Function.Name})
		d.tools = append(d.tools, toolSlot{index: idx, block: blk})
	} else if tc.ID != "" || tc.Function.Name != "" {
		// The first fragment should have carried them; accept them late.
		b := d.f.Block(blk)
		if b.ToolUseID == "" {
			b.ToolUseID = tc.ID
		}
		if b.ToolName == "" {
			b.ToolName = tc.Function.Name
		}
	}
	d.f.Delta(blk, tc.Function.Arguments)
}

// stopAll stops every open block, giving tool calls that never got an id
// one, so that their results can be matched.
func (d *decoder) stopAll() {
	d.closeSequential(nil)
	for _, s := range d.tools {
		if !d.f.Open(s.block) {
			continue
		}
		if b := d.f.Block(s.block); b.ToolUseID == "" {
			b.ToolUseID = newCallID()
		}
		d.f.Stop(s.block)
	}
}

func (d *decoder) complete() error {
	d.stopAll()
	d.f.Finish(llm.Outcome{Status: llm.StatusCompleted, StopReason: d.stopReason()})
	return nil
}

// stopReason maps finish_reason. OpenAI does not say which stop sequence
// matched, so "stop" is end_turn. Some compatible servers say "stop" after
// tool calls, and a refusal streams with "stop": the content decides then.
func (d *decoder) stopReason() llm.StopReason {
	switch d.finish {
	case "length":
		return llm.StopMaxTokens
	case "tool_calls", "function_call":
		return llm.StopToolUse
	case "content_filter":
		return llm.StopRefusal
	}
	switch {
	case d.refused:
		return llm.StopRefusal
	case len(d.tools) > 0:
		return llm.StopToolUse
	}
	return llm.StopEndTurn
}

func newCallID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}
