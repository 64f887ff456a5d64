package cassette

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/weft-run/weft/llm"
)

// noNetwork fails the test if a replay ever reaches the inner transport.
type noNetwork struct{ t *testing.T }

func (n noNetwork) RoundTrip(r *http.Request) (*http.Response, error) {
	n.t.Errorf("replay dialled the network: %s %s", r.Method, r.URL)
	return nil, errors.New("network used during replay")
}

type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// lockstep serves an SSE stream one flushed chunk at a time, sending the
// next only after the client acknowledges the previous, so that each chunk
// arrives in its own body read.
type lockstep struct {
	chunks []string
	ack    chan struct{}
}

func (l *lockstep) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Request-Id", "req-1")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	for _, c := range l.chunks {
		io.WriteString(w, c)
		w.(http.Flusher).Flush()
		select {
		case <-l.ack:
		case <-r.Context().Done():
			return
		}
	}
}

// readEach reads a body to its end, returning every read's bytes and the
// final error; after each non-empty read it calls ack.
func readEach(body io.Reader, ack func()) ([]string, error) {
	var reads []string
	buf := make([]byte, 64<<10)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			reads = append(reads, string(buf[:n]))
			if ack != nil {
				ack()
			}
		}
		if err != nil {
			return reads, err
		}
	}
}

func tempPath(t *testing.T) string {
	return filepath.Join(t.TempDir(), "sub", "dir", "session.jsonl")
}

func mustOpen(t *testing.T, path string, mode Mode) *Cassette {
	t.Helper()
	c, err := Open(path, mode)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// lines returns the file's lines decoded as generic JSON.
func lines(t *testing.T, path string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

func post(t *testing.T, cl *http.Client, url, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func TestParseMode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want Mode
		err  bool
	}{
		{"replay", Replay, false},
		{"record", Record, false},
		{"auto", Auto, false},
		{" Record ", Record, false},
		{"", 0, true},
		{"play", 0, true},
	} {
		got, err := ParseMode(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseMode(%q) = %v, %v", tc.in, got, err)
		}
		if err != nil && !strings.Contains(err.Error(), "replay, record, auto") {
			t.Errorf("error %q does not list the valid modes", err)
		}
		if err == nil && got.String() != strings.ToLower(strings.TrimSpace(tc.in)) {
			t.Errorf("%v.String() = %q", got, got.String())
		}
	}
}

func TestStreamRoundTrip(t *testing.T) {
	t.Parallel()
	chunks := []string{
		"event: message_start\ndata: {\"type\":\"message_start\"}\n\n",
		"data: {\"delta\":\"Hel",                // a frame split across reads
		"lo <world> & ☃\"}\n\ndata: [DONE]\n\n", // HTML-ish text and a multi-byte rune
	}
	srv := &lockstep{chunks: chunks, ack: make(chan struct{}, 1)}
	ts := httptest.NewServer(srv)
	defer ts.Close()

	path := tempPath(t)
	rec := mustOpen(t, path, Record)
	resp := post(t, rec.Client(nil), ts.URL+"/v1/messages", `{"stream":true}`)
	got, err := readEach(resp.Body, func() { srv.ack <- struct{}{} })
	resp.Body.Close()
	if err != io.EOF {
		t.Fatalf("record read: %v", err)
	}
	if strings.Join(got, "") != strings.Join(chunks, "") {
		t.Fatalf("recorded pass-through altered the body: %q", got)
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	if !bytes.Contains(raw, []byte("<world> & ☃")) {
		t.Errorf("text was escaped in the file:\n%s", raw)
	}

	ls := lines(t, path)
	if len(ls) != 2 || ls[0]["cassette"] != float64(1) || ls[0]["recorded_at"] == "" {
		t.Fatalf("file = %v", ls)
	}
	r := ls[1]["response"].(map[string]any)
	var stored []string
	for _, c := range r["chunks"].([]any) {
		stored = append(stored, c.(string))
	}
	if fmt.Sprint(stored) != fmt.Sprint(chunks) {
		t.Errorf("stored chunks = %q, want %q", stored, chunks)
	}
	if body := ls[1]["request"].(map[string]any)["body"]; fmt.Sprint(body) != "map[stream:true]" {
		t.Errorf("request body stored as %#v, want the JSON object", body)
	}

	play := mustOpen(t, path, Replay)
	defer play.Close()
	presp := post(t, play.Client(&http.Client{Transport: noNetwork{t}}), "http://elsewhere.invalid/v1/messages", `{ "stream" : true }`)
	if presp.StatusCode != 200 || presp.Header.Get("Content-Type") != "text/event-stream" || presp.Header.Get("X-Request-Id") != "req-1" {
		t.Errorf("replayed status/headers = %d %v", presp.StatusCode, presp.Header)
	}
	replayed, err := readEach(presp.Body, nil)
	presp.Body.Close()
	if err != io.EOF {
		t.Errorf("replay ended with %v, want io.EOF", err)
	}
	if fmt.Sprint(replayed) != fmt.Sprint(chunks) {
		t.Errorf("replayed reads = %q, want %q", replayed, chunks)
	}
	if play.Unused() != 0 {
		t.Errorf("Unused = %d", play.Unused())
	}
}

// TestSmallReads checks that a reader with a small buffer gets a chunk in
// pieces but never two chunks in one read.
func TestSmallReads(t *testing.T) {
	t.Parallel()
	path := writeCassette(t, `{"request":{"method":"GET","url":"/x"},"response":{"status":200,"chunks":["abcde","fg"],"duration_ms":0}}`)
	c := mustOpen(t, path, Replay)
	req, _ := http.NewRequest("GET", "http://h/x", nil)
	resp, err := c.Transport(nil).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	var reads []string
	buf := make([]byte, 3)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			reads = append(reads, string(buf[:n]))
		}
		if err != nil {
			break
		}
	}
	if want := "[abc de fg]"; fmt.Sprint(reads) != want {
		t.Errorf("reads = %v, want %v", reads, want)
	}
	resp.Body.Close()
	if _, err := resp.Body.Read(buf); err == nil {
		t.Error("read after Close succeeded")
	}
}

