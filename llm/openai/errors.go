package openai

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/internal/wire"
)

// quotaHint replaces the rate-limit hint for insufficient_quota: waiting
// does not help an account that has run out of credit.
const quotaHint = "the account is out of quota (insufficient_quota): check the plan and billing; retrying will not help until it is topped up"

// apiError is what the servers put under "error" (OpenAI, Ollama,
// LM Studio) or at the top level (vLLM). code is a string on OpenAI, a
// number on some compatible servers, and often null.
type apiError struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
}

type errorEnvelope struct {
	Error json.RawMessage `json:"error"`
	apiError
}

// errorFields is a decoded error: its type, its code as text, and the code
// as a number when the server sent one.
type errorFields struct {
	typ, code, message string
	status             int
}

// ident is what weft records as the error's Type: the specific code when
// there is one, else the type.
func (f *errorFields) ident() string {
	if f.code != "" && f.status == 0 {
		return f.code
	}
	return f.typ
}

func (a *apiError) fields() errorFields {
	f := errorFields{typ: a.Type, message: a.Message}
	c := bytes.TrimSpace(a.Code)
	switch {
	case len(c) == 0 || string(c) == "null":
	case c[0] == '"':
		_ = json.Unmarshal(c, &f.code)
	default:
		f.code = string(c)
		if n, err := strconv.Atoi(f.code); err == nil && n >= 400 && n < 600 {
			f.status = n
		}
	}
	return f
}

// parseError reads an error body or frame payload. It accepts
// {"error":{...}}, {"error":"text"} and vLLM's top-level {"message",...}.
func parseError(body []byte) (errorFields, bool) {
	var env errorEnvelope
	if json.Unmarshal(body, &env) != nil {
		return errorFields{}, false
	}
	raw := bytes.TrimSpace(env.Error)
	switch {
	case len(raw) > 0 && raw[0] == '{':
		var a apiError
		if json.Unmarshal(raw, &a) != nil {
			return errorFields{}, false
		}
		return a.fields(), true
	case len(raw) > 0 && raw[0] == '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return errorFields{}, false
		}
		return errorFields{message: s}, true
	case env.Message != "":
		return env.apiError.fields(), true
	}
	return errorFields{}, false
}

// httpError turns a non-2xx response into an *llm.Error. A body that is not
// the JSON envelope (a proxy's HTML page, plain text) still gives an error,
// carrying the text.
func httpError(provider string, resp *wire.Response) *llm.Error {
	body := wire.ReadErrorBody(resp)
	f, ok := parseError(body)
	if !ok {
		f = errorFields{message: strings.TrimSpace(string(body))}
		if len(f.message) > 2000 {
			f.message = f.message[:2000] + "..."
		}
	}
	if f.message == "" {
		f.message = http.StatusText(resp.StatusCode)
	}
	if f.message == "" {
		f.message = "HTTP " + strconv.Itoa(resp.StatusCode)
	}
	code := f.ident()
	e := llm.HTTPError(provider, resp.Response, code, f.message)
	if c := categoryFromCode(f); c != "" && c != llm.CategoryBadRequest && c != e.Category && resp.StatusCode < 500 && resp.StatusCode != http.StatusTooManyRequests &&
		!c.Retryable() {
		// A 4xx whose code says more than its status (a 400 carrying
		// context_length_exceeded, a 403 for an invalid key). A code that
		// would make it transient does not: compatible servers label
		// whatever they answer with "api_error" (Ollama's 404 for a model
		// it does not have), and the status is what says whose fault it
		// was.
		e.Category = c
		e.Hint = llm.HintFor(c)
	}
	if e.Category == llm.CategoryPromptTooLong && e.TokenGap == 0 {
		e.TokenGap = llm.TokenGap(f.message)
	}
	if isQuota(f) {
		e.Category = llm.CategoryRateLimit
		e.Hint = quotaHint
	}
	return e
}

func isQuota(f errorFields) bool {
	return f.code == "insufficient_quota" || f.typ == "insufficient_quota"
}

// streamError turns the payload of an in-stream error frame into an
// *llm.Error with StatusCode 200.
func streamError(provider string, payload []byte) *llm.Error {
	f, ok := parseError(payload)
	if !ok {
		f = errorFields{message: string(payload)}
	}
	cat := categoryFromCode(f)
	if cat == "" {
		switch {
		case f.status != 0:
			cat = llm.CategoryForStatus(f.status, "", f.message)
		case llm.IsPromptTooLong("", f.message):
			cat = llm.CategoryPromptTooLong
		default:
			// An unexplained failure after the server accepted the call
			// is its own.
			cat = llm.CategoryServer
		}
	}
	e := &llm.Error{Provider: provider, Category: cat, StatusCode: http.StatusOK, Type: f.ident(),
		Message: f.message, Hint: llm.HintFor(cat)}
	if f.message == "" {
		e.Message = "error frame in the stream"
	}
	if cat == llm.CategoryPromptTooLong {
		e.TokenGap = llm.TokenGap(f.message)
	}
	if isQuota(f) {
		e.Hint = quotaHint
	}
	return e
}

// categoryFromCode classifies by the error's code, then its type; "" when
// neither is known.
func categoryFromCode(f errorFields) llm.Category {
	for _, c := range [2]string{f.code, f.typ} {
		switch c {
		case "":
			continue
		case "rate_limit_exceeded", "rate_limit_error", "tokens", "requests", "insufficient_quota":
			return llm.CategoryRateLimit
		case "context_length_exceeded", "request_too_large":
			return llm.CategoryPromptTooLong
		case "server_error", "api_error", "internal_error", "internal_server_error":
			return llm.CategoryServer
		case "overloaded", "overloaded_error", "server_overloaded", "engine_overloaded":
			return llm.CategoryOverloaded
		case "invalid_api_key", "authentication_error", "invalid_authentication", "unauthorized":
			return llm.CategoryAuth
		case "permission_error", "permission_denied", "unsupported_country_region_territory":
			return llm.CategoryPermission
		case "model_not_found", "not_found_error", "not_found":
			return llm.CategoryNotFound
		case "timeout", "request_timeout":
			return llm.CategoryTimeout
		case "invalid_request_error", "bad_request", "invalid_value", "BadRequestError":
			if llm.IsPromptTooLong(f.code, f.message) {
				return llm.CategoryPromptTooLong
			}
			return llm.CategoryBadRequest
		}
	}
	return ""
}

// notStreamed is the error for a 2xx answer that is JSON rather than SSE.
func notStreamed(provider string, resp *wire.Response) *llm.Error {
	body := wire.ReadErrorBody(resp)
	if _, ok := parseError(body); ok {
		e := streamError(provider, body)
		e.StatusCode = resp.StatusCode
		e.RequestID = llm.RequestID(resp.Header)
		return e
	}
	return &llm.Error{Provider: provider, Category: llm.CategoryMalformed, StatusCode: resp.StatusCode, RequestID: llm.RequestID(resp.Header),
		Message: "the server answered with JSON instead of an event stream", Hint: llm.HintFor(llm.CategoryMalformed)}
}
