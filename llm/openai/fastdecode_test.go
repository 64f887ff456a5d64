package openai

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/llmtest"
)

// normalChunk makes two chunks that mean the same to frame compare equal:
// nil and empty slices, a missing error and a null one, and the zeroed
// capacity reset keeps.
func normalChunk(c chunk) chunk {
	out := chunk{Usage: c.Usage}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		out.Error = c.Error
	}
	for _, ch := range c.Choices {
		n := ch
		n.Delta.ToolCalls = nil
		for _, tc := range ch.Delta.ToolCalls {
			n.Delta.ToolCalls = append(n.Delta.ToolCalls, tc)
		}
		out.Choices = append(out.Choices, n)
	}
	return out
}

// checkFast decodes payload with the fast path into a chunk that held an
// earlier frame (as in a stream) and, when it succeeds, requires
// encoding/json to succeed with the same chunk. It reports whether the
// fast path took the payload.
func checkFast(t *testing.T, s *fastScanner, prev, payload string) bool {
	t.Helper()
	var c chunk
	var u chunkUsage
	if prev != "" {
		// Leave capacity and stale values behind, as a stream does.
		if err := json.Unmarshal([]byte(prev), &c); err != nil {
			t.Fatalf("prev: %v", err)
		}
	}
	c.reset()
	if !s.chunk([]byte(payload), &c, &u) {
		return false
	}
	var want chunk
	if err := json.Unmarshal([]byte(payload), &want); err != nil {
		t.Fatalf("fast path accepted %q, encoding/json: %v", payload, err)
	}
	if got, want := normalChunk(c), normalChunk(want); !reflect.DeepEqual(got, want) {
		t.Fatalf("payload %q:\nfast %+v\njson %+v", payload, got, want)
	}
	return true
}

const prevFrame = `{"choices":[{"index":0,"delta":{"content":"old","tool_calls":[{"index":2,"id":"x","function":{"name":"n","arguments":"a"}},{"index":3}]},"finish_reason":"stop"},{"index":1}],"usage":{"prompt_tokens":9}}`