// echoServer answers JSON requests with a JSON body naming the request.
func echoServer(t *testing.T) *httptest.Server {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Set-Cookie", "session=cookie-secret-777")
		w.Header().Set("X-Session-Token", "resp-secret-888")
		w.Header().Set("X-Ratelimit-Remaining-Tokens", "9000")
		if r.URL.Path == "/empty" {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		fmt.Fprintf(w, `{"method":%q,"path":%q,"len":%d}`, r.Method, r.URL.Path, len(b))
	}))
	t.Cleanup(ts.Close)
	return ts
}

func TestInteractionsInOrder(t *testing.T) {
	t.Parallel()
	ts := echoServer(t)
	path := tempPath(t)
	rec := mustOpen(t, path, Record)
	bodies := []string{`{"turn":1}`, `{"turn":2,"messages":[{"role":"user"}]}`, `{"turn":3}`}
	var want []string
	for _, b := range bodies {
		resp := post(t, rec.Client(nil), ts.URL+"/v1/chat", b)
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want = append(want, string(got))
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}

	play := mustOpen(t, path, Replay)
	cl := play.Client(&http.Client{Transport: noNetwork{t}})
	for i, b := range bodies {
		if play.Unused() != len(bodies)-i {
			t.Errorf("before request %d Unused = %d", i+1, play.Unused())
		}
		resp := post(t, cl, "http://127.0.0.1:1/v1/chat", b)
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(got) != want[i] {
			t.Errorf("request %d replayed %q, want %q", i+1, got, want[i])
		}
	}
	if play.Unused() != 0 {
		t.Errorf("Unused = %d", play.Unused())
	}
}

// writeCassette writes a version-1 file holding the given interaction lines.
func writeCassette(t *testing.T, interactions ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "x.jsonl")
	data := `{"cassette":1,"recorded_at":"2026-01-01T00:00:00Z"}` + "\n" + strings.Join(interactions, "\n") + "\n"
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func okLine(method, url, body string) string {
	if body == "" {
		body = "null"
	}
	return fmt.Sprintf(`{"request":{"method":%q,"url":%q,"body":%s},"response":{"status":200,"chunks":["ok"],"duration_ms":1}}`, method, url, body)
}

