package gemini

import (
	"encoding/json"
	"errors"
	"io"
	"strconv"

	"github.com/weft-run/weft/internal/sse"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/internal/wire"
)

// chunk is one GenerateContentResponse, reduced to the fields weft reads.
// It is reused across frames (see reset), so that a frame costs only the
// strings it carries.
type chunk struct {
	Candidates     []candidate     `json:"candidates"`
	UsageMetadata  usageMetadata   `json:"usageMetadata"`
	PromptFeedback *promptFeedback `json:"promptFeedback"`
	Error          *apiError       `json:"error"`
}

type candidate struct {
	Content struct {
		Parts []part `json:"parts"`
	} `json:"content"`
	FinishReason  string `json:"finishReason"`
	FinishMessage string `json:"finishMessage"`
	Index         int    `json:"index"`
}

type part struct {
	Text             string        `json:"text"`
	Thought          bool          `json:"thought"`
	ThoughtSignature string        `json:"thoughtSignature"`
	FunctionCall     *functionCall `json:"functionCall"`
}

type functionCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

type usageMetadata struct {
	PromptTokenCount        int `json:"promptTokenCount"`
	CandidatesTokenCount    int `json:"candidatesTokenCount"`
	CachedContentTokenCount int `json:"cachedContentTokenCount"`
	ThoughtsTokenCount      int `json:"thoughtsTokenCount"`
	TotalTokenCount         int `json:"totalTokenCount"`
}

type promptFeedback struct {
	BlockReason        string `json:"blockReason"`
	BlockReasonMessage string `json:"blockReasonMessage"`
}

// reset clears c for the next frame while keeping its slices' storage:
// encoding/json decodes into existing slice elements without zeroing them,
// so stale fields must be cleared by hand.
func (c *chunk) reset() {
	cands := c.Candidates[:cap(c.Candidates)]
	for i := range cands {
		parts := cands[i].Content.Parts[:cap(cands[i].Content.Parts)]
		clear(parts)
		cands[i] = candidate{}
		cands[i].Content.Parts = parts[:0]
	}
	c.Candidates = cands[:0]
	c.UsageMetadata = usageMetadata{}
	c.PromptFeedback = nil
	c.Error = nil
}

// decoder turns chunks into Framer calls.
type decoder struct {
	c chunk
	// dec decodes every frame: unlike json.Unmarshal, a json.Decoder keeps
	// its scanner and error context between values, which saves most of the
	// allocations of a frame. in feeds it one payload at a time.
	dec      *json.Decoder
	in       feed
	fed      int64 // bytes handed to dec so far
	cur      int   // the open text or thinking block, -1 when none
	curType  llm.BlockType
	calls    int
	usage    usageMetadata
	hasUsage bool
	finish   string // the finishReason, once seen
	finMsg   string
	blocked  *promptFeedback
	terminal bool // a finishReason or blockReason arrived
}

// run reads the stream to its end. It returns the completed outcome, or the
// error the call ends with. When the consumer stops ranging it returns at
// once (f.Stopped() tells).
func (d *decoder) run(resp *wire.Response, f *llm.Framer) (llm.Outcome, error) {
	d.cur = -1
	d.dec = json.NewDecoder(&d.in)
	rd := sse.NewReader(resp.Body)
	defer rd.Release()
	for {
		ev, err := rd.Next()
		if err != nil {
			if d.terminal {
				return d.outcome(f)
			}
			if errors.Is(err, sse.ErrTooLarge) {
				return llm.Outcome{}, &llm.Error{Provider: name, Category: llm.CategoryMalformed, StatusCode: 200,
					Message: err.Error(), Err: err}
			}
			if err == io.EOF {
				err = io.ErrUnexpectedEOF // no end marker: any end before finishReason is a cut
			}
			return llm.Outcome{}, resp.Err(name, err)
		}
		if ev.Bare {
			return llm.Outcome{}, streamError(ev.Data)
		}
		if err := d.frame(ev.Data, f); err != nil || f.Stopped() {
			return llm.Outcome{}, err
		}
	}
}

// frame handles one data payload.
func (d *decoder) frame(data []byte, f *llm.Framer) error {
	c := &d.c
	c.reset()
	if err := d.decode(data); err != nil {
		return &llm.Error{Provider: name, Category: llm.CategoryMalformed, StatusCode: 200,
			Message: "invalid JSON in stream: " + truncate(string(data), 200), Err: err}
	}
	if c.Error != nil {
		return c.Error.inStream()
	}
	if u := c.UsageMetadata; u != (usageMetadata{}) {
		d.usage, d.hasUsage = u, true
	}
	if pf := c.PromptFeedback; pf != nil && pf.BlockReason != "" {
		d.blocked = pf
		d.terminal = true
	}
	for ci := range c.Candidates {
		cand := &c.Candidates[ci]
		if cand.Index != 0 {
			continue // weft asks for one candidate
		}
		for pi := range cand.Content.Parts {
			if !d.part(&cand.Content.Parts[pi], data, f) {
				return nil
			}
		}
		if cand.FinishReason != "" {
			d.finish, d.finMsg, d.terminal = cand.FinishReason, cand.FinishMessage, true
		}
	}
	return nil
}

// decode decodes data, which must hold exactly one JSON value, into d.c.
func (d *decoder) decode(data []byte) error {
	d.in.data = data
	d.fed += int64(len(data))
	if err := d.dec.Decode(&d.c); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return err
	}
	// Whatever follows the value in this payload must be white space, or
	// it would be taken as the start of the next frame.
	rest := int64(len(data)) - (d.fed - d.dec.InputOffset())
	if rest < 0 || rest > int64(len(data)) {
		return errors.New("JSON value does not end in this frame")
	}
	for _, b := range data[rest:] {
		if b != ' ' && b != '\t' && b != '\n' && b != '\r' {
			return errors.New("data after the JSON value")
		}
	}
	return nil
}

