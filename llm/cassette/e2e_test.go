package cassette_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/cassette"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/llm/openai"
)

// failTransport fails the test if the replay reaches the network.
type failTransport struct{ t *testing.T }

func (f failTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	f.t.Errorf("replay dialled %s", r.URL)
	return nil, errors.New("network used during replay")
}

// session is a three-call conversation: a tool call, the answer after the
// tool result, and a rate-limited retry.
func session(ctx context.Context, p llm.Provider) []llm.Result {
	tools := []llm.ToolSpec{{Name: "weather", Description: "Weather for a city",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)}}
	req := &llm.Request{Model: "gpt-test", System: llm.SystemText("Be brief."), Tools: tools,
		Messages: []llm.Message{llm.UserText("Weather in Paris?")}}
	var out []llm.Result
	r1 := llm.Collect(p.Stream(ctx, req))
	out = append(out, r1)
	req.Messages = append(req.Messages, r1.Message, llm.Message{Role: llm.RoleUser, Content: []llm.Block{
		llm.ToolResult("call_1", false, llm.Text("18°C, sunny")),
	}})
	r2 := llm.Collect(p.Stream(ctx, req))
	out = append(out, r2)
	req.Messages = append(req.Messages, r2.Message, llm.UserText("And tomorrow?"))
	out = append(out, llm.Collect(p.Stream(ctx, req)))
	return out
}

func TestRecordReplayOpenAI(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	fake := llmtest.NewOpenAI(t)
	fake.Push(
		llmtest.Script{Blocks: []llmtest.Block{
			llmtest.TextBlock("Let me ", "check."),
			llmtest.ToolBlock("call_1", "weather", `{"ci`, `ty":"Paris"}`),
		}, Usage: llm.Usage{InputTokens: 40, OutputTokens: 12}},
		llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock("It is ", "18°C ", "and sunny in Paris.")},
			Usage: llm.Usage{InputTokens: 70, OutputTokens: 9}},
		llmtest.Script{Status: http.StatusTooManyRequests, ErrorMessage: "Rate limit reached", RetryAfter: 7 * time.Second},
	)
	path := filepath.Join(t.TempDir(), "testdata", "openai-session.jsonl")

	rec, err := cassette.Open(path, cassette.Record)
	if err != nil {
		t.Fatal(err)
	}
	live := openai.New(openai.Config{Endpoint: llm.Endpoint{BaseURL: fake.URL + "/v1", APIKey: "sk-secret-123", HTTPClient: rec.Client(nil)}})
	want := session(ctx, live)
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	if want[0].Outcome.Status != llm.StatusCompleted || want[1].Message.Text() != "It is 18°C and sunny in Paris." ||
		want[2].Outcome.Status != llm.StatusTimeout {
		t.Fatalf("the live session did not go as scripted: %+v", want)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "sk-secret-123") {
		t.Errorf("the API key is in the cassette")
	}
	fake.Close()

	play, err := cassette.Open(path, cassette.Replay)
	if err != nil {
		t.Fatal(err)
	}
	defer play.Close()
	replayed := openai.New(openai.Config{Endpoint: llm.Endpoint{BaseURL: "http://127.0.0.1:1/v1",
		HTTPClient: play.Client(&http.Client{Transport: failTransport{t}})}})
	got := session(ctx, replayed)
	for i := range want {
		w, g := want[i], got[i]
		if !reflect.DeepEqual(w.Message, g.Message) || w.Usage != g.Usage {
			t.Errorf("call %d: replay gave %+v / %+v, recorded %+v / %+v", i+1, g.Message, g.Usage, w.Message, w.Usage)
		}
		wo, gout := w.Outcome, g.Outcome
		wo.Err, gout.Err = nil, nil
		if wo != gout {
			t.Errorf("call %d: replay outcome %+v, recorded %+v", i+1, gout, wo)
		}
	}
	if e := llm.AsError("", got[2].Outcome.Err); e.Category != llm.CategoryRateLimit || e.RetryAfter != 7*time.Second {
		t.Errorf("replayed 429 = %+v", e)
	}
	if n := play.Unused(); n != 0 {
		t.Errorf("Unused = %d", n)
	}

	// A changed conversation fails loudly, naming what changed.
	play2, err := cassette.Open(path, cassette.Replay)
	if err != nil {
		t.Fatal(err)
	}
	p2 := openai.New(openai.Config{Endpoint: llm.Endpoint{HTTPClient: play2.Client(nil)}})
	res := llm.Collect(p2.Stream(ctx, &llm.Request{Model: "gpt-test", Messages: []llm.Message{llm.UserText("Weather in Rome?")}}))
	var e *llm.Error
	if !errors.As(res.Outcome.Err, &e) || e.Category != llm.CategoryBadRequest || !errors.Is(e, cassette.ErrMismatch) ||
		!strings.Contains(e.Message, "request 1 does not match the recording: body differs at $.") {
		t.Errorf("changed request: outcome %+v", res.Outcome)
	}
}