func TestMatching(t *testing.T) {
	t.Parallel()
	const msgs = `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":[{"type":"text","text":"hi"}]}]}`
	for _, tc := range []struct {
		name           string
		recMethod      string
		recURL         string
		recBody        string
		method, url    string
		body           string
		wantErr        string // substring of the message; "" means a match
		wantErrExactly bool
	}{
		{name: "identical", recBody: `{"a":1,"b":[1,2]}`, body: `{"a":1,"b":[1,2]}`},
		{name: "reordered keys and whitespace", recBody: `{"a":1,"b":{"x":true,"y":null}}`, body: "{\n  \"b\": {\"y\": null, \"x\": true},\n  \"a\": 1\n}"},
		{name: "number spelling", recBody: `{"t":1.0,"big":12345678901234567890}`, body: `{"t":1,"big":12345678901234567890}`},
		{name: "other host and scheme", recURL: "https://api.example.com/v1/chat?alt=sse", url: "http://127.0.0.1:9/v1/chat?alt=sse", recBody: `{}`, body: `{}`},
		{name: "secret query params ignored", recURL: "https://h/v1/m:stream?alt=sse", url: "http://h/v1/m:stream?key=AIza-other&alt=sse", recBody: `{}`, body: `{}`},
		{name: "query order ignored", recURL: "/p?a=1&b=2", url: "http://h/p?b=2&a=1", recBody: `{}`, body: `{}`},
		{name: "text bodies", recBody: `"plain text"`, body: `plain text`},
		{name: "no bodies", recMethod: "GET", method: "GET"},
		{
			name: "body text", recBody: msgs,
			body:           strings.Replace(msgs, `"hi"`, `"hello"`, 1),
			wantErr:        `cassette PATH: request 1 does not match the recording: body differs at $.messages[2].content[0].text: recorded "hi", got "hello"`,
			wantErrExactly: true,
		},
		{name: "method", recMethod: "POST", method: "PUT", recBody: `{}`, body: `{}`, wantErr: `method differs: recorded "POST", got "PUT"`},
		{name: "path", recURL: "https://h/v1/chat/completions", url: "http://h/v1/responses", recBody: `{}`, body: `{}`,
			wantErr: `url differs: recorded "/v1/chat/completions", got "/v1/responses"`},
		{name: "query", recURL: "/v1/x?alt=sse", url: "http://h/v1/x", recBody: `{}`, body: `{}`, wantErr: `url differs: recorded "/v1/x?alt=sse", got "/v1/x"`},
		{name: "missing key", recBody: `{"a":1,"stream":true}`, body: `{"a":1}`, wantErr: `body differs at $.stream: recorded true, got nothing`},
		{name: "extra key", recBody: `{"a":1}`, body: `{"a":1,"tools":[]}`, wantErr: `body differs at $.tools: recorded nothing, got []`},
		{name: "longer array", recBody: `{"m":[1]}`, body: `{"m":[1,{"x":2}]}`, wantErr: `body differs at $.m[1]: recorded nothing, got {"x":2} (2 elements instead of 1)`},
		{name: "type", recBody: `{"n":1}`, body: `{"n":"1"}`, wantErr: `body differs at $.n: recorded 1, got "1"`},
		{name: "odd key", recBody: `{"a-b":{"":1}}`, body: `{"a-b":{"":2}}`, wantErr: `body differs at $["a-b"][""]: recorded 1, got 2`},
		{name: "json vs text", recBody: `{"a":1}`, body: `a=1`, wantErr: `body differs at $: recorded {"a":1}, got "a=1"`},
		{name: "body vs none", recBody: `{"a":1}`, body: ``, wantErr: `body differs: recorded {"a":1}, got no body`},
		{
			name: "long string", recBody: `{"s":"` + strings.Repeat("x", 200) + `A` + strings.Repeat("y", 200) + `"}`,
			body:    `{"s":"` + strings.Repeat("x", 200) + `B` + strings.Repeat("y", 200) + `"}`,
			wantErr: `body differs at $.s: recorded "…` + strings.Repeat("x", 20) + `A`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			def := func(s, d string) string {
				if s == "" {
					return d
				}
				return s
			}
			path := writeCassette(t, okLine(def(tc.recMethod, "POST"), def(tc.recURL, "https://api.example.com/v1/chat"), tc.recBody))
			c := mustOpen(t, path, Replay)
			var body io.Reader
			if tc.body != "" {
				body = strings.NewReader(tc.body)
			}
			req, _ := http.NewRequest(def(tc.method, "POST"), def(tc.url, "http://127.0.0.1:1/v1/chat"), body)
			resp, err := c.Client(&http.Client{Transport: noNetwork{t}}).Do(req)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("no match: %v", err)
				}
				resp.Body.Close()
				if c.Unused() != 0 {
					t.Errorf("Unused = %d after the match", c.Unused())
				}
				return
			}
			if err == nil {
				resp.Body.Close()
				t.Fatal("matched; want a mismatch")
			}
			var le *llm.Error
			if !errors.As(err, &le) || le.Category != llm.CategoryBadRequest || !errors.Is(err, ErrMismatch) {
				t.Fatalf("error %v (%T) is not a bad_request *llm.Error wrapping ErrMismatch", err, err)
			}
			want := strings.ReplaceAll(tc.wantErr, "PATH", path)
			if tc.wantErrExactly && le.Message != want || !strings.Contains(le.Message, want) {
				t.Errorf("message\n%s\nwant\n%s", le.Message, want)
			}
			if strings.ContainsAny(le.Message, "\r\n") {
				t.Errorf("message is not one line: %q", le.Message)
			}
			if c.Unused() != 1 {
				t.Errorf("a mismatch consumed the recording: Unused = %d", c.Unused())
			}
		})
	}
}