func TestFastChunk(t *testing.T) {
	t.Parallel()
	// The frames every protocol variant of the fakes renders, which are
	// what the compatible servers send, all go the fast way.
	req := &llmtest.Request{Body: []byte(`{"model":"m","stream_options":{"include_usage":true}}`)}
	var usual []string
	for _, p := range []*llmtest.OpenAIProtocol{{}, {ReasoningField: "reasoning", WholeToolCalls: true, NoDone: true}, {Refusal: true}, {ReasoningField: "reasoning_content"}} {
		for _, sc := range []llmtest.Script{
			{Blocks: []llmtest.Block{llmtest.ThinkingBlock("", "hm", "m"), llmtest.TextBlock("a", "b \"quoted\" é 😀 \u2028 <tag>", "")}, Usage: llm.Usage{InputTokens: 3, CacheReadTokens: 2, OutputTokens: 4, ReasoningTokens: 1}},
			{Blocks: []llmtest.Block{llmtest.ToolBlock("c1", "f", `{"a"`, `:1,"b":"\n\t\\"}`), llmtest.ToolBlock("c2", "g", `{}`)}},
		} {
			for _, fr := range p.Frames(&sc, req) {
				if data, ok := strings.CutPrefix(strings.TrimSpace(fr), "data: "); ok && data != "[DONE]" {
					usual = append(usual, data)
				}
			}
		}
	}
	var s fastScanner
	for _, payload := range usual {
		if !checkFast(t, &s, prevFrame, payload) {
			t.Errorf("usual frame not taken by the fast path: %s", payload)
		}
	}
	// Every frame damaged a few thousand ways (bytes replaced, inserted,
	// removed, mostly JSON's own punctuation): whatever the fast path
	// accepts must be what encoding/json makes of it. FuzzFastChunk goes
	// further; this runs with every go test.
	rng := rand.New(rand.NewPCG(14, 15))
	const alphabet = "{}[]:,\"\\ 0-1.eE+nultrfasu\x00\xff\xc3\xa9A_"
	for i := range 20000 {
		b := []byte(usual[i%len(usual)])
		for range 1 + rng.IntN(3) {
			at := rng.IntN(len(b))
			c := alphabet[rng.IntN(len(alphabet))]
			switch rng.IntN(3) {
			case 0:
				b[at] = c
			case 1:
				b = append(b[:at], append([]byte{c}, b[at:]...)...)
			default:
				b = append(b[:at], b[at+1:]...)
			}
		}
		checkFast(t, &s, prevFrame, string(b))
	}

	cases := []struct {
		payload string
		fast    bool // the fast path must take it (else it must decline)
	}{
		{`{}`, true},
		{` { "choices" : [ ] , "usage" : null } `, true},
		{`{"choices":null,"error":null}`, true},
		{`{"choices":[null,{"index":1}]}`, true},
		{`{"choices":[{"index":0,"delta":null,"finish_reason":null}]}`, true},
		{`{"choices":[{"index":0,"delta":{"content":null,"tool_calls":null}}]}`, true},
		{`{"choices":[{"index":-1,"delta":{"tool_calls":[null,{"index":-1,"function":null}]}}]}`, true},
		{`{"choices":[{"delta":{"content":"a\u00e9\u20ac\/\b\f\r"}}]}`, true},
		{`{"x":{"a":[1,-2.5e+3,0.1E9,true,false,null,"\ud83d\ude00",{"b":{}}],"c":[]},"choices":[]}`, true},
		{`{"usage":{"prompt_tokens":10,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":4,"audio_tokens":0},"completion_tokens_details":null,"prompt_cache_hit_tokens":3,"total_tokens":12}}`, true},
		{`{"usage":{}}`, true},
		{`{"choices":[{"index":0,"delta":{"content":"é"}}]}`, true},

		// Declined: encoding/json decides (its result or its error).
		{`{"Choices":[{"index":0,"delta":{"content":"case-folded name"}}]}`, false},
		{`{"choices":[{"INDEX":1,"delta":{"CONTENT":"x"}}]}`, false},
		{`{"choi\u0063es":[]}`, false},
		{`{"choiceſ":[]}`, false},
		{`{"choices":[],"choices":[{"index":0}]}`, false},
		{`{"choices":[{"delta":{"content":"a","content":"b"}}]}`, false},
		{`{"choices":[{"delta":{"content":"\ud83d\ude00"}}]}`, false},
		{`{"choices":[{"delta":{"content":"\ud83d"}}]}`, false},
		{"{\"choices\":[{\"delta\":{\"content\":\"\xff\"}}]}", false},
		{`{"choices":[{"index":1.0}]}`, false},
		{`{"choices":[{"index":1e2}]}`, false},
		{`{"choices":[{"index":"1"}]}`, false},
		{`{"choices":[{"index":99999999999999999999}]}`, false},
		{`{"choices":[{"index":01}]}`, false},
		{`{"choices":{}}`, false},
		{`{"choices":[{"delta":"x"}]}`, false},
		{`{"choices":[{"delta":{"content":1}}]}`, false},
		{`{"error":{"message":"boom"}}`, false},
		{`{"choices":[]} x`, false},
		{`{"choices":[],}`, false},
		{`{"x":[1,]}`, false},
		{`{"x":01}`, false},
		{`{"x":-}`, false},
		{`{"x":1.}`, false},
		{`{"x":"\q"}`, false},
		{"{\"x\":\"a\tb\"}", false},
		{`{"x":nul}`, false},
		{`{"x":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`, false},
		{`{"choices":[{"delta":{"content":"unterminated}}]}`, false},
		{`{"choices"`, false},
	}
	for _, tc := range cases {
		if got := checkFast(t, &s, prevFrame, tc.payload); got != tc.fast {
			t.Errorf("%s: fast path took it: %v, want %v", tc.payload, got, tc.fast)
		}
	}
}

