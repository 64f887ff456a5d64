package llmtest

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/weft-run/weft/llm"
)

// NewGemini starts a fake of Gemini's streamGenerateContent endpoint (AI
// Studio and Vertex AI URL shapes alike) and closes it when the test ends.
func NewGemini(t testing.TB) *Server { return NewServer(t, GeminiProtocol{}) }

// GeminiProtocol renders scripts the way the Gemini API streams with
// alt=sse (wire-protocols.md §3):
//
//   - only "data: <one-line JSON>" lines, each followed by a blank line,
//     with "\r\n" line ends as the real server sends them; no event: lines,
//     no comments, no end marker (the stream ends when the body does);
//   - each chunk is a complete GenerateContentResponse with usageMetadata
//     (cumulative: the last chunk has the script's totals), modelVersion
//     (from the request path) and responseId (stable for a request body);
//   - one text or thinking chunk per scripted chunk (thinking parts have
//     thought:true); consecutive tool blocks arrive together in one chunk, as
//     Gemini sends parallel calls, each as a whole functionCall whose args
//     object is the script's fragments joined and parsed (fragments that do
//     not join into JSON are sent as a JSON string, which clients must
//     reject); a tool call has an id only when the script gives one;
//   - a block's Signature rides as thoughtSignature on its last part (on the
//     functionCall part of a tool block), used as-is when it is valid
//     standard base64 and base64-encoded otherwise; a text block with no
//     chunks and a Signature becomes {"text":"","thoughtSignature":...};
//   - finishReason only on the last chunk: STOP for end_turn, tool_use,
//     stop_sequence and pause_turn, MAX_TOKENS, SAFETY for refusal; a
//     StopReason that is none of llm's is sent verbatim, so that a script can
//     ask for any Gemini finishReason (e.g. "MALFORMED_FUNCTION_CALL").
type GeminiProtocol struct{}

var _ Protocol = GeminiProtocol{}

type gemPart struct {
	Text             *string       `json:"text,omitempty"`
	Thought          bool          `json:"thought,omitempty"`
	FunctionCall     *gemFunctCall `json:"functionCall,omitempty"`
	ThoughtSignature string        `json:"thoughtSignature,omitempty"`
}

type gemFunctCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

type gemChunk struct {
	Candidates    []gemCandidate `json:"candidates"`
	UsageMetadata gemUsage       `json:"usageMetadata"`
	ModelVersion  string         `json:"modelVersion"`
	ResponseID    string         `json:"responseId"`
}

type gemCandidate struct {
	Content struct {
		Parts []gemPart `json:"parts,omitempty"`
		Role  string    `json:"role"`
	} `json:"content"`
	FinishReason string `json:"finishReason,omitempty"`
	Index        int    `json:"index"`
}

type gemUsage struct {
	PromptTokenCount        int `json:"promptTokenCount,omitempty"`
	CandidatesTokenCount    int `json:"candidatesTokenCount,omitempty"`
	TotalTokenCount         int `json:"totalTokenCount,omitempty"`
	CachedContentTokenCount int `json:"cachedContentTokenCount,omitempty"`
	ThoughtsTokenCount      int `json:"thoughtsTokenCount,omitempty"`
}