func TestMismatchNamesTheRequest(t *testing.T) {
	t.Parallel()
	path := writeCassette(t,
		okLine("POST", "/v1/chat", `{"turn":1}`),
		okLine("POST", "/v1/chat", `{"turn":2}`),
		okLine("POST", "/v1/chat", `{"turn":3,"messages":[{"content":"hi"}]}`))
	c := mustOpen(t, path, Replay)
	cl := c.Client(nil)
	for i := 1; i <= 2; i++ {
		resp := post(t, cl, "http://h/v1/chat", fmt.Sprintf(`{"turn":%d}`, i))
		resp.Body.Close()
	}
	_, err := cl.Post("http://h/v1/chat", "application/json", strings.NewReader(`{"turn":3,"messages":[{"content":"hello"}]}`))
	want := fmt.Sprintf(`cassette %s: request 3 does not match the recording: body differs at $.messages[0].content: recorded "hi", got "hello"`, path)
	var le *llm.Error
	if !errors.As(err, &le) || le.Message != want {
		t.Fatalf("err = %v, want message %q", err, want)
	}
	// Through a provider's classification the category survives.
	if ae := llm.AsError("openai", err); ae.Category != llm.CategoryBadRequest || ae.Status() != llm.StatusFailed {
		t.Errorf("AsError = %+v", ae)
	}
}

func TestPastTheEnd(t *testing.T) {
	t.Parallel()
	path := writeCassette(t, okLine("POST", "/v1/chat", `{}`))
	c := mustOpen(t, path, Replay)
	cl := c.Client(nil)
	post(t, cl, "http://h/v1/chat", `{}`).Body.Close()
	_, err := cl.Post("http://h/v1/chat?alt=sse", "application/json", strings.NewReader(`{}`))
	var le *llm.Error
	if !errors.As(err, &le) || le.Category != llm.CategoryBadRequest || !errors.Is(err, ErrExhausted) {
		t.Fatalf("err = %v", err)
	}
	want := fmt.Sprintf("cassette %s: request 2 (POST /v1/chat?alt=sse) is past the end of the recording, which holds 1 interactions", path)
	if le.Message != want {
		t.Errorf("message %q\nwant    %q", le.Message, want)
	}
}

func TestSecretsStripped(t *testing.T) {
	t.Parallel()
	ts := echoServer(t)
	path := tempPath(t)
	rec := mustOpen(t, path, Record)
	secrets := []string{
		"sk-secret-123", "ant-secret-456", "AIza-goog-secret", "cookie-in-secret", "azure-secret",
		"custom-token-val", "my-secret-val", "AIza-query-secret", "apikey-query-secret", "access-query-secret",
		"user:pass-secret", "pass-secret", "cookie-secret-777", "resp-secret-888", "stainless-os-val", "weft-agent/1.0",
		"goog-client-val", "proxy-secret",
	}
	req, _ := http.NewRequest("POST", strings.Replace(ts.URL, "http://", "http://user:pass-secret@", 1)+
		"/v1beta/models/g:streamGenerateContent?alt=sse&key=AIza-query-secret&api_key=apikey-query-secret&access_token=access-query-secret#frag",
		strings.NewReader(`{"contents":[]}`))
	h := req.Header
	h.Set("Authorization", "Bearer sk-secret-123")
	h.Set("X-Api-Key", "ant-secret-456")
	h.Set("x-goog-api-key", "AIza-goog-secret")
	h.Set("Cookie", "c=cookie-in-secret")
	h.Set("Api-Key", "azure-secret")
	h.Set("X-Custom-Token", "custom-token-val")
	h.Set("X-My-Secret", "my-secret-val")
	h.Set("X-Stainless-Os", "stainless-os-val")
	h.Set("User-Agent", "weft-agent/1.0")
	h.Set("X-Goog-Api-Client", "goog-client-val")
	h.Set("Proxy-Authorization", "Basic proxy-secret")
	h.Set("Anthropic-Version", "2023-06-01")
	resp, err := rec.Client(nil).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	resp.Body.Close()
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	for _, s := range secrets {
		if bytes.Contains(raw, []byte(s)) {
			t.Errorf("the file holds %q:\n%s", s, raw)
		}
	}
	for _, keep := range []string{"alt=sse", "Anthropic-Version", "2023-06-01", "X-Ratelimit-Remaining-Tokens", "Content-Type"} {
		if !bytes.Contains(raw, []byte(keep)) {
			t.Errorf("the file lost %q:\n%s", keep, raw)
		}
	}

	// Another key in the replayed request matches the stripped recording.
	play := mustOpen(t, path, Replay)
	req2, _ := http.NewRequest("POST", "https://generativelanguage.googleapis.com/v1beta/models/g:streamGenerateContent?alt=sse&key=AIza-other",
		strings.NewReader(`{"contents":[]}`))
	resp2, err := play.Client(nil).Do(req2)
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.Header.Get("Set-Cookie") != "" || resp2.Header.Get("X-Ratelimit-Remaining-Tokens") != "9000" {
		t.Errorf("replayed headers = %v", resp2.Header)
	}
}

