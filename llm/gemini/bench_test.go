package gemini_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/gemini"
	"github.com/weft-run/weft/llm/llmtest"
)

// benchScript is a representative tool-calling turn: thought summaries with
// a signature, ~150 text chunks of a few words, then two parallel function
// calls. Their arguments are scripted in 10 fragments each; Gemini sends
// every call whole, so both arrive in the last chunk.
func benchScript() llmtest.Script {
	thoughts := []string{"**Reading the request**\n\n", "The user wants the build fixed; ", "I should read the failing file ",
		"and the test first.\n\n", "**Planning**\n\n", "Two reads in parallel."}
	text := make([]string, 150)
	for i := range text {
		text[i] = fmt.Sprintf("word %d of the answer, ", i)
	}
	frag := func(path string) []string {
		return []string{`{"pa`, `th": "`, path, `", "li`, `mit": `, `200, `, `"offset"`, `: 0, "enc`, `oding": "ut`, `f-8"}`}
	}
	return llmtest.Script{
		Blocks: []llmtest.Block{
			llmtest.ThinkingBlock("CiIB0e2Kb3a4gkvoCiIB0e2Kb3a4gkvo", thoughts...),
			llmtest.TextBlock(text...),
			{Type: llm.BlockToolUse, Name: "read_file", Chunks: frag("internal/build/build.go"), Signature: "EjQKMgEAAQIDBAUG"},
			{Type: llm.BlockToolUse, Name: "read_file", Chunks: frag("internal/build/build_test.go")},
		},
		Usage: llm.Usage{InputTokens: 5200, CacheReadTokens: 4096, OutputTokens: 1400, ReasoningTokens: 300},
	}
}

// benchServer serves one pre-rendered stream in a single write, so that the
// server's own work per request is small and the same for all clients (its
// allocations still count in every sub-benchmark alike).
func benchServer(b *testing.B) (*httptest.Server, int) {
	sc := benchScript()
	frames := llmtest.GeminiProtocol{}.Frames(&sc, &llmtest.Request{Path: "/v1beta/models/" + model + ":streamGenerateContent?alt=sse", Body: []byte("bench")})
	body := []byte(strings.Join(frames, ""))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write(body)
	}))
	b.Cleanup(srv.Close)
	return srv, len(frames)
}

