// Package gemini speaks Google's Gemini streamGenerateContent protocol, on
// AI Studio (generativelanguage.googleapis.com, API key) and on Vertex AI
// (publisher URL, OAuth bearer token).
//
// Conventions the package settles, because the protocol leaves them open:
//
//   - Tool-call ids. AI Studio sends function calls without ids. Calls that
//     arrive without one get a stable id, "gemini_call_<responseId>_<n>_<name>"
//     (or "gemini_call_<n>_<name>" when the chunk has no responseId), and
//     Meta["gemini.synthetic_id"]="1"; such ids are never sent back. Ids the
//     server gave are sent back on the functionCall and its functionResponse.
//   - Tool results. A tool_result becomes functionResponse{name, response:
//     {"output": text}}, or {"error": text} when IsError, the convention the
//     Gemini API documents for FunctionResponse.response. The name comes from
//     the matching tool_use earlier in the conversation (the result's own id
//     when there is none). Text blocks of the result are joined with "\n";
//     image blocks follow the functionResponse as inlineData/fileData parts
//     of the same user turn, which every Gemini model accepts (multimodal
//     functionResponse.parts are Gemini 3 only).
//   - Thought signatures. Whatever part a thoughtSignature arrives on (thought,
//     text or functionCall) it is kept in Meta["gemini.thought_signature"] of
//     that part's block and replayed on the part the block becomes. An
//     empty-text part carrying only a signature attaches to the text or
//     thinking block still open before it; when there is none (a function
//     call came last: its block is already stopped and emitted complete), or
//     that block already has a signature, it becomes an empty block of its
//     own, which replays as the same signature-only part. Thinking blocks are replayed
//     (thought:true) only when they carry a Gemini signature: unsigned thought
//     summaries carry no state the server needs, and thinking from other
//     providers means nothing to Gemini.
//   - Finish reasons. STOP is end_turn, or tool_use when the message has
//     function calls (Gemini says STOP for both, and never says which stop
//     sequence matched); MAX_TOKENS is max_tokens; SAFETY, RECITATION,
//     LANGUAGE, BLOCKLIST, PROHIBITED_CONTENT, SPII and the IMAGE_* safety
//     reasons are refusal. MALFORMED_FUNCTION_CALL, UNEXPECTED_TOOL_CALL and
//     TOO_MANY_TOOL_CALLS end the call as malformed: the model produced a call
//     that cannot be run, and a retry may well succeed. Any other reason
//     (OTHER, unknown ones) completes as end_turn / tool_use with the reason
//     in the outcome message.
//   - A blocked prompt (promptFeedback.blockReason, no candidates) completes
//     with stop reason refusal and "prompt blocked: <reason>: <message>" as
//     the outcome message.
//   - There is no end marker: a stream that ends (cleanly or not) before a
//     finishReason or blockReason is a cut stream (network, or timeout /
//     canceled when the idle timer or the caller caused it). Once the
//     terminal chunk has arrived, the message is complete whatever happens
//     to the connection afterwards.
//   - In-stream errors (a bare {"error":...} line, or data: {"error":...}) are
//     *llm.Error with StatusCode 200, Type the google.rpc status and the
//     category from that status (RESOURCE_EXHAUSTED rate_limit, UNAVAILABLE
//     overloaded, INTERNAL server, ...).
package gemini

import (
	"context"
	"iter"
	"net/http"
	"strings"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/internal/wire"
)

// DefaultBaseURL is AI Studio's endpoint.
const DefaultBaseURL = "https://generativelanguage.googleapis.com"

// DefaultAPIVersion is the AI Studio API version go-genai uses by default.
const DefaultAPIVersion = "v1beta"

const name = "gemini"

// Meta keys this package owns.
const (
	// MetaThoughtSignature holds a part's thoughtSignature (standard base64).
	MetaThoughtSignature = "gemini.thought_signature"
	// MetaSyntheticID is "1" on a tool_use whose id weft made up.
	MetaSyntheticID = "gemini.synthetic_id"
)

// Config configures the provider.
type Config struct {
	// Endpoint: on AI Studio, BaseURL defaults to DefaultBaseURL and the key
	// travels in x-goog-api-key.
	llm.Endpoint
	// BearerToken selects Vertex AI: it is sent as "Authorization: Bearer",
	// API keys are ignored, and BaseURL must be the full publisher URL, e.g.
	// https://us-central1-aiplatform.googleapis.com/v1/projects/P/locations/L/publishers/google,
	// to which "/models/{model}:streamGenerateContent?alt=sse" is appended.
	BearerToken string
	// APIVersion is AI Studio's API version; default DefaultAPIVersion.
	APIVersion string
}

// Provider streams Gemini calls. It is safe for concurrent use.
type Provider struct {
	cfg    Config
	prefix string // the URL up to and including "/models/"
}

// New returns a provider for cfg.
func New(cfg Config) *Provider {
	base := strings.TrimRight(cfg.BaseURL, "/")
	var prefix string
	if cfg.BearerToken != "" {
		prefix = base + "/models/"
	} else {
		if base == "" {
			base = DefaultBaseURL
		}
		v := strings.Trim(cfg.APIVersion, "/")
		if v == "" {
			v = DefaultAPIVersion
		}
		prefix = base + "/" + v + "/models/"
	}
	return &Provider{cfg: cfg, prefix: prefix}
}

// Name is the provider's registry name.
func (p *Provider) Name() string { return name }

func (p *Provider) url(model string) string {
	model = strings.TrimPrefix(model, "models/")
	return p.prefix + model + ":streamGenerateContent?alt=sse"
}

// Stream sends req and streams the answer. See the package comment for how
// Gemini's protocol maps onto llm's events and outcomes.
func (p *Provider) Stream(ctx context.Context, req *llm.Request) iter.Seq[llm.Event] {
	return func(yield func(llm.Event) bool) {
		f := llm.NewFramer(yield)
		if req == nil {
			f.Fail(name, &llm.Error{Provider: name, Category: llm.CategoryBadRequest, Message: "nil request"})
			return
		}
		vertex := p.cfg.BearerToken != ""
		if vertex && p.cfg.BaseURL == "" {
			f.Fail(name, &llm.Error{Provider: name, Category: llm.CategoryBadRequest,
				Message: "Vertex AI mode (BearerToken set) needs BaseURL, the publisher URL"})
			return
		}
		body, err := encodeRequest(req)
		if err != nil {
			f.Fail(name, err)
			return
		}
		hdr := make(http.Header, 3)
		hdr["Content-Type"] = []string{"application/json"}
		var key string
		if vertex {
			hdr["Authorization"] = []string{"Bearer " + p.cfg.BearerToken}
		} else {
			key, err = p.cfg.Endpoint.Key()
			if err != nil {
				f.Fail(name, err)
				return
			}
			if key != "" {
				hdr["X-Goog-Api-Key"] = []string{key}
			}
		}
		report := func(err error) {
			if !vertex {
				p.cfg.Endpoint.Report(key, err)
			}
		}

		resp, err := wire.Post(ctx, &p.cfg.Endpoint, name, p.url(req.Model), body, hdr)
		if err != nil {
			report(err)
			f.Fail(name, err)
			return
		}
		defer resp.Close()
		if resp.StatusCode < 200 || resp.StatusCode > 299 {
			e := httpError(resp)
			report(e)
			f.Fail(name, e)
			return
		}
		var d decoder
		o, err := d.run(resp, f)
		if f.Stopped() {
			return
		}
		report(err)
		if err != nil {
			f.Fail(name, err)
			return
		}
		f.Finish(o)
	}
}

var _ llm.Provider = (*Provider)(nil)