// timeoutErr is a net.Error timeout, as a dial or TLS handshake timeout is.
type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestTransportErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		cat  llm.Category
	}{
		{"refused", errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), llm.CategoryNetwork},
		{"timeout", &net.OpError{Op: "dial", Net: "tcp", Err: timeoutErr{}}, llm.CategoryTimeout},
		{"canceled", fmt.Errorf("sending: %w", context.Canceled), llm.CategoryCanceled},
		{"deadline", context.DeadlineExceeded, llm.CategoryTimeout},
		{"key in message", errors.New(`proxy said: bad url "https://h/x?key=AIza-leaky-key-1"`), llm.CategoryNetwork},
		{"bearer in message", errors.New(`proxy rejected "Bearer sk-leaky-bearer-9" and sk-leaky-bearer-9`), llm.CategoryNetwork},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := tempPath(t)
			rec := mustOpen(t, path, Record)
			failing := rtFunc(func(*http.Request) (*http.Response, error) { return nil, tc.err })
			req, _ := http.NewRequest("POST", "https://h/x?key=AIza-leaky-key-1", strings.NewReader(`{}`))
			req.Header.Set("Authorization", "Bearer sk-leaky-bearer-9")
			_, err := rec.Transport(failing).RoundTrip(req)
			if err != tc.err {
				t.Fatalf("record returned %v, want the inner error", err)
			}
			if err := rec.Close(); err != nil {
				t.Fatal(err)
			}
			ls := lines(t, path)
			if len(ls) != 2 || ls[1]["error"] == nil || ls[1]["response"] != nil {
				t.Fatalf("file = %v", ls)
			}
			raw, _ := os.ReadFile(path)
			for _, secret := range []string{"AIza-leaky-key-1", "sk-leaky-bearer-9"} {
				if bytes.Contains(raw, []byte(secret)) {
					t.Errorf("%s leaked:\n%s", secret, raw)
				}
			}

			play := mustOpen(t, path, Replay)
			req, _ = http.NewRequest("POST", "https://h/x", strings.NewReader(`{}`))
			_, perr := play.Transport(noNetwork{t}).RoundTrip(req)
			if perr == nil {
				t.Fatal("replay succeeded")
			}
			want := strings.NewReplacer(`"Bearer sk-leaky-bearer-9"`, `"REDACTED"`, "sk-leaky-bearer-9", "REDACTED",
				"AIza-leaky-key-1", "REDACTED").Replace(tc.err.Error())
			if perr.Error() != want {
				t.Errorf("replayed %q, want %q", perr, want)
			}
			if got := llm.AsError("p", perr).Category; got != tc.cat {
				t.Errorf("replayed error classifies as %s, want %s", got, tc.cat)
			}
			if play.Unused() != 0 {
				t.Errorf("Unused = %d", play.Unused())
			}
		})
	}
}

