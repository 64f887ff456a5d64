package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/weft-run/weft/agent"
)

// TestRenderRetry: a retry is one line that names its cause by category
// (a refused connection is a network error, though its outcome status is
// timeout), the attempt coming and the delay.
func TestRenderRetry(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		d    agent.RetryData
		want []string
		not  []string
	}{
		{"refused connection",
			agent.RetryData{Attempt: 1, MaxAttempts: 5, DelayMS: 1200, Status: "timeout", Category: "network",
				Error: `anthropic: network: Post "http://127.0.0.1:1/v1/messages": dial tcp 127.0.0.1:1: connect: connection refused`},
			[]string{"(network)", "connection refused", "retrying in 1.2s (attempt 2 of 5)"}, []string{"timeout"}},
		{"rate limit", agent.RetryData{Attempt: 2, MaxAttempts: 5, DelayMS: 30000, Status: "timeout", Category: "rate_limit", Error: "openai: rate_limit (HTTP 429)"},
			[]string{"(rate_limit)", "retrying in 30s (attempt 3 of 5)"}, nil},
		{"no category: the status stands in", agent.RetryData{Attempt: 1, DelayMS: 5, Status: "malformed", Error: "stream ended without an outcome"},
			[]string{"(malformed)", "retrying in 5ms (attempt 2)"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out, errw bytes.Buffer
			r := &textRenderer{out: &out, errw: &errw}
			r.render(agent.Event{Type: agent.EventRetry, Data: tt.d})
			got := errw.String()
			if strings.Count(got, "\n") != 1 || out.Len() != 0 {
				t.Fatalf("want one line on stderr, got stdout %q stderr %q", out.String(), got)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("%q lacks %q", got, w)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(got, n) {
					t.Errorf("%q says %q", got, n)
				}
			}
		})
	}
}
