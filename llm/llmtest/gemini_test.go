package llmtest_test

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/llmtest"
)

// geminiFrame is the part of a rendered chunk these tests inspect.
type geminiFrame struct {
	Candidates []struct {
		Content struct {
			Parts []struct {
				Text             *string `json:"text"`
				Thought          bool    `json:"thought"`
				ThoughtSignature string  `json:"thoughtSignature"`
				FunctionCall     *struct {
					ID   string          `json:"id"`
					Name string          `json:"name"`
					Args json.RawMessage `json:"args"`
				} `json:"functionCall"`
			} `json:"parts"`
			Role string `json:"role"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
		Index        int    `json:"index"`
	} `json:"candidates"`
	UsageMetadata *struct {
		Prompt     int `json:"promptTokenCount"`
		Candidates int `json:"candidatesTokenCount"`
		Cached     int `json:"cachedContentTokenCount"`
		Thoughts   int `json:"thoughtsTokenCount"`
		Total      int `json:"totalTokenCount"`
	} `json:"usageMetadata"`
	ModelVersion string `json:"modelVersion"`
	ResponseID   string `json:"responseId"`
}

// geminiCheckFrames asserts the strict Gemini grammar on rendered frames and
// returns them decoded.
func geminiCheckFrames(t *testing.T, frames []string) []geminiFrame {
	t.Helper()
	var out []geminiFrame
	prevTotal := -1
	for i, f := range frames {
		line, ok := strings.CutSuffix(f, "\r\n\r\n")
		if !ok || !strings.HasPrefix(line, "data: ") || strings.ContainsAny(line, "\r\n") {
			t.Fatalf("frame %d is not one data line and a blank line: %q", i, f)
		}
		var fr geminiFrame
		dec := json.NewDecoder(strings.NewReader(line[len("data: "):]))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&fr); err != nil {
			t.Fatalf("frame %d: %v: %s", i, err, line)
		}
		if len(fr.Candidates) != 1 || fr.Candidates[0].Content.Role != "model" || fr.UsageMetadata == nil ||
			fr.ModelVersion == "" || fr.ResponseID == "" {
			t.Fatalf("frame %d lacks candidates, role, usage, modelVersion or responseId: %s", i, line)
		}
		if last := i == len(frames)-1; (fr.Candidates[0].FinishReason != "") != last {
			t.Fatalf("frame %d of %d has finishReason %q", i, len(frames), fr.Candidates[0].FinishReason)
		}
		u := fr.UsageMetadata
		if u.Total < prevTotal || u.Total != u.Prompt+u.Candidates+u.Thoughts {
			t.Fatalf("frame %d usage not cumulative: %+v after total %d", i, *u, prevTotal)
		}
		prevTotal = u.Total
		for _, p := range fr.Candidates[0].Content.Parts {
			if p.ThoughtSignature != "" {
				if _, err := base64.StdEncoding.DecodeString(p.ThoughtSignature); err != nil {
					t.Fatalf("frame %d signature %q is not base64", i, p.ThoughtSignature)
				}
			}
			if p.FunctionCall != nil && (p.Text != nil || p.FunctionCall.Name == "") {
				t.Fatalf("frame %d bad call part", i)
			}
		}
		out = append(out, fr)
	}
	return out
}

func TestGeminiFrames(t *testing.T) {
	t.Parallel()
	req := &llmtest.Request{Path: "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", Body: []byte(`{"contents":[]}`)}
	sc := llmtest.Script{
		Blocks: []llmtest.Block{
			llmtest.ThinkingBlock("plain signature", "think ", "more"),
			{Type: llm.BlockText, Chunks: []string{"a", "b"}, Signature: "AQID"},
			{Type: llm.BlockText, Signature: "BAUG"},
			llmtest.ToolBlock("", "read", `{"pa`, `th": "x"}`),
			llmtest.ToolBlock("call_2", "run", `{"cmd":`, `"ls"}`),
			llmtest.ToolBlock("", "bad", `{"unfinished":`),
		},
		Usage: llm.Usage{InputTokens: 10, CacheReadTokens: 90, OutputTokens: 50, ReasoningTokens: 20},
	}
	frs := geminiCheckFrames(t, llmtest.GeminiProtocol{}.Frames(&sc, req))
	// 2 thought chunks, 2 text chunks, the signature-only part, one chunk
	// with the three parallel calls.
	if len(frs) != 6 {
		t.Fatalf("%d frames", len(frs))
	}
	if frs[0].ModelVersion != "gemini-2.5-pro" || frs[0].ResponseID != frs[5].ResponseID {
		t.Fatalf("model %q, ids %q %q", frs[0].ModelVersion, frs[0].ResponseID, frs[5].ResponseID)
	}
	p1 := frs[1].Candidates[0].Content.Parts[0]
	if !p1.Thought || *p1.Text != "more" || p1.ThoughtSignature != base64.StdEncoding.EncodeToString([]byte("plain signature")) {
		t.Fatalf("thought part = %+v", p1)
	}
	if frs[0].Candidates[0].Content.Parts[0].ThoughtSignature != "" || frs[3].Candidates[0].Content.Parts[0].ThoughtSignature != "AQID" {
		t.Fatal("signature must ride on the block's last part, as-is when base64")
	}
	if p := frs[4].Candidates[0].Content.Parts[0]; *p.Text != "" || p.ThoughtSignature != "BAUG" {
		t.Fatalf("signature-only part = %+v", p)
	}
	calls := frs[5].Candidates[0].Content.Parts
	if len(calls) != 3 || string(calls[0].FunctionCall.Args) != `{"path":"x"}` || calls[0].FunctionCall.ID != "" ||
		calls[1].FunctionCall.ID != "call_2" || string(calls[2].FunctionCall.Args) != `"{\"unfinished\":"` {
		t.Fatalf("calls = %+v %+v %+v", calls[0].FunctionCall, calls[1].FunctionCall, calls[2].FunctionCall)
	}
	u := frs[5].UsageMetadata
	if u.Prompt != 100 || u.Cached != 90 || u.Thoughts != 20 || u.Candidates != 30 || frs[5].Candidates[0].FinishReason != "STOP" {
		t.Fatalf("last chunk usage %+v finish %q", *u, frs[5].Candidates[0].FinishReason)
	}

	for stop, want := range map[llm.StopReason]string{
		llm.StopEndTurn: "STOP", llm.StopToolUse: "STOP", llm.StopMaxTokens: "MAX_TOKENS",
		llm.StopRefusal: "SAFETY", "RECITATION": "RECITATION",
	} {
		sc := llmtest.Script{StopReason: stop}
		frs := geminiCheckFrames(t, llmtest.GeminiProtocol{}.Frames(&sc, req))
		if len(frs) != 1 || frs[0].Candidates[0].FinishReason != want {
			t.Fatalf("%s: %+v", stop, frs)
		}
	}
}

func TestGeminiErrors(t *testing.T) {
	t.Parallel()
	type status struct {
		Error struct {
			Code    int              `json:"code"`
			Message string           `json:"message"`
			Status  string           `json:"status"`
			Details []map[string]any `json:"details"`
		} `json:"error"`
	}
	cases := []struct {
		sc         llmtest.Script
		hdr        http.Header
		code       int
		status     string
		detailType string
	}{
		{llmtest.Script{Status: 400}, nil, 400, "INVALID_ARGUMENT", ""},
		{llmtest.Script{Status: 400, ErrorType: "API_KEY_INVALID"}, nil, 400, "INVALID_ARGUMENT", "type.googleapis.com/google.rpc.ErrorInfo"},
		{llmtest.Script{Status: 401}, nil, 401, "UNAUTHENTICATED", ""},
		{llmtest.Script{Status: 403}, nil, 403, "PERMISSION_DENIED", ""},
		{llmtest.Script{Status: 404}, nil, 404, "NOT_FOUND", ""},
		{llmtest.Script{Status: 429, RetryAfter: 1500 * time.Millisecond}, nil, 429, "RESOURCE_EXHAUSTED", "type.googleapis.com/google.rpc.RetryInfo"},
		{llmtest.Script{Status: 429, RetryAfter: time.Second}, http.Header{"Retry-After": {"1"}}, 429, "RESOURCE_EXHAUSTED", ""},
		{llmtest.Script{Status: 500}, nil, 500, "INTERNAL", ""},
		{llmtest.Script{Status: 503}, nil, 503, "UNAVAILABLE", ""},
		{llmtest.Script{Status: 529}, nil, 503, "UNAVAILABLE", ""},
	}
	for _, tc := range cases {
		h := http.Header{}
		for k, v := range tc.hdr {
			h[k] = v
		}
		var st status
		if err := json.Unmarshal(llmtest.GeminiProtocol{}.ErrorBody(&tc.sc, h), &st); err != nil {
			t.Fatal(err)
		}
		e := st.Error
		if e.Code != tc.code || e.Status != tc.status || e.Message == "" {
			t.Fatalf("%d: %+v", tc.sc.Status, e)
		}
		var retry string
		types := map[string]bool{}
		for _, d := range e.Details {
			types[d["@type"].(string)] = true
			if d["@type"] == "type.googleapis.com/google.rpc.RetryInfo" {
				retry = d["retryDelay"].(string)
			}
		}
		if tc.detailType != "" && !types[tc.detailType] {
			t.Fatalf("%d: no %s in %+v", tc.sc.Status, tc.detailType, e.Details)
		}
		if (retry != "") != (tc.detailType == "type.googleapis.com/google.rpc.RetryInfo") {
			t.Fatalf("%d: retryDelay %q", tc.sc.Status, retry)
		}
		if retry != "" && retry != "1.5s" {
			t.Fatalf("retryDelay = %q", retry)
		}
	}

	frame := llmtest.GeminiProtocol{}.ErrorFrame(&llmtest.Script{ErrorType: "RESOURCE_EXHAUSTED"})
	var st status
	if !strings.HasPrefix(frame, `{"error":`) || !strings.HasSuffix(frame, "\r\n") || strings.Count(frame, "\n") != 1 ||
		json.Unmarshal([]byte(frame), &st) != nil || st.Error.Code != 429 || st.Error.Status != "RESOURCE_EXHAUSTED" {
		t.Fatalf("error frame = %q", frame)
	}
	if m := (llmtest.GeminiProtocol{}).MalformedFrame(); !strings.HasPrefix(m, "data: ") || json.Valid([]byte(m[6:])) {
		t.Fatalf("malformed frame = %q", m)
	}
}

// TestGeminiServer checks the served stream end to end: headers, path
// parsing for both URL shapes, the byte grammar.
func TestGeminiServer(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewGemini(t).Push(llmtest.Text("a", "b"), llmtest.Text("c"))
	for _, path := range []string{
		"/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
		"/v1/projects/p/locations/l/publishers/google/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
	} {
		resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			t.Fatalf("%s: %d %v", path, resp.StatusCode, resp.Header)
		}
		var frames []string
		for _, f := range strings.SplitAfter(string(body), "\r\n\r\n") {
			if f != "" {
				frames = append(frames, f)
			}
		}
		if frs := geminiCheckFrames(t, frames); frs[0].ModelVersion != "gemini-2.5-flash" {
			t.Fatalf("model %q", frs[0].ModelVersion)
		}
	}
}
