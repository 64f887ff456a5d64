package llmtest_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/llmtest"
)

// cacheBody builds a Messages request: a system block of sys, then n user
// text blocks of 40 bytes, with cache_control on the blocks in marks
// (index -1 is the system block).
func cacheBody(sys string, n int, marks ...int) string {
	cc := func(i int) string {
		for _, m := range marks {
			if m == i {
				return `,"cache_control":{"type":"ephemeral"}`
			}
		}
		return ""
	}
	var blocks []string
	for i := range n {
		blocks = append(blocks, fmt.Sprintf(`{"type":"text","text":"block %03d %s"%s}`, i, strings.Repeat("x", 20), cc(i)))
	}
	return fmt.Sprintf(`{"model":"m","max_tokens":5,"system":[{"type":"text","text":%q%s}],"messages":[{"role":"user","content":[%s]}]}`,
		sys, cc(-1), strings.Join(blocks, ","))
}

func TestAnthropicFakePromptCache(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("You are a careful assistant. ", 40) // ~290 tokens by the fake's estimate
	steps := []struct {
		name              string
		body              string
		read, write, rest bool // whether each count is non-zero
		readEqualsPrev    bool // read = the previous request's read + write
	}{
		{"first request writes up to its breakpoint", cacheBody(long, 3, 2), false, true, false, false},
		{"same prefix and more: reads it, writes the rest", cacheBody(long, 8, 7), true, true, false, true},
		{"no breakpoint: nothing cached or read", cacheBody(long, 9), false, false, true, false},
		{"tokens past the last breakpoint are input", cacheBody(long, 12, 7), true, false, true, false},
		{"beyond the lookback: a miss", cacheBody(long, 40, 39), false, true, false, false},
		{"within the lookback of an entry: a hit", cacheBody(long, 45, 44), true, true, false, true},
		{"a changed system prompt misses", cacheBody("Other. "+long, 45, 44), false, true, false, false},
		{"below the minimum: not written", cacheBody("short", 1, 0), false, false, true, false},
	}
	srv := llmtest.NewAnthropic(t).WithPromptCache(256)
	prev := llm.Usage{}
	for _, st := range steps {
		srv.Push(llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("ok")}, Usage: llm.Usage{InputTokens: 999, OutputTokens: 7}})
		resp, err := http.Post(srv.URL+"/v1/messages", "application/json", strings.NewReader(st.body))
		if err != nil {
			t.Fatal(err)
		}
		var last struct {
			Usage struct {
				Input  int `json:"input_tokens"`
				Write  int `json:"cache_creation_input_tokens"`
				Read   int `json:"cache_read_input_tokens"`
				Output int `json:"output_tokens"`
			} `json:"usage"`
		}
		for _, frame := range strings.Split(readAll(t, resp), "\n\n") {
			if strings.HasPrefix(frame, "event: message_delta") {
				_ = json.Unmarshal([]byte(strings.TrimPrefix(strings.SplitN(frame, "\n", 2)[1], "data: ")), &last)
			}
		}
		u := last.Usage
		if (u.Read > 0) != st.read || (u.Write > 0) != st.write || (u.Input > 0) != st.rest || u.Output != 7 {
			t.Fatalf("%s: usage %+v", st.name, u)
		}
		if st.readEqualsPrev && u.Read != prev.CacheReadTokens+prev.CacheWriteTokens {
			t.Fatalf("%s: read %d, want the previous prefix %d", st.name, u.Read, prev.CacheReadTokens+prev.CacheWriteTokens)
		}
		prev = llm.Usage{CacheReadTokens: u.Read, CacheWriteTokens: u.Write}
	}
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("status %d, %v: %s", resp.StatusCode, err, b)
	}
	return string(b)
}
