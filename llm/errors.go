package llm

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Category classifies a provider error for callers that branch on it.
type Category string

const (
	CategoryRateLimit     Category = "rate_limit"
	CategoryOverloaded    Category = "overloaded"
	CategoryPromptTooLong Category = "prompt_too_long"
	CategoryAuth          Category = "auth"
	CategoryPermission    Category = "permission"
	CategoryBadRequest    Category = "bad_request"
	CategoryNotFound      Category = "not_found"
	CategoryServer        Category = "server"
	CategoryNetwork       Category = "network"
	CategorySSL           Category = "ssl"
	CategoryTimeout       Category = "timeout"
	// CategoryMalformed: the response could not be decoded.
	CategoryMalformed Category = "malformed"
	// CategoryCanceled: the caller's context was cancelled.
	CategoryCanceled Category = "canceled"
)

// Error is the one error type every provider returns. Use errors.As.
type Error struct {
	Provider   string
	Category   Category
	StatusCode int    // HTTP status; 200 for an error frame inside a stream; 0 before any response
	Type       string // the provider's own error type or code, e.g. "overloaded_error"
	RequestID  string
	Message    string
	// RetryAfter is the server's retry hint (Retry-After, retry-after-ms,
	// Gemini's RetryInfo), zero when it gave none.
	RetryAfter time.Duration
	// TokenGap is how many tokens the prompt is over the limit, for
	// prompt_too_long errors whose message says so.
	TokenGap int
	// Hint is a one-line suggestion for people.
	Hint string
	// Failover is set by the key pool (KeyPool.Report) on a rate limit or
	// a rejected key when another key of the pool is healthy: sending the
	// call again at once uses that key, so the engine does not wait out
	// RetryAfter, which was this key's.
	Failover bool
	Err      error // the underlying cause, if any
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.Provider != "" {
		b.WriteString(e.Provider)
		b.WriteString(": ")
	}
	b.WriteString(string(e.Category))
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, " (HTTP %d)", e.StatusCode)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(oneLine(e.Message))
	}
	if e.RequestID != "" {
		b.WriteString(" [request ")
		b.WriteString(e.RequestID)
		b.WriteString("]")
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// RetryDelay is the server's retry hint.
func (e *Error) RetryDelay() time.Duration { return e.RetryAfter }

// Status maps the category onto the outcome status the engine acts on.
func (e *Error) Status() Status {
	switch e.Category {
	case CategoryAuth, CategoryPermission:
		return StatusAuth
	case CategoryRateLimit, CategoryOverloaded, CategoryServer, CategoryNetwork, CategoryTimeout:
		return StatusTimeout
	case CategoryMalformed:
		return StatusMalformed
	case CategoryCanceled:
		return StatusAborted
	}
	return StatusFailed
}

// Retryable reports whether an error of this category can go away when the
// same request is sent again: rate limits, overload, server errors, network
// errors, timeouts and malformed or cut streams. Bad requests, unknown
// models, permission and auth errors, prompts over the context window, TLS
// failures and cancellations cannot: the engine ends the turn instead (a
// prompt that is too long is for compaction to shrink first).
func (c Category) Retryable() bool {
	switch c {
	case CategoryRateLimit, CategoryOverloaded, CategoryServer, CategoryNetwork, CategoryTimeout, CategoryMalformed:
		return true
	}
	return false
}

var hints = map[Category]string{
	CategoryRateLimit:     "rate limited: wait and retry, or add keys to the key pool",
	CategoryOverloaded:    "the provider is overloaded: retry later",
	CategoryPromptTooLong: "the conversation is over the model's context window: start a new session (in weft chat, /clear), or send less (shorter files, smaller tool outputs)",
	CategoryAuth:          "the API key was rejected: check the key (e.g. ANTHROPIC_API_KEY / OPENAI_API_KEY / GEMINI_API_KEY)",
	CategoryPermission:    "the key is not allowed to use this model or endpoint: check the account's access",
	CategoryBadRequest:    "the provider rejected the request: check model parameters",
	CategoryNotFound:      "not found: check the model name and base URL",
	CategoryServer:        "the provider had an internal error: retry",
	CategoryNetwork:       "could not reach the provider: check the network and base URL",
	CategorySSL:           "TLS failed: check the corporate proxy's SSL certificate",
	CategoryTimeout:       "the request timed out: retry, or raise the timeout",
	CategoryMalformed:     "the provider's response could not be decoded: retry",
	CategoryCanceled:      "the request was cancelled",
}

// HintFor is the one-line hint for a category.
func HintFor(c Category) string { return hints[c] }

// AsError returns err as an *Error, classifying foreign errors (context,
// network, TLS) on the way.
func AsError(provider string, err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		if e.Provider == "" {
			e.Provider = provider
		}
		if e.Hint == "" {
			e.Hint = hints[e.Category]
		}
		return e
	}
	e = &Error{Provider: provider, Category: classifyTransport(err), Err: err}
	if err != nil {
		e.Message = err.Error()
	}
	e.Hint = hints[e.Category]
	return e
}