func TestCutStream(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"a\":1}\n\ndata: {\"b\"")
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}))
	defer ts.Close()
	path := tempPath(t)
	rec := mustOpen(t, path, Record)
	resp := post(t, rec.Client(nil), ts.URL+"/s", `{}`)
	got, err := readEach(resp.Body, nil)
	resp.Body.Close()
	if err == nil || err == io.EOF {
		t.Fatalf("record read ended with %v, want a cut", err)
	}
	rec.Close()
	r := lines(t, path)[1]["response"].(map[string]any)
	if r["cut"] != true || r["partial"] != nil {
		t.Errorf("response = %v, want cut", r)
	}

	play := mustOpen(t, path, Replay)
	presp := post(t, play.Client(nil), "http://h/s", `{}`)
	replayed, err := readEach(presp.Body, nil)
	if err != io.ErrUnexpectedEOF {
		t.Errorf("replay ended with %v, want io.ErrUnexpectedEOF", err)
	}
	if strings.Join(replayed, "") != strings.Join(got, "") {
		t.Errorf("replayed %q, recorded %q", replayed, got)
	}
	if presp.ContentLength != -1 {
		t.Errorf("ContentLength = %d for a cut body", presp.ContentLength)
	}
}

// holdServer sends one chunk and then holds the stream open until the
// client goes away.
func holdServer(t *testing.T) *httptest.Server {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: first\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(ts.Close)
	return ts
}

func TestAbandonedBody(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"close", "cancel", "cassette-close"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			ts := holdServer(t)
			path := tempPath(t)
			rec := mustOpen(t, path, Record)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/s", strings.NewReader(`{}`))
			resp, err := rec.Client(nil).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 1024)
			n, err := resp.Body.Read(buf)
			if err != nil || string(buf[:n]) != "data: first\n\n" {
				t.Fatalf("first read %q, %v", buf[:n], err)
			}
			switch how {
			case "close":
				resp.Body.Close()
			case "cancel":
				cancel()
				if _, err := resp.Body.Read(buf); err == nil {
					t.Fatal("read after cancel succeeded")
				}
			case "cassette-close":
				if err := rec.Close(); err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
			}
			// The line is written when the body is given up, not at Close.
			ls := lines(t, path)
			if len(ls) != 2 {
				t.Fatalf("file has %d lines after the body was abandoned", len(ls))
			}
			r := ls[1]["response"].(map[string]any)
			if r["partial"] != true || r["cut"] != nil || fmt.Sprint(r["chunks"]) != "[data: first\n\n]" {
				t.Errorf("response = %v, want partial with the first chunk", r)
			}
			rec.Close()

			play := mustOpen(t, path, Replay)
			presp := post(t, play.Client(nil), "http://h/s", `{}`)
			replayed, err := readEach(presp.Body, nil)
			if fmt.Sprint(replayed) != "[data: first\n\n]" || !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("replay = %q, %v", replayed, err)
			}
		})
	}
}

func TestRecordOrderIsRequestOrder(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			w.WriteHeader(200)
			w.(http.Flusher).Flush()
			<-release
		}
		io.WriteString(w, r.URL.Path)
	}))
	defer ts.Close()
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	defer unblock() // before ts.Close, which waits for the handler
	path := tempPath(t)
	rec := mustOpen(t, path, Record)
	cl := rec.Client(nil)
	slow, err := cl.Get(ts.URL + "/slow") // headers arrive; the body waits
	if err != nil {
		t.Fatal(err)
	}
	fast, err := cl.Get(ts.URL + "/fast")
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(fast.Body)
	fast.Body.Close()
	if n := len(lines(t, path)); n != 1 {
		t.Errorf("the second interaction was written before the first: %d lines", n)
	}
	unblock()
	io.ReadAll(slow.Body)
	slow.Body.Close()
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	ls := lines(t, path)
	if len(ls) != 3 {
		t.Fatalf("%d lines", len(ls))
	}
	for i, want := range []string{"/slow", "/fast"} {
		if u := ls[i+1]["request"].(map[string]any)["url"].(string); !strings.HasSuffix(u, want) {
			t.Errorf("line %d is %s, want %s", i+2, u, want)
		}
	}
}

func TestConcurrentReplay(t *testing.T) {
	t.Parallel()
	var ls []string
	for range 8 {
		ls = append(ls, okLine("GET", "/same", ""))
	}
	c := mustOpen(t, writeCassette(t, ls...), Replay)
	cl := c.Client(nil)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			resp, err := cl.Get("http://h/same")
			if err != nil {
				t.Error(err)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(b) != "ok" {
				t.Errorf("body %q", b)
			}
		})
	}
	wg.Wait()
	if c.Unused() != 0 {
		t.Errorf("Unused = %d", c.Unused())
	}
}

