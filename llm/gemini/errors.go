package gemini

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/internal/wire"
)

// apiError is the google.rpc.Status envelope's "error" member.
type apiError struct {
	Code    int           `json:"code"`
	Message string        `json:"message"`
	Status  string        `json:"status"`
	Details []errorDetail `json:"details"`
}

// errorDetail holds the fields of the detail types weft reads:
// google.rpc.RetryInfo (retryDelay) and google.rpc.ErrorInfo (reason).
type errorDetail struct {
	Type       string `json:"@type"`
	Reason     string `json:"reason"`
	RetryDelay string `json:"retryDelay"`
}

type errorEnvelope struct {
	Error *apiError `json:"error"`
}

// parseError decodes an error body: {"error":{...}}, or the one-element
// array [{"error":{...}}] that Vertex AI's streaming endpoints send.
func parseError(body []byte) *apiError {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return nil
	}
	if body[0] == '[' {
		var arr []errorEnvelope
		if json.Unmarshal(body, &arr) != nil || len(arr) == 0 {
			return nil
		}
		return arr[0].Error
	}
	var env errorEnvelope
	if json.Unmarshal(body, &env) != nil {
		return nil
	}
	return env.Error
}

// retryDelay reads RetryInfo.retryDelay, a protobuf Duration in its JSON
// form ("37s", "1.5s").
func (a *apiError) retryDelay() time.Duration {
	for _, d := range a.Details {
		if d.RetryDelay == "" || !strings.HasSuffix(d.Type, "google.rpc.RetryInfo") {
			continue
		}
		if v, err := time.ParseDuration(d.RetryDelay); err == nil && v > 0 {
			return v
		}
	}
	return 0
}

// keyInvalid recognises AI Studio's rejected key, which is a 400
// INVALID_ARGUMENT rather than a 401.
func (a *apiError) keyInvalid() bool {
	for _, d := range a.Details {
		if d.Reason == "API_KEY_INVALID" {
			return true
		}
	}
	return strings.Contains(a.Message, "API key not valid")
}

// httpError builds the error for a non-2xx response.
func httpError(resp *wire.Response) *llm.Error {
	body := wire.ReadErrorBody(resp)
	a := parseError(body)
	var code, msg string
	if a != nil {
		code, msg = a.Status, a.Message
	} else {
		msg = truncate(strings.TrimSpace(string(body)), 500)
	}
	if msg == "" {
		msg = resp.Status
	}
	e := llm.HTTPError(name, resp.Response, code, msg)
	if a == nil {
		return e
	}
	if e.RetryAfter == 0 {
		e.RetryAfter = a.retryDelay()
	}
	if a.keyInvalid() {
		e.Category, e.Hint = llm.CategoryAuth, llm.HintFor(llm.CategoryAuth)
	}
	return e
}

// inStream is the error for an error object inside a 200 stream.
func (a *apiError) inStream() *llm.Error {
	cat := categoryForRPC(a)
	msg := a.Message
	if msg == "" {
		msg = "error in stream: " + a.Status
	}
	e := &llm.Error{Provider: name, Category: cat, StatusCode: 200, Type: a.Status, Message: msg,
		RetryAfter: a.retryDelay(), Hint: llm.HintFor(cat)}
	if cat == llm.CategoryPromptTooLong {
		e.TokenGap = llm.TokenGap(msg)
	}
	return e
}

// streamError handles a bare (non-SSE) line: the error JSON Gemini writes
// into a stream, or garbage.
func streamError(line []byte) *llm.Error {
	var env errorEnvelope
	if json.Unmarshal(line, &env) == nil && env.Error != nil {
		return env.Error.inStream()
	}
	return &llm.Error{Provider: name, Category: llm.CategoryMalformed, StatusCode: 200,
		Message: "unexpected line in stream: " + truncate(string(line), 200)}
}

// categoryForRPC classifies by the google.rpc status, which an in-stream
// error has in place of a meaningful HTTP status.
func categoryForRPC(a *apiError) llm.Category {
	if a.keyInvalid() {
		return llm.CategoryAuth
	}
	switch a.Status {
	case "RESOURCE_EXHAUSTED":
		return llm.CategoryRateLimit
	case "UNAVAILABLE":
		return llm.CategoryOverloaded
	case "INTERNAL", "UNKNOWN", "DATA_LOSS", "ABORTED", "CANCELLED":
		return llm.CategoryServer
	case "DEADLINE_EXCEEDED":
		return llm.CategoryTimeout
	case "UNAUTHENTICATED":
		return llm.CategoryAuth
	case "PERMISSION_DENIED":
		return llm.CategoryPermission
	case "NOT_FOUND":
		return llm.CategoryNotFound
	case "INVALID_ARGUMENT", "FAILED_PRECONDITION", "OUT_OF_RANGE":
		if llm.IsPromptTooLong(a.Status, a.Message) {
			return llm.CategoryPromptTooLong
		}
		return llm.CategoryBadRequest
	}
	if a.Code >= 400 {
		return llm.CategoryForStatus(a.Code, a.Status, a.Message)
	}
	return llm.CategoryServer
}