// Frames renders the script as SSE chunks.
func (GeminiProtocol) Frames(sc *Script, req *Request) []string {
	var pieces [][]gemPart
	inCalls := false
	for _, b := range sc.Blocks {
		sig := geminiSignature(b.Signature)
		switch b.Type {
		case llm.BlockToolUse:
			p := gemPart{FunctionCall: &gemFunctCall{ID: b.ID, Name: b.Name, Args: geminiArgs(b.Joined())}, ThoughtSignature: sig}
			if inCalls {
				pieces[len(pieces)-1] = append(pieces[len(pieces)-1], p)
			} else {
				pieces = append(pieces, []gemPart{p})
			}
			inCalls = true
			continue
		case llm.BlockText, llm.BlockThinking:
			thought := b.Type == llm.BlockThinking
			if len(b.Chunks) == 0 && sig != "" {
				empty := ""
				pieces = append(pieces, []gemPart{{Text: &empty, Thought: thought, ThoughtSignature: sig}})
			}
			for i, c := range b.Chunks {
				p := gemPart{Text: &c, Thought: thought}
				if i == len(b.Chunks)-1 {
					p.ThoughtSignature = sig
				}
				pieces = append(pieces, []gemPart{p})
			}
		}
		inCalls = false
	}
	if len(pieces) == 0 {
		pieces = append(pieces, nil)
	}

	model := geminiModel(req.Path)
	sum := sha256.Sum256(req.Body)
	respID := base64.RawURLEncoding.EncodeToString(sum[:16])
	u := sc.Usage
	visible := max(u.OutputTokens-u.ReasoningTokens, 0)
	n := len(pieces)
	frames := make([]string, n)
	for k, parts := range pieces {
		ch := gemChunk{ModelVersion: model, ResponseID: respID, Candidates: make([]gemCandidate, 1)}
		cand := &ch.Candidates[0]
		cand.Content.Parts = parts
		cand.Content.Role = "model"
		if k == n-1 {
			cand.FinishReason = geminiFinish(sc.Stop())
		}
		ch.UsageMetadata = gemUsage{
			PromptTokenCount:        u.InputTokens + u.CacheReadTokens,
			CachedContentTokenCount: u.CacheReadTokens,
			ThoughtsTokenCount:      ramp(u.ReasoningTokens, k+1, n),
			CandidatesTokenCount:    ramp(visible, k+1, n),
		}
		um := &ch.UsageMetadata
		um.TotalTokenCount = um.PromptTokenCount + um.ThoughtsTokenCount + um.CandidatesTokenCount
		frames[k] = "data: " + MustJSON(ch) + "\r\n\r\n"
	}
	return frames
}

// ramp is the cumulative share of total after k of n chunks.
func ramp(total, k, n int) int {
	return int(math.Ceil(float64(total) * float64(k) / float64(n)))
}

func geminiFinish(s llm.StopReason) string {
	switch s {
	case llm.StopEndTurn, llm.StopToolUse, llm.StopSequence, llm.StopPauseTurn:
		return "STOP"
	case llm.StopMaxTokens:
		return "MAX_TOKENS"
	case llm.StopRefusal:
		return "SAFETY"
	}
	return string(s)
}

// geminiSignature makes a signature valid standard base64, as go-genai
// requires ([]byte on the Go side).
func geminiSignature(s string) string {
	if s == "" {
		return ""
	}
	if _, err := base64.StdEncoding.DecodeString(s); err == nil {
		return s
	}
	return base64.StdEncoding.EncodeToString([]byte(s))
}

func geminiArgs(joined string) json.RawMessage {
	if strings.TrimSpace(joined) == "" {
		return json.RawMessage("{}")
	}
	var buf bytes.Buffer
	if json.Compact(&buf, []byte(joined)) == nil {
		return buf.Bytes()
	}
	return json.RawMessage(MustJSON(joined))
}

// geminiModel reads the model out of ".../models/{model}:streamGenerateContent".
func geminiModel(path string) string {
	i := strings.LastIndex(path, "/models/")
	if i < 0 {
		return ""
	}
	m := path[i+len("/models/"):]
	if j := strings.IndexAny(m, ":?"); j >= 0 {
		m = m[:j]
	}
	return m
}

// The google.rpc codes the fake knows, with the HTTP status and message the
// Gemini API pairs them with.
var geminiRPC = map[string]struct {
	http int
	msg  string
}{
	"INVALID_ARGUMENT":    {400, "Request contains an invalid argument."},
	"FAILED_PRECONDITION": {400, "User location is not supported for the API use."},
	"UNAUTHENTICATED":     {401, "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential."},
	"PERMISSION_DENIED":   {403, "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API."},
	"NOT_FOUND":           {404, "Requested entity was not found."},
	"RESOURCE_EXHAUSTED":  {429, "You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits."},
	"INTERNAL":            {500, "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting"},
	"UNAVAILABLE":         {503, "The model is overloaded. Please try again later."},
	"DEADLINE_EXCEEDED":   {504, "The request timed out. Please try again."},
}