func TestBodies(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		body []byte
	}{
		{"json", []byte(`{"a": [1, 2]}`)},
		{"json string", []byte(`"just a string"`)},
		{"text", []byte("line one\nline two <b>")},
		{"binary", []byte{0xff, 0x00, 0xfe, 'a'}},
		{"none", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ts := echoServer(t)
			path := tempPath(t)
			rec := mustOpen(t, path, Record)
			var body io.Reader
			if tc.body != nil {
				body = bytes.NewReader(tc.body)
			}
			req, _ := http.NewRequest("POST", ts.URL+"/b", body)
			resp, err := rec.Client(nil).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if want := fmt.Sprintf(`"len":%d`, len(tc.body)); !strings.Contains(string(got), want) {
				t.Errorf("server saw %s, want %s", got, want)
			}
			rec.Close()

			play := mustOpen(t, path, Replay)
			if tc.body != nil {
				body = bytes.NewReader(tc.body)
			}
			req, _ = http.NewRequest("POST", "http://h/b", body)
			resp, err = play.Client(nil).Do(req)
			if err != nil {
				t.Fatalf("replay: %v", err)
			}
			resp.Body.Close()

			// A different body does not match.
			play = mustOpen(t, path, Replay)
			req, _ = http.NewRequest("POST", "http://h/b", strings.NewReader("different"))
			if _, err := play.Client(nil).Do(req); !errors.Is(err, ErrMismatch) {
				t.Errorf("different body: err = %v", err)
			}
		})
	}
}

func TestEmptyResponse(t *testing.T) {
	t.Parallel()
	ts := echoServer(t)
	path := tempPath(t)
	rec := mustOpen(t, path, Record)
	resp, err := rec.Client(nil).Get(ts.URL + "/empty")
	if err != nil {
		t.Fatal(err)
	}
	// Not reading a body-less response still records it, unabandoned.
	resp.Body.Close()
	rec.Close()
	r := lines(t, path)[1]["response"].(map[string]any)
	if r["status"] != float64(204) || r["partial"] != nil {
		t.Errorf("response = %v", r)
	}
	play := mustOpen(t, path, Replay)
	presp, err := play.Client(nil).Get("http://h/empty")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(presp.Body); err != nil || len(b) != 0 || presp.StatusCode != 204 || presp.Status != "204 No Content" {
		t.Errorf("replayed %q %q %v", presp.Status, b, err)
	}
}

func TestAutoMode(t *testing.T) {
	t.Parallel()
	ts := echoServer(t)
	path := tempPath(t)
	c := mustOpen(t, path, Auto)
	if c.Mode() != Record {
		t.Fatalf("Auto on a missing file is %v", c.Mode())
	}
	post(t, c.Client(nil), ts.URL+"/v1/chat", `{}`).Body.Close()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c = mustOpen(t, path, Auto)
	if c.Mode() != Replay {
		t.Fatalf("Auto on an existing file is %v", c.Mode())
	}
	if c.Unused() != 1 {
		t.Errorf("Unused = %d", c.Unused())
	}
	resp := post(t, c.Client(&http.Client{Transport: noNetwork{t}}), ts.URL+"/v1/chat", `{}`)
	resp.Body.Close()
}