func classifyTransport(err error) Category {
	var (
		uerr *x509.UnknownAuthorityError
		herr x509.HostnameError
		cerr x509.CertificateInvalidError
		rerr *tls.RecordHeaderError
		aerr *tls.AlertError
		verr *tls.CertificateVerificationError
		nerr net.Error
	)
	switch {
	case errors.Is(err, context.Canceled):
		return CategoryCanceled
	case errors.Is(err, context.DeadlineExceeded):
		return CategoryTimeout
	case errors.As(err, &uerr), errors.As(err, &herr), errors.As(err, &cerr),
		errors.As(err, &rerr), errors.As(err, &aerr), errors.As(err, &verr):
		return CategorySSL
	case errors.As(err, &nerr) && nerr.Timeout():
		return CategoryTimeout
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return CategoryNetwork
	}
	return CategoryNetwork
}

// CategoryForStatus classifies an HTTP error status. message and code (the
// provider's error type or code) refine 400s into prompt_too_long.
func CategoryForStatus(status int, code, message string) Category {
	switch {
	case status == http.StatusUnauthorized:
		return CategoryAuth
	case status == http.StatusForbidden:
		return CategoryPermission
	case status == http.StatusNotFound:
		return CategoryNotFound
	case status == http.StatusRequestTimeout, status == http.StatusGatewayTimeout:
		return CategoryTimeout
	case status == http.StatusRequestEntityTooLarge:
		return CategoryPromptTooLong
	case status == http.StatusTooManyRequests:
		return CategoryRateLimit
	case status == http.StatusServiceUnavailable, status == 529:
		return CategoryOverloaded
	case status >= 500:
		return CategoryServer
	case status >= 400:
		if IsPromptTooLong(code, message) {
			return CategoryPromptTooLong
		}
		return CategoryBadRequest
	}
	return CategoryServer
}

// IsPromptTooLong recognises the context-overflow messages of the providers
// weft speaks to.
func IsPromptTooLong(code, message string) bool {
	if code == "context_length_exceeded" || code == "request_too_large" {
		return true
	}
	m := strings.ToLower(message)
	return strings.Contains(m, "prompt is too long") ||
		strings.Contains(m, "maximum context length") ||
		strings.Contains(m, "context length") && strings.Contains(m, "exceed") ||
		strings.Contains(m, "input token count") && strings.Contains(m, "exceeds")
}

var (
	gapAnthropic = regexp.MustCompile(`(\d+) tokens? > (\d+)`)
	gapOpenAI    = regexp.MustCompile(`maximum context length is (\d+) tokens.*?(?:resulted in|requested) (\d+) tokens`)
	gapGemini    = regexp.MustCompile(`input token count(?: \(|\s)(\d+)\)? exceeds the maximum number of tokens allowed(?: \(|\s)(\d+)`)
)

// TokenGap extracts "how far over" from a prompt-too-long message, or 0.
func TokenGap(message string) int {
	if m := gapAnthropic.FindStringSubmatch(message); m != nil {
		return diff(m[1], m[2])
	}
	if m := gapOpenAI.FindStringSubmatch(message); m != nil {
		return diff(m[2], m[1])
	}
	if m := gapGemini.FindStringSubmatch(strings.ToLower(message)); m != nil {
		return diff(m[1], m[2])
	}
	return 0
}

func diff(have, limit string) int {
	h, err1 := strconv.Atoi(have)
	l, err2 := strconv.Atoi(limit)
	if err1 != nil || err2 != nil || h <= l {
		return 0
	}
	return h - l
}

// HTTPError builds the *Error for a non-2xx response whose body the provider
// has already decoded into code and message.
func HTTPError(provider string, resp *http.Response, code, message string) *Error {
	cat := CategoryForStatus(resp.StatusCode, code, message)
	if code == "overloaded_error" {
		cat = CategoryOverloaded
	}
	e := &Error{
		Provider:   provider,
		Category:   cat,
		StatusCode: resp.StatusCode,
		Type:       code,
		RequestID:  RequestID(resp.Header),
		Message:    message,
		RetryAfter: RetryAfter(resp.Header, time.Now()),
		Hint:       hints[cat],
	}
	if cat == CategoryPromptTooLong {
		e.TokenGap = TokenGap(message)
	}
	return e
}

// RequestID reads the request id header any of the providers sets.
func RequestID(h http.Header) string {
	for _, k := range []string{"request-id", "x-request-id", "x-goog-request-id"} {
		if v := h.Get(k); v != "" {
			return v
		}
	}
	return ""
}

// RetryAfter reads retry-after-ms, then retry-after (seconds, possibly
// fractional, or an HTTP date), as the official SDKs do.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if v := h.Get("retry-after-ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := h.Get("retry-after")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = strings.TrimSpace(s[:i]) + " ..."
	}
	return s
}
