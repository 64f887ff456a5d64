package llmtest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/llmtest"
)

func TestAnthropicFakeRejects(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, path, body string
		status           int
		typ, message     string
	}{
		{"no model", "/v1/messages", `{"max_tokens":5,"messages":[]}`, 400, "invalid_request_error", "model: Field required"},
		{"no max_tokens", "/v1/messages", `{"model":"m","messages":[]}`, 400, "invalid_request_error", "max_tokens: Field required"},
		{"no messages", "/v1/messages", `{"model":"m","max_tokens":5}`, 400, "invalid_request_error", "messages: Field required"},
		{"wrong type", "/v1/messages", `{"model":"m","max_tokens":"5","messages":[]}`, 400, "invalid_request_error", "max_tokens: Input has the wrong type"},
		{"not JSON", "/v1/messages", `{`, 400, "invalid_request_error", "There was an error parsing the body"},
		{"wrong path", "/v1/complete", `{}`, 404, "not_found_error", "Not found"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewAnthropic(t)
			srv.Push(llmtest.Text("unused"))
			resp, err := http.Post(srv.URL+tc.path, "application/json", strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var env struct {
				Type  string `json:"type"`
				Error struct {
					Type, Message string
				} `json:"error"`
				RequestID string `json:"request_id"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.status || env.Type != "error" || env.Error.Type != tc.typ || !strings.HasPrefix(env.Error.Message, tc.message) {
				t.Errorf("%d %+v, want %d %s %q", resp.StatusCode, env, tc.status, tc.typ, tc.message)
			}
			if id := resp.Header.Get("request-id"); id == "" || id != env.RequestID {
				t.Errorf("request-id header %q, body %q", id, env.RequestID)
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("%d requests recorded, want 1", n)
			}
			// The script is still there for a valid request.
			resp2, err := http.Post(srv.URL+"/v1/messages", "application/json", strings.NewReader(`{"model":"m","max_tokens":5,"messages":[]}`))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp2.Body)
			resp2.Body.Close()
			if resp2.StatusCode != 200 || !strings.Contains(string(b), `"text":"unused"`) {
				t.Errorf("valid request got %d %s", resp2.StatusCode, b)
			}
		})
	}
}

func TestAnthropicFakeErrors(t *testing.T) {
	t.Parallel()
	for status, typ := range map[int]string{400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
		404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error", 500: "api_error", 503: "api_error", 529: "overloaded_error"} {
		h := http.Header{}
		body := llmtest.AnthropicProtocol{}.ErrorBody(&llmtest.Script{Status: status, RetryAfter: 1500 * time.Millisecond}, h)
		var env struct {
			Error struct{ Type, Message string } `json:"error"`
		}
		if err := json.Unmarshal(body, &env); err != nil || env.Error.Type != typ || env.Error.Message == "" {
			t.Errorf("%d: %s (%v), want type %s", status, body, err, typ)
		}
		if h.Get("retry-after") != "1.5" || h.Get("request-id") == "" {
			t.Errorf("%d: headers %v", status, h)
		}
	}
}

func TestAnthropicFrames(t *testing.T) {
	t.Parallel()
	sc := llmtest.Script{Blocks: []llmtest.Block{
		llmtest.ThinkingBlock("sig", "a", "b"),
		llmtest.TextBlock("c"),
		llmtest.ToolBlock("toolu_1", "f", `{"x":`, `1}`),
	}, StopSequence: "END", StopReason: llm.StopSequence, Usage: llm.Usage{InputTokens: 1, OutputTokens: 2, CacheReadTokens: 3, CacheWriteTokens: 4}}
	frames := llmtest.AnthropicProtocol{}.Frames(&sc, nil)
	var names []string
	for _, f := range frames {
		lines := strings.Split(strings.TrimSuffix(f, "\n\n"), "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "event: ") || !strings.HasPrefix(lines[1], "data: ") {
			t.Fatalf("frame %q is not event+data", f)
		}
		name := strings.TrimPrefix(lines[0], "event: ")
		var data struct{ Type string }
		if err := json.Unmarshal([]byte(strings.TrimPrefix(lines[1], "data: ")), &data); err != nil || data.Type != name {
			t.Fatalf("frame %q: data type %q (%v)", f, data.Type, err)
		}
		names = append(names, name)
	}
	want := "message_start content_block_start ping content_block_delta content_block_delta content_block_delta content_block_stop " +
		"content_block_start content_block_delta content_block_stop " +
		"content_block_start content_block_delta content_block_delta content_block_delta content_block_stop message_delta message_stop"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("frames:\n%s\nwant\n%s", got, want)
	}
	if !strings.Contains(frames[len(frames)-2], `"stop_reason":"stop_sequence","stop_sequence":"END"`) ||
		!strings.Contains(frames[len(frames)-2], `"cache_read_input_tokens":3`) {
		t.Errorf("message_delta = %s", frames[len(frames)-2])
	}
}
