package main

import (
	"strings"
	"testing"

	"github.com/weft-run/weft/llm/llmtest"
)

// TestChatCompactBinary: /compact [instructions] in weft chat summarises
// the conversation with the --compact-model, the instructions in its
// request; the next turn's request carries the summary in place of what
// it replaced.
func TestChatCompactBinary(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewOpenAI(t)
	fake.Push(llmtest.Text("One."), llmtest.Text("Two."), llmtest.Text("Three."), llmtest.Text("## Goal\nCOUNTING-SUMMARY"), llmtest.Text("Four."))
	env := []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + fake.URL + "/v1", "WEFT_WORKSPACE=" + t.TempDir()}
	in := "first\nsecond\nthird\n/compact keep the numbers\nfourth\n/exit\n"
	r := runBinary(t, env, in, "chat", "--model", "openai:gpt-4.1", "--compact-model", "openai:gpt-4.1-mini")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "context compacted (summary, manual)") || !strings.Contains(r.stderr, "summary by gpt-4.1-mini") {
		t.Fatalf("stderr:\n%s", r.stderr)
	}
	reqs := fake.Requests()
	if len(reqs) != 5 {
		t.Fatalf("%d requests, want 5", len(reqs))
	}
	sum := reqs[3]
	if sum.JSON()["model"] != "gpt-4.1-mini" || !strings.Contains(string(sum.Body), "keep the numbers") {
		t.Fatalf("summary request: %.400s", sum.Body)
	}
	last := string(reqs[4].Body)
	if !strings.Contains(last, "COUNTING-SUMMARY") || strings.Contains(last, "One.") || !strings.Contains(last, "fourth") {
		t.Fatalf("the request after /compact: %s", last)
	}
}
