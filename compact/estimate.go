package compact

import (
	"math"

	"github.com/weft-run/weft/llm"
)

// The estimate counts a token per three bytes of text and a fixed cost for
// the framing of each block, message and tool, erring high: English and
// code run at about four bytes a token in every provider's tokenizer, and
// the wire formats' JSON framing at about four bytes a token too (the
// fakes in llm/llmtest count a quarter of the request body, and
// TestEstimateErrsHigh holds the estimate above that). Text that
// tokenizes densely (base64, CJK) is what the calibration of Accountant
// is for.
const (
	bytesPerToken  = 3
	blockTokens    = 12   // a block's type and JSON framing
	messageTokens  = 6    // a message's role and framing
	toolCallTokens = 24   // a call's or a result's id and name
	imageTokens    = 1600 // a typical image (Anthropic: w*h/750, ~1.15 MP at most)
	toolSpecTokens = 24   // a tool definition's framing
	// toolsPreamble is what providers add to the prompt when tools are
	// declared (Anthropic: a tool-use system prompt of a few hundred
	// tokens).
	toolsPreamble = 400
	// requestTokens is a request's own framing (model, max_tokens,
	// stream options), which the providers count in no prompt but the
	// fakes' body count includes: without it the first, short request
	// of a session calibrates the estimate far too high.
	requestTokens = 64
)

// EstimateText is the estimated token count of s.
func EstimateText(s string) int { return (len(s) + bytesPerToken - 1) / bytesPerToken }

// EstimateBlock is the estimated token count of one content block.
func EstimateBlock(b *llm.Block) int {
	n := blockTokens
	switch b.Type {
	case llm.BlockText, llm.BlockThinking:
		n += EstimateText(b.Text)
		for _, v := range b.Meta {
			// Signatures and encrypted reasoning are sent back.
			n += len(v) / 4
		}
	case llm.BlockImage:
		n += imageTokens
	case llm.BlockToolUse:
		n += toolCallTokens + EstimateText(b.ToolName) + (len(b.Input)+bytesPerToken-1)/bytesPerToken
	case llm.BlockToolResult:
		n += toolCallTokens
		for i := range b.Content {
			n += EstimateBlock(&b.Content[i])
		}
	default:
		n += EstimateText(b.Text) + (len(b.Input)+bytesPerToken-1)/bytesPerToken
	}
	return n
}

// EstimateMessage is the estimated token count of m.
func EstimateMessage(m *llm.Message) int {
	n := messageTokens
	for i := range m.Content {
		n += EstimateBlock(&m.Content[i])
	}
	return n
}

// EstimateMessages is the estimated token count of msgs.
func EstimateMessages(msgs []llm.Message) int {
	n := 0
	for i := range msgs {
		n += EstimateMessage(&msgs[i])
	}
	return n
}

// EstimateFixed is the estimated token count of the part of a request that
// is not the conversation: the system prompt and the tool definitions.
func EstimateFixed(system []llm.Block, tools []llm.ToolSpec) int {
	n := requestTokens
	for i := range system {
		n += EstimateBlock(&system[i])
	}
	if len(tools) > 0 {
		n += toolsPreamble
	}
	for _, t := range tools {
		n += toolSpecTokens + EstimateText(t.Name) + EstimateText(t.Description) + (len(t.InputSchema)+bytesPerToken-1)/bytesPerToken
	}
	return n
}

// EstimateRequest is the estimated prompt token count of req.
func EstimateRequest(req *llm.Request) int {
	return EstimateFixed(req.System, req.Tools) + EstimateMessages(req.Messages)
}

// Budget is a model's context window and what a request keeps free of it
// for the reply.
type Budget struct {
	Window  int `json:"window"`
	Reserve int `json:"reserve"`
}

// NewBudget is the budget of a model with info's window whose requests
// ask for up to maxTokens (thinking included): the reserve is maxTokens,
// at most reserveShare of the window. An unknown window is
// llm.UnknownContextWindow.
func NewBudget(info llm.ModelInfo, maxTokens int, reserveShare float64) Budget {
	w := info.ContextWindow
	if w <= 0 {
		w = llm.UnknownContextWindow
	}
	if maxTokens <= 0 {
		maxTokens = info.MaxOutputTokens
	}
	if reserveShare <= 0 || reserveShare >= 1 {
		reserveShare = 0.25
	}
	r := min(maxTokens, int(float64(w)*reserveShare))
	return Budget{Window: w, Reserve: max(r, 0)}
}

// Limit is the prompt size the window leaves room for.
func (b Budget) Limit() int { return max(b.Window-b.Reserve, 1) }

// Share is the given share of the limit, in tokens.
func (b Budget) Share(f float64) int { return int(float64(b.Limit()) * f) }

// Accountant estimates the size of a conversation's next request from
// what the provider reported for the previous one: its prompt tokens
// (cache reads and writes included) plus an estimate of what changed
// since, scaled by how the provider's count compared with the estimate
// (never down for what was added, never up for what was removed, so the
// error is on the high side). Before any report it is the estimate. The
// zero value is ready; it is not safe for concurrent use.
type Accountant struct {
	lastEst      int     // the estimate of the last request whose size is known
	lastReported int     // that request's size as the provider counted it
	ratio        float64 // lastReported/lastEst, 0 before a report
}

// Estimate turns est, the estimate (EstimateRequest) of the next request,
// into the expected count.
func (a *Accountant) Estimate(est int) int {
	if a.lastReported <= 0 {
		return est
	}
	d := float64(est - a.lastEst)
	if d >= 0 {
		return a.lastReported + int(math.Ceil(d*max(a.ratio, 1)))
	}
	n := a.lastReported + int(d*min(a.ratio, 1))
	return max(n, int(float64(est)*min(a.ratio, 1)))
}

// Observe records that a request estimated at est was counted as
// reported prompt tokens by the provider.
func (a *Accountant) Observe(est, reported int) {
	if est <= 0 || reported <= 0 {
		return
	}
	a.lastEst, a.lastReported = est, reported
	a.ratio = min(max(float64(reported)/float64(est), 0.25), 4)
}

// Ratio is the provider's count over the estimate, at least 1: how much
// denser than estimated text has turned out to be.
func (a *Accountant) Ratio() float64 { return max(a.ratio, 1) }

// Reset forgets the calibration (another model, another tokenizer).
func (a *Accountant) Reset() { *a = Accountant{} }
