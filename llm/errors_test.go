package llm_test

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/weft-run/weft/llm"
)

func TestCategoryForStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		status  int
		code    string
		message string
		want    llm.Category
		outcome llm.Status
	}{
		{400, "invalid_request_error", "max_tokens: Field required", llm.CategoryBadRequest, llm.StatusFailed},
		{400, "invalid_request_error", "prompt is too long: 208310 tokens > 200000 maximum", llm.CategoryPromptTooLong, llm.StatusFailed},
		{400, "context_length_exceeded", "", llm.CategoryPromptTooLong, llm.StatusFailed},
		{401, "", "", llm.CategoryAuth, llm.StatusAuth},
		{403, "", "", llm.CategoryPermission, llm.StatusAuth},
		{404, "", "", llm.CategoryNotFound, llm.StatusFailed},
		{408, "", "", llm.CategoryTimeout, llm.StatusTimeout},
		{413, "", "", llm.CategoryPromptTooLong, llm.StatusFailed},
		{429, "", "", llm.CategoryRateLimit, llm.StatusTimeout},
		{500, "", "", llm.CategoryServer, llm.StatusTimeout},
		{502, "", "", llm.CategoryServer, llm.StatusTimeout},
		{503, "", "", llm.CategoryOverloaded, llm.StatusTimeout},
		{504, "", "", llm.CategoryTimeout, llm.StatusTimeout},
		{529, "", "", llm.CategoryOverloaded, llm.StatusTimeout},
		{422, "", "", llm.CategoryBadRequest, llm.StatusFailed},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.status, tt.code), func(t *testing.T) {
			got := llm.CategoryForStatus(tt.status, tt.code, tt.message)
			if got != tt.want {
				t.Fatalf("category = %s, want %s", got, tt.want)
			}
			if s := (&llm.Error{Category: got}).Status(); s != tt.outcome {
				t.Fatalf("status = %s, want %s", s, tt.outcome)
			}
		})
	}
}

func TestTokenGap(t *testing.T) {
	t.Parallel()
	tests := map[string]int{
		"prompt is too long: 208310 tokens > 200000 maximum": 8310,
		"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens. Please reduce the length of the messages.": 2000,
		"The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).":                                                           151424,
		"something else": 0,
		"prompt is too long: 10 tokens > 20 maximum": 0,
	}
	for msg, want := range tests {
		if got := llm.TokenGap(msg); got != want {
			t.Errorf("TokenGap(%q) = %d, want %d", msg, got, want)
		}
	}
}

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		h    map[string]string
		want time.Duration
	}{
		{"seconds", map[string]string{"retry-after": "7"}, 7 * time.Second},
		{"fractional seconds", map[string]string{"retry-after": "1.5"}, 1500 * time.Millisecond},
		{"ms wins", map[string]string{"retry-after-ms": "250", "retry-after": "7"}, 250 * time.Millisecond},
		{"http date", map[string]string{"retry-after": now.Add(30 * time.Second).Format(http.TimeFormat)}, 30 * time.Second},
		{"past date", map[string]string{"retry-after": now.Add(-time.Minute).Format(http.TimeFormat)}, 0},
		{"garbage", map[string]string{"retry-after": "soon"}, 0},
		{"none", nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.h {
				h.Set(k, v)
			}
			if got := llm.RetryAfter(h, now); got != tt.want {
				t.Fatalf("RetryAfter = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestHTTPError(t *testing.T) {
	t.Parallel()
	resp := &http.Response{StatusCode: 429, Header: http.Header{}}
	resp.Header.Set("retry-after", "3")
	resp.Header.Set("request-id", "req_1")
	e := llm.HTTPError("anthropic", resp, "rate_limit_error", "slow down")
	if e.Category != llm.CategoryRateLimit || e.RetryDelay() != 3*time.Second || e.RequestID != "req_1" || e.Hint == "" {
		t.Fatalf("HTTPError = %+v", e)
	}
	want := "anthropic: rate_limit (HTTP 429): slow down [request req_1]"
	if e.Error() != want {
		t.Errorf("Error() = %q, want %q", e.Error(), want)
	}
	o := llm.OutcomeFromError("anthropic", fmt.Errorf("call: %w", e))
	var got *llm.Error
	if o.Status != llm.StatusTimeout || o.RetryAfter != 3*time.Second || !errors.As(o.Err, &got) || got != e {
		t.Errorf("outcome = %+v", o)
	}
}

func TestAsErrorClassifiesTransport(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want llm.Category
	}{
		{context.Canceled, llm.CategoryCanceled},
		{fmt.Errorf("wrapped: %w", context.DeadlineExceeded), llm.CategoryTimeout},
		{&x509.UnknownAuthorityError{}, llm.CategorySSL},
		{errors.New("connection refused"), llm.CategoryNetwork},
	}
	for _, tt := range tests {
		if got := llm.AsError("p", tt.err); got.Category != tt.want || got.Provider != "p" || got.Hint == "" {
			t.Errorf("AsError(%v) = %+v, want %s", tt.err, got, tt.want)
		}
	}
}

// TestRetryableByCause pins which failures the engine retries: those a
// retry can cure, and no others.
func TestRetryableByCause(t *testing.T) {
	t.Parallel()
	retry := map[llm.Category]bool{
		llm.CategoryRateLimit: true, llm.CategoryOverloaded: true, llm.CategoryServer: true,
		llm.CategoryNetwork: true, llm.CategoryTimeout: true, llm.CategoryMalformed: true,
		llm.CategoryBadRequest: false, llm.CategoryNotFound: false, llm.CategoryPermission: false,
		llm.CategoryAuth: false, llm.CategoryPromptTooLong: false, llm.CategorySSL: false, llm.CategoryCanceled: false,
	}
	for c, want := range retry {
		if got := c.Retryable(); got != want {
			t.Errorf("%s.Retryable() = %v, want %v", c, got, want)
		}
		// The status a category maps to agrees, so a caller that only
		// has the status decides the same.
		o := llm.OutcomeFromError("p", &llm.Error{Category: c})
		if o.Retryable() != want || o.Status.Retryable() != want {
			t.Errorf("%s: outcome %s retryable = %v / status %v, want %v", c, o.Status, o.Retryable(), o.Status.Retryable(), want)
		}
	}
	for _, s := range []llm.Status{llm.StatusCompleted, llm.StatusAborted, llm.StatusAuth, llm.StatusFailed} {
		if s.Retryable() {
			t.Errorf("status %s is retryable", s)
		}
	}
	// An outcome without a typed error falls back to its status.
	if !(llm.Outcome{Status: llm.StatusMalformed}).Retryable() || (llm.Outcome{Status: llm.StatusFailed}).Retryable() {
		t.Error("untyped outcomes are judged by status")
	}
}