var benchTools = []llm.ToolSpec{
	{Name: "read_file", Description: "Read a file", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"limit":{"type":"integer"},"offset":{"type":"integer"},"encoding":{"type":"string"}},"required":["path"]}`)},
	{Name: "run", Description: "Run a command", InputSchema: json.RawMessage(`{"type":"object","properties":{"cmd":{"type":"string"}},"required":["cmd"]}`)},
}

const benchPrompt = "The build is failing, please fix it."

func BenchmarkStream(b *testing.B) {
	srv, nframes := benchServer(b)
	wantText := 150 * len("word 1 of the answer, ")

	b.Run("weft", func(b *testing.B) {
		p := gemini.New(gemini.Config{Endpoint: llm.Endpoint{BaseURL: srv.URL, APIKey: "k"}})
		req := &llm.Request{Model: model, Messages: []llm.Message{llm.UserText(benchPrompt)}, Tools: benchTools}
		b.ReportAllocs()
		for b.Loop() {
			r := llm.Collect(p.Stream(context.Background(), req))
			if r.Outcome.Status != llm.StatusCompleted || len(r.Message.ToolUses()) != 2 || len(r.Message.Text()) < wantText {
				b.Fatalf("weft: %+v", r.Outcome)
			}
		}
	})

	b.Run("bare", func(b *testing.B) {
		url := srv.URL + "/v1beta/models/" + model + ":streamGenerateContent?alt=sse"
		b.ReportAllocs()
		for b.Loop() {
			res, err := bareStream(url, "k", benchPrompt, benchTools)
			if err != nil || len(res.calls) != 2 || res.text.Len() < wantText || res.frames != nframes {
				b.Fatalf("bare: %v %+v", err, res)
			}
		}
	})

	b.Run("sdk", func(b *testing.B) {
		c, err := genai.NewClient(context.Background(), &genai.ClientConfig{APIKey: "k", Backend: genai.BackendGeminiAPI,
			HTTPOptions: genai.HTTPOptions{BaseURL: srv.URL + "/"}})
		if err != nil {
			b.Fatal(err)
		}
		contents := []*genai.Content{genai.NewContentFromText(benchPrompt, genai.RoleUser)}
		var decls []*genai.FunctionDeclaration
		for _, t := range benchTools {
			decls = append(decls, &genai.FunctionDeclaration{Name: t.Name, Description: t.Description, ParametersJsonSchema: t.InputSchema})
		}
		cfg := &genai.GenerateContentConfig{Tools: []*genai.Tool{{FunctionDeclarations: decls}}}
		b.ReportAllocs()
		for b.Loop() {
			// go-genai has no accumulator: concatenate as a caller would.
			var text, thought strings.Builder
			var calls []*genai.FunctionCall
			var usage *genai.GenerateContentResponseUsageMetadata
			for resp, err := range c.Models.GenerateContentStream(context.Background(), model, contents, cfg) {
				if err != nil {
					b.Fatal(err)
				}
				usage = resp.UsageMetadata
				for _, cand := range resp.Candidates {
					for _, p := range cand.Content.Parts {
						switch {
						case p.FunctionCall != nil:
							calls = append(calls, p.FunctionCall)
						case p.Thought:
							thought.WriteString(p.Text)
						default:
							text.WriteString(p.Text)
						}
					}
				}
			}
			if len(calls) != 2 || text.Len() < wantText || usage == nil {
				b.Fatalf("sdk: %d calls", len(calls))
			}
		}
	})
}

// bareResult is what the bare client gathers.
type bareResult struct {
	text, thought strings.Builder
	calls         []bareCall
	frames        int
	finish        string
	usage         bareUsage
}

type bareCall struct {
	name string
	args json.RawMessage
}

type bareUsage struct {
	Prompt     int `json:"promptTokenCount"`
	Candidates int `json:"candidatesTokenCount"`
	Thoughts   int `json:"thoughtsTokenCount"`
}

// bareStream is the leanest reasonable hand-written Gemini client: POST,
// scan lines, unmarshal each data payload into a minimal struct, append.
// No framing guarantees, no error classification.
func bareStream(url, key, prompt string, tools []llm.ToolSpec) (*bareResult, error) {
	type part struct {
		Text string `json:"text,omitempty"`
	}
	type decl struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Params      json.RawMessage `json:"parametersJsonSchema"`
	}
	reqBody := struct {
		Contents []struct {
			Role  string `json:"role"`
			Parts []part `json:"parts"`
		} `json:"contents"`
		Tools []struct {
			Decls []decl `json:"functionDeclarations"`
		} `json:"tools"`
	}{}
	reqBody.Contents = append(reqBody.Contents, struct {
		Role  string `json:"role"`
		Parts []part `json:"parts"`
	}{"user", []part{{Text: prompt}}})
	reqBody.Tools = make([]struct {
		Decls []decl `json:"functionDeclarations"`
	}, 1)
	for _, t := range tools {
		reqBody.Tools[0].Decls = append(reqBody.Tools[0].Decls, decl{t.Name, t.Description, t.InputSchema})
	}
	body, err := json.Marshal(reqBody)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-goog-api-key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	var chunk struct {
		Candidates []struct {
			Content struct {
				Parts []struct {
					Text         string `json:"text"`
					Thought      bool   `json:"thought"`
					FunctionCall *struct {
						Name string          `json:"name"`
						Args json.RawMessage `json:"args"`
					} `json:"functionCall"`
				} `json:"parts"`
			} `json:"content"`
			FinishReason string `json:"finishReason"`
		} `json:"candidates"`
		UsageMetadata bareUsage `json:"usageMetadata"`
	}
	res := &bareResult{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: "))
		if !ok {
			continue
		}
		chunk.Candidates = nil
		if err := json.Unmarshal(data, &chunk); err != nil {
			return nil, err
		}
		res.frames++
		res.usage = chunk.UsageMetadata
		for _, c := range chunk.Candidates {
			for _, p := range c.Content.Parts {
				switch {
				case p.FunctionCall != nil:
					res.calls = append(res.calls, bareCall{p.FunctionCall.Name, p.FunctionCall.Args})
				case p.Thought:
					res.thought.WriteString(p.Text)
				default:
					res.text.WriteString(p.Text)
				}
			}
			if c.FinishReason != "" {
				res.finish = c.FinishReason
			}
		}
	}
	return res, sc.Err()
}