// TestDecodeFallback: payloads the fast path declines decode (or fail) as
// encoding/json decides, through the decoder the stream uses.
func TestDecodeFallback(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		payload string
		content string
		err     bool
	}{
		{`{"Choices":[{"Index":0,"Delta":{"Content":"folded"}}]}`, "folded", false},
		{`{"choices":[{"delta":{"content":"a","content":"b"}}]}`, "b", false},
		{`{"choices":[{"delta":{"content":"\ud83d\ude00"}}]}`, "😀", false},
		{"{\"choices\":[{\"delta\":{\"content\":\"a\xffb\"}}]}", "a\ufffdb", false},
		{`{"choices":[{"index":1.5,"delta":{"content":"x"}}]}`, "", true},
		{`{"choices":[]} x`, "", true},
	} {
		d := decoder{name: "openai"}
		err := d.decode([]byte(tc.payload))
		if (err != nil) != tc.err {
			t.Fatalf("%s: err %v, want error %v", tc.payload, err, tc.err)
		}
		if err != nil {
			continue
		}
		if len(d.c.Choices) != 1 || d.c.Choices[0].Delta.Content != tc.content {
			t.Fatalf("%s: decoded %+v, want content %q", tc.payload, d.c, tc.content)
		}
	}
}

// TestFastChunkAllocs: a text delta's frame costs the delta's string and
// nothing else; encoding/json's decoder took about ten allocations.
func TestFastChunkAllocs(t *testing.T) {
	payload := []byte(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1754000000,"model":"gpt-4.1","system_fingerprint":"fp","choices":[{"index":0,"delta":{"content":"hello"},"logprobs":null,"finish_reason":null}],"usage":null}`)
	d := decoder{name: "openai"}
	allocs := testing.AllocsPerRun(200, func() {
		d.c.reset()
		if err := d.decode(payload); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 1 {
		t.Fatalf("%.1f allocations per text frame, want at most 1 (the delta)", allocs)
	}
}

// FuzzFastChunk holds the fast path to encoding/json: whatever it accepts,
// encoding/json accepts and decodes to the same chunk.
func FuzzFastChunk(f *testing.F) {
	f.Add(prevFrame, `{"choices":[{"index":0,"delta":{"content":"hi"}}]}`)
	f.Add("", `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{\"a\":1}"}}]},"finish_reason":null}],"usage":null}`)
	f.Add(prevFrame, `{"usage":{"prompt_tokens":1,"prompt_tokens_details":{"cached_tokens":1}},"x":[1,{"y":-0.5e1}]}`)
	f.Add("", `{"choices":[{"delta":{"reasoning":"r","reasoning_content":"\u00e9"}}],"error":null}`)
	f.Fuzz(func(t *testing.T, prev, payload string) {
		if prev != "" && json.Unmarshal([]byte(prev), new(chunk)) != nil {
			prev = ""
		}
		var s fastScanner
		checkFast(t, &s, prev, payload)
	})
}

// BenchmarkDecodeChunk decodes a stream's worth of frames (a tool call's
// and a text answer's, as the fakes render them) with the fast path and
// with encoding/json alone.
func BenchmarkDecodeChunk(b *testing.B) {
	req := &llmtest.Request{Body: []byte(`{"model":"m","stream_options":{"include_usage":true}}`)}
	sc := llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock("call_1", "echo", `{"te`, `xt":"`, `hello"}`),
		llmtest.TextBlock(strings.Fields("The tool said hello , so the answer is hello and that is all there is to say about it .")...)},
		Usage: llm.Usage{InputTokens: 120, OutputTokens: 20}}
	var payloads [][]byte
	for _, fr := range (&llmtest.OpenAIProtocol{}).Frames(&sc, req) {
		if data, ok := strings.CutPrefix(strings.TrimSpace(fr), "data: "); ok && data != "[DONE]" {
			payloads = append(payloads, []byte(data))
		}
	}
	for _, bc := range []struct {
		name   string
		decode func(d *decoder, p []byte) error
	}{
		{"fast", (*decoder).decode},
		{"encoding-json", (*decoder).decodeJSON},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			d := decoder{name: "openai"}
			for b.Loop() {
				for _, p := range payloads {
					d.c.reset()
					if err := bc.decode(&d, p); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(payloads)), "ns/frame")
		})
	}
}
