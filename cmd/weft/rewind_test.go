package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/weft-run/weft/llm/llmtest"
)

// TestChatRewindBinary: /rewind [N] in weft chat forgets the last N turns:
// the next request carries only what is left; /cost still counts every
// turn; bad arguments are explained.
func TestChatRewindBinary(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewOpenAI(t)
	fake.Push(llmtest.Text("One."), llmtest.Text("Two."), llmtest.Text("Three."), llmtest.Text("Four."))
	env := []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + fake.URL + "/v1", "WEFT_WORKSPACE=" + t.TempDir()}
	in := "first\nsecond\n/rewind\nthird\n/rewind x\n/rewind 5\nfourth\n/cost\n/exit\n"
	r := runBinary(t, env, in, "chat", "--model", "openai:gpt-4.1")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"rewound 1 turn(s): 2 of 4 messages kept", "not \"x\"", "rewound 2 turn(s): 0 of 4 messages kept"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if !strings.Contains(r.stdout, "4 turns") {
		t.Errorf("/cost does not count every turn:\n%s", r.stdout)
	}
	reqs := fake.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4", len(reqs))
	}
	convo := func(i int) string {
		var parts []string
		for _, m := range reqs[i].JSON()["messages"].([]any)[1:] { // after the system prompt
			parts = append(parts, fmt.Sprint(m.(map[string]any)["content"]))
		}
		return strings.Join(parts, "|")
	}
	if got := convo(2); got != "first|One.|third" {
		t.Errorf("after /rewind the third request carries %q", got)
	}
	if got := convo(3); got != "fourth" {
		t.Errorf("after /rewind 5 the fourth request carries %q", got)
	}
}