// feed hands the decoder one payload, then io.EOF until the next.
type feed struct{ data []byte }

func (f *feed) Read(p []byte) (int, error) {
	if len(f.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p, f.data)
	f.data = f.data[n:]
	return n, nil
}

// part handles one part; false means the consumer stopped.
func (d *decoder) part(p *part, data []byte, f *llm.Framer) bool {
	if fc := p.FunctionCall; fc != nil {
		if !d.closeCur(f) {
			return false
		}
		d.calls++
		b := llm.Block{Type: llm.BlockToolUse, ToolUseID: fc.ID, ToolName: fc.Name}
		if b.ToolUseID == "" {
			b.ToolUseID = syntheticID(responseID(data), d.calls, fc.Name)
			b.SetMeta(MetaSyntheticID, "1")
		}
		if p.ThoughtSignature != "" {
			b.SetMeta(MetaThoughtSignature, p.ThoughtSignature)
		}
		i, ok := f.Start(b)
		if !ok {
			return false
		}
		args := fc.Args
		if len(args) == 0 || string(args) == "null" {
			args = json.RawMessage("{}")
		}
		return f.Delta(i, string(args)) && f.Stop(i)
	}

	typ := llm.BlockText
	if p.Thought {
		typ = llm.BlockThinking
	}
	sig := p.ThoughtSignature
	if p.Text == "" {
		if sig == "" {
			return true
		}
		// A signature on an empty part belongs to the block it follows, if
		// that is still open (a stopped block has been emitted complete and
		// must not change); otherwise it becomes an empty block of its own,
		// which replays as the same signature-only part.
		if d.cur >= 0 && f.Block(d.cur).MetaValue(MetaThoughtSignature) == "" {
			f.SetMeta(d.cur, MetaThoughtSignature, sig)
			return true
		}
	}
	// A second signature must not overwrite the first: it starts a new block.
	if d.cur >= 0 && d.curType == typ && (sig == "" || f.Block(d.cur).MetaValue(MetaThoughtSignature) == "") {
		if sig != "" {
			f.SetMeta(d.cur, MetaThoughtSignature, sig)
		}
		return f.Delta(d.cur, p.Text)
	}
	if !d.closeCur(f) {
		return false
	}
	b := llm.Block{Type: typ}
	if sig != "" {
		b.SetMeta(MetaThoughtSignature, sig)
	}
	i, ok := f.Start(b)
	if !ok {
		return false
	}
	d.cur, d.curType = i, typ
	return f.Delta(i, p.Text)
}

func (d *decoder) closeCur(f *llm.Framer) bool {
	if d.cur < 0 {
		return true
	}
	i := d.cur
	d.cur = -1
	return f.Stop(i)
}

// outcome is the end of a stream whose terminal chunk arrived.
func (d *decoder) outcome(f *llm.Framer) (llm.Outcome, error) {
	if d.hasUsage {
		u := d.usage
		f.SetUsage(llm.Usage{
			InputTokens:     u.PromptTokenCount - u.CachedContentTokenCount,
			CacheReadTokens: u.CachedContentTokenCount,
			OutputTokens:    u.CandidatesTokenCount + u.ThoughtsTokenCount,
			ReasoningTokens: u.ThoughtsTokenCount,
		})
	}
	natural := llm.StopEndTurn
	if d.calls > 0 {
		natural = llm.StopToolUse
	}
	if d.finish == "" && d.blocked != nil {
		msg := "prompt blocked: " + d.blocked.BlockReason
		if d.blocked.BlockReasonMessage != "" {
			msg += ": " + d.blocked.BlockReasonMessage
		}
		return llm.Outcome{Status: llm.StatusCompleted, StopReason: llm.StopRefusal, Message: msg}, nil
	}
	switch d.finish {
	case "STOP":
		return llm.Outcome{Status: llm.StatusCompleted, StopReason: natural}, nil
	case "MAX_TOKENS":
		return llm.Outcome{Status: llm.StatusCompleted, StopReason: llm.StopMaxTokens}, nil
	case "SAFETY", "RECITATION", "LANGUAGE", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII",
		"IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION":
		return llm.Outcome{Status: llm.StatusCompleted, StopReason: llm.StopRefusal, Message: d.finishText()}, nil
	case "MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL", "TOO_MANY_TOOL_CALLS":
		return llm.Outcome{}, &llm.Error{Provider: name, Category: llm.CategoryMalformed, StatusCode: 200,
			Type: d.finish, Message: d.finishText()}
	}
	return llm.Outcome{Status: llm.StatusCompleted, StopReason: natural, Message: d.finishText()}, nil
}

func (d *decoder) finishText() string {
	if d.finMsg != "" {
		return "finish reason " + d.finish + ": " + d.finMsg
	}
	return "finish reason " + d.finish
}

// responseID reads the chunk's responseId; only calls without an id need it,
// so the common path does not decode it.
func responseID(data []byte) string {
	var r struct {
		ResponseID string `json:"responseId"`
	}
	_ = json.Unmarshal(data, &r)
	return r.ResponseID
}

func syntheticID(respID string, n int, fn string) string {
	id := "gemini_call_"
	if respID != "" {
		id += respID + "_"
	}
	return id + strconv.Itoa(n) + "_" + fn
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