func TestLoadErrors(t *testing.T) {
	t.Parallel()
	good := okLine("POST", "/v1/chat", `{}`)
	for _, tc := range []struct {
		name, data, want string
	}{
		{"empty", "", "empty file"},
		{"blank", "\n\n", "empty file"},
		{"unknown version", `{"cassette":2}` + "\n" + good, ":1: unsupported cassette version 2 (this build reads version 1)"},
		{"no header", good, `:1: not a cassette: the first line must be the header {"cassette":1,...}`},
		{"header not json", "cassette 1\n", ":1: invalid header line"},
		{"corrupt line", `{"cassette":1}` + "\n" + good + "\n" + `{"request":{"method":"POST","url":"/x"},"response":{"status":200,"chunks":["a"` + "\n", ":3: invalid interaction"},
		{"no outcome", `{"cassette":1}` + "\n\n" + `{"request":{"method":"GET","url":"/x"}}`, ":3: interaction has neither a response nor an error"},
		{"both outcomes", `{"cassette":1}` + "\n" + `{"request":{"method":"GET","url":"/x"},"error":"e","response":{"status":200,"chunks":[]}}`, ":2: interaction has both"},
		{"no method", `{"cassette":1}` + "\n" + `{"request":{"url":"/x"},"error":"e"}`, ":2: request has no method"},
		{"bad status", `{"cassette":1}` + "\n" + `{"request":{"method":"GET","url":"/x"},"response":{"status":42,"chunks":[]}}`, ":2: response status 42"},
		{"bad base64", `{"cassette":1}` + "\n" + `{"request":{"method":"GET","url":"/x"},"response":{"status":200,"base64":true,"chunks":["!!"]}}`, ":2: response chunk 0"},
		{"bad url", `{"cassette":1}` + "\n" + `{"request":{"method":"GET","url":"%zz"},"error":"e"}`, ":2: request url"},
		{"cut and partial", `{"cassette":1}` + "\n" + `{"request":{"method":"GET","url":"/x"},"response":{"status":200,"chunks":[],"cut":true,"partial":true}}`, ":2: response is both cut and partial"},
		{"trailing garbage", `{"cassette":1}` + "\n" + good + " {}", ":2: invalid interaction"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "x.jsonl")
			os.WriteFile(path, []byte(tc.data), 0o644)
			_, err := Open(path, Replay)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
				t.Errorf("err = %v, want it to name %s and say %q", err, path, tc.want)
			}
		})
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing.jsonl"), Replay); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestUnusedAndClose(t *testing.T) {
	t.Parallel()
	path := writeCassette(t, okLine("GET", "/a", ""), okLine("GET", "/b", ""), okLine("GET", "/c", ""))
	c := mustOpen(t, path, Replay)
	resp, err := c.Client(nil).Get("http://h/a")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if c.Unused() != 2 {
		t.Errorf("Unused = %d, want 2", c.Unused())
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close with unused interactions: %v", err)
	}
	if _, err := c.Client(nil).Get("http://h/b"); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}

	rec := mustOpen(t, tempPath(t), Record)
	rec.Close()
	if _, err := rec.Client(nil).Get("http://127.0.0.1:1/"); !errors.Is(err, ErrClosed) {
		t.Errorf("record after Close: %v", err)
	}
	if rec.Unused() != 0 {
		t.Errorf("record Unused = %d", rec.Unused())
	}
}

func TestRecordTruncates(t *testing.T) {
	t.Parallel()
	path := writeCassette(t, okLine("GET", "/old", ""))
	c := mustOpen(t, path, Record)
	c.Close()
	if ls := lines(t, path); len(ls) != 1 {
		t.Errorf("Record kept %d lines", len(ls))
	}
}

func TestEncodeChunks(t *testing.T) {
	t.Parallel()
	snow := []byte("☃") // 3 bytes
	for _, tc := range []struct {
		name   string
		chunks [][]byte
		want   []string
		b64    bool
	}{
		{"plain", [][]byte{[]byte("a"), []byte("b")}, []string{"a", "b"}, false},
		{"rune split", [][]byte{append([]byte("x"), snow[:2]...), append(snow[2:], 'y')}, []string{"x", "☃y"}, false},
		{"rune split thrice", [][]byte{snow[:1], snow[1:2], snow[2:]}, []string{"☃"}, false},
		{"truncated at end", [][]byte{[]byte("a"), snow[:2]}, []string{"YQ==", "4pg="}, true},
		{"binary", [][]byte{{0x1f, 0x8b, 0x08}}, []string{"H4sI"}, true},
		{"none", nil, []string{}, false},
	} {
		got, b64 := encodeChunks(tc.chunks)
		if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", tc.want) || b64 != tc.b64 {
			t.Errorf("%s: encodeChunks = %q, %v; want %q, %v", tc.name, got, b64, tc.want, tc.b64)
		}
	}
}

// TestReplayHonoursCancel: a reader whose context is cancelled mid-replay
// gets the context's error, as it would from a live body.
func TestReplayHonoursCancel(t *testing.T) {
	t.Parallel()
	path := writeCassette(t, `{"request":{"method":"GET","url":"/x"},"response":{"status":200,"chunks":["a","b"],"duration_ms":0}}`)
	c := mustOpen(t, path, Replay)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://h/x", nil)
	resp, err := c.Client(nil).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReaderSize(resp.Body, 16)
	if b, _ := r.ReadByte(); b != 'a' {
		t.Fatalf("first byte %q", b)
	}
	cancel()
	if _, err := r.ReadByte(); !errors.Is(err, context.Canceled) {
		t.Errorf("after cancel: %v", err)
	}
}

// TestReplayIgnoresTiming: duration_ms is informational.
func TestReplayIgnoresTiming(t *testing.T) {
	t.Parallel()
	path := writeCassette(t, `{"request":{"method":"GET","url":"/x"},"response":{"status":200,"chunks":["a"],"duration_ms":600000}}`)
	c := mustOpen(t, path, Replay)
	start := time.Now()
	resp, err := c.Client(nil).Get("http://h/x")
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("replay took %v", d)
	}
}