func geminiStatusFor(code int) string {
	switch code {
	case 400:
		return "INVALID_ARGUMENT"
	case 401:
		return "UNAUTHENTICATED"
	case 403:
		return "PERMISSION_DENIED"
	case 404:
		return "NOT_FOUND"
	case 429:
		return "RESOURCE_EXHAUSTED"
	case 503, 529:
		return "UNAVAILABLE"
	case 504:
		return "DEADLINE_EXCEEDED"
	}
	if code >= 500 {
		return "INTERNAL"
	}
	return "FAILED_PRECONDITION"
}

type gemError struct {
	Code    int              `json:"code"`
	Message string           `json:"message"`
	Status  string           `json:"status"`
	Details []map[string]any `json:"details,omitempty"`
}

// geminiError builds the google.rpc.Status for a script. ErrorType is a
// google.rpc status name (e.g. "RESOURCE_EXHAUSTED") or an ErrorInfo reason
// (e.g. "API_KEY_INVALID", sent as 400 INVALID_ARGUMENT as AI Studio does).
func geminiError(sc *Script, code int, retryInfo bool) gemError {
	status, reason := sc.ErrorType, ""
	if _, ok := geminiRPC[status]; !ok {
		reason, status = status, ""
	}
	if status == "" {
		status = geminiStatusFor(code)
	}
	if code == 529 {
		code = 503 // Gemini has no 529: the body is a 503's
	}
	e := gemError{Code: code, Status: status, Message: sc.ErrorMessage}
	if e.Message == "" {
		e.Message = geminiRPC[status].msg
		if reason == "API_KEY_INVALID" {
			e.Message = "API key not valid. Please pass a valid API key."
		}
	}
	if reason != "" {
		e.Details = append(e.Details, map[string]any{
			"@type":    "type.googleapis.com/google.rpc.ErrorInfo",
			"reason":   reason,
			"domain":   "googleapis.com",
			"metadata": map[string]string{"service": "generativelanguage.googleapis.com"},
		})
	}
	if status == "RESOURCE_EXHAUSTED" {
		e.Details = append(e.Details,
			map[string]any{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []map[string]string{{
				"quotaMetric": "generativelanguage.googleapis.com/generate_content_free_tier_requests",
				"quotaId":     "GenerateRequestsPerMinutePerProjectPerModel-FreeTier",
				"quotaValue":  "10",
			}}},
			map[string]any{"@type": "type.googleapis.com/google.rpc.Help", "links": []map[string]string{{
				"description": "Learn more about Gemini API quotas",
				"url":         "https://ai.google.dev/gemini-api/docs/rate-limits",
			}}})
	}
	if retryInfo && sc.RetryAfter > 0 {
		e.Details = append(e.Details, map[string]any{
			"@type":      "type.googleapis.com/google.rpc.RetryInfo",
			"retryDelay": strconv.FormatFloat(sc.RetryAfter.Seconds(), 'f', -1, 64) + "s",
		})
	}
	return e
}

// ErrorBody renders the {"error":{code,message,status,details}} envelope,
// indented as Google's front end sends it. A 429 (or any error) with
// RetryAfter and no retry-after header carries the hint in a RetryInfo
// detail, where Gemini puts it.
func (GeminiProtocol) ErrorBody(sc *Script, h http.Header) []byte {
	e := geminiError(sc, sc.Status, h.Get("Retry-After") == "")
	b, err := json.MarshalIndent(map[string]gemError{"error": e}, "", "  ")
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
}

// ErrorFrame renders the in-stream error as Gemini does: the bare error JSON
// on a line of its own, without "data:" (go-genai turns it into an
// APIError). The status is the script's ErrorType, INTERNAL by default.
func (GeminiProtocol) ErrorFrame(sc *Script) string {
	code := 500
	if info, ok := geminiRPC[sc.ErrorType]; ok {
		code = info.http
	}
	e := geminiError(sc, code, true)
	return MustJSON(map[string]gemError{"error": e}) + "\r\n"
}

// MalformedFrame is a data line whose JSON is cut short.
func (GeminiProtocol) MalformedFrame() string { return "data: {not json\r\n\r\n" }
