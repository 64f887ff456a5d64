package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/weft-run/weft/internal/netguard"
	"github.com/weft-run/weft/tool"
)

// fetchCall runs tl with input and returns the result, failing on a Go
// error (the tool reports everything as error results).
func fetchCall(t *testing.T, tl tool.Tool, ctx context.Context, in map[string]any) tool.Result {
	t.Helper()
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tl.Run(ctx, &tool.Call{
		ID: "call_1", Name: "WebFetch", Input: raw,
		Session:  tool.NewSession(),
		Progress: func(string) {},
		Notify:   func(string, any) {},
	})
	if err != nil {
		t.Fatalf("Run returned a Go error: %v", err)
	}
	return res
}

func fetchOpen() Config { return Config{AllowPrivateNetworks: true} }

// fetchServer serves handler and counts the requests it received.
func fetchServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func TestWebFetchSpec(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg     Config
		timeout time.Duration
		inDesc  []string
	}{
		{Config{}, 40 * time.Second, []string{"5 MiB", "30s"}},
		{Config{FetchTimeout: 5 * time.Second, MaxFetchBytes: 1 << 10}, 15 * time.Second, []string{"1 KiB", "5s"}},
	} {
		s := NewWebFetch(tc.cfg).Spec()
		if s.Name != "WebFetch" {
			t.Errorf("name %q", s.Name)
		}
		m := s.Meta
		if !m.ReadOnly || !m.ConcurrencySafe || m.Effect != tool.EffectExternal || m.Permission != tool.ClassWebFetch || m.Timeout != tc.timeout {
			t.Errorf("meta %+v", m)
		}
		for _, want := range append(tc.inDesc, "does not run a second model", "prompt") {
			if !strings.Contains(s.Description, want) {
				t.Errorf("description lacks %q", want)
			}
		}
		var schema struct {
			Type                 string                     `json:"type"`
			Required             []string                   `json:"required"`
			AdditionalProperties *bool                      `json:"additionalProperties"`
			Properties           map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(s.InputSchema, &schema); err != nil {
			t.Fatal(err)
		}
		if schema.Type != "object" || strings.Join(schema.Required, ",") != "url,prompt" || schema.AdditionalProperties == nil || *schema.AdditionalProperties || len(schema.Properties) != 2 {
			t.Errorf("schema %s", s.InputSchema)
		}
	}
}

func TestWebFetchSchemaValidation(t *testing.T) {
	t.Parallel()
	spec := NewWebFetch(Config{}).Spec()
	for _, tc := range []struct {
		input string
		ok    bool
	}{
		{`{"url":"https://example.com/","prompt":"summarise"}`, true},
		{`{"url":"https://example.com/"}`, false},
		{`{"prompt":"x"}`, false},
		{`{"url":"https://example.com/","prompt":"x","extra":1}`, false},
		{`{"url":42,"prompt":"x"}`, false},
	} {
		err := tool.ValidateInput(spec, json.RawMessage(tc.input))
		if (err == nil) != tc.ok {
			t.Errorf("%s: err=%v, want ok=%v", tc.input, err, tc.ok)
		}
	}
}

func TestWebFetchRejectsBadURLs(t *testing.T) {
	t.Parallel()
	wf := NewWebFetch(fetchOpen())
	for _, tc := range []struct{ url, want string }{
		{"", "url is empty"},
		{"example.com/page", "not absolute"},
		{"ftp://example.com/file", `unsupported URL scheme "ftp"`},
		{"file:///etc/passwd", `unsupported URL scheme "file"`},
		{"javascript:alert(1)", `unsupported URL scheme "javascript"`},
		{"https://", "has no host"},
		{"https://user:secret@example.com/", "contains credentials"},
		{"http://[::1", "invalid URL"},
	} {
		res := fetchCall(t, wf, context.Background(), map[string]any{"url": tc.url, "prompt": "p"})
		if !res.IsError || !strings.Contains(res.TextOf(), tc.want) {
			t.Errorf("%q: got %v %q, want error containing %q", tc.url, res.IsError, res.TextOf(), tc.want)
		}
	}
}

func TestWebFetchGuardRefusesPrivateTargets(t *testing.T) {
	t.Parallel()
	srv, hits := fetchServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "secret") })
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	wf := NewWebFetch(Config{})
	for _, tc := range []struct{ url, host string }{
		{srv.URL + "/", "127.0.0.1"},
		{fmt.Sprintf("http://localhost:%d/", port), "localhost"}, // resolved, refused at dial time
		{fmt.Sprintf("http://[::1]:%d/", port), "::1"},
		{fmt.Sprintf("http://[::ffff:127.0.0.1]:%d/", port), "::ffff:127.0.0.1"},
		// Literal private addresses are refused before any packet is sent.
		{"http://10.0.0.1/", "10.0.0.1"},
		{"http://192.168.0.1:8080/admin", "192.168.0.1"},
		{"http://169.254.169.254/latest/meta-data/", "169.254.169.254"},
		{"http://100.100.100.200/", "100.100.100.200"},
	} {
		res := fetchCall(t, wf, context.Background(), map[string]any{"url": tc.url, "prompt": "p"})
		text := res.TextOf()
		if !res.IsError || !strings.Contains(text, "refused to connect to "+tc.host) || !strings.Contains(text, "AllowPrivateNetworks") {
			t.Errorf("%s: got %v %q", tc.url, res.IsError, text)
		}
		if strings.Contains(text, "secret") {
			t.Errorf("%s: content leaked: %q", tc.url, text)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the guarded server received %d requests", n)
	}
	// The same server is reachable once private networks are allowed.
	res := fetchCall(t, NewWebFetch(fetchOpen()), context.Background(), map[string]any{"url": srv.URL, "prompt": "p"})
	if res.IsError || !strings.HasSuffix(res.TextOf(), "secret") {
		t.Errorf("allowed fetch: %v %q", res.IsError, res.TextOf())
	}
}

// TestFetchDialTimeGuard bypasses the URL check and drives the tool's HTTP
// client directly: the dialer alone must refuse the loopback server.
func TestFetchDialTimeGuard(t *testing.T) {
	t.Parallel()
	srv, hits := fetchServer(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "secret") })
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	ft := fetchNew(Config{}, nil)
	for _, u := range []string{srv.URL, fmt.Sprintf("http://localhost:%d/", port)} {
		resp, err := ft.client.Get(u)
		if err == nil {
			resp.Body.Close()
			t.Fatalf("%s: dial was not refused", u)
		}
		var blocked *netguard.BlockedError
		if !errors.As(err, &blocked) || blocked.Reason != "loopback" {
			t.Errorf("%s: error %v, want a loopback refusal", u, err)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the server received %d requests", n)
	}
}

// TestWebFetchRedirectRecheckedAtDial simulates DNS rebinding: the host is
// public for the first connection and private for the next one, reached
// through a same-host redirect.
func TestWebFetchRedirectRecheckedAtDial(t *testing.T) {
	t.Parallel()
	var rebound atomic.Bool
	var paths []string
	var mu sync.Mutex
	srv, _ := fetchServer(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path)
		mu.Unlock()
		if r.URL.Path == "/start" {
			rebound.Store(true)
			w.Header().Set("Connection", "close")
			http.Redirect(w, r, "/next", http.StatusFound)
			return
		}
		io.WriteString(w, "internal data")
	})
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	ft := fetchNew(Config{}, func(a netip.Addr) string {
		if rebound.Load() {
			return "private"
		}
		return ""
	})
	res := fetchCall(t, ft, context.Background(), map[string]any{"url": fmt.Sprintf("http://localhost:%d/start", port), "prompt": "p"})
	if !res.IsError || !strings.Contains(res.TextOf(), "refused to connect to localhost") || strings.Contains(res.TextOf(), "internal data") {
		t.Fatalf("got %v %q", res.IsError, res.TextOf())
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(paths, ",") != "/start" {
		t.Errorf("server saw %v, want only /start", paths)
	}
}

func TestWebFetchCrossHostRedirectIsReported(t *testing.T) {
	t.Parallel()
	srv, hits := fetchServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/meta":
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
		case "/moved":
			http.Redirect(w, r, "https://docs.example.org/new/place?q=1#frag", http.StatusMovedPermanently)
		case "/ftp":
			http.Redirect(w, r, "ftp://example.org/file", http.StatusFound)
		default:
			io.WriteString(w, "should not be fetched")
		}
	})
	loopbackOnly := func(a netip.Addr) string {
		if a == netip.MustParseAddr("127.0.0.1") {
			return ""
		}
		return netguard.Classify(a)
	}
	ft := fetchNew(Config{}, loopbackOnly)
	for _, tc := range []struct {
		path, redirect string
		want           []string
	}{
		{"/meta", "http://169.254.169.254/latest/meta-data/", []string{"Status: 302", "link-local (cloud metadata service) address, which WebFetch will refuse"}},
		{"/moved", "https://docs.example.org/new/place?q=1", []string{"Status: 301", "different host (docs.example.org)", `- url: "https://docs.example.org/new/place?q=1"`, `- prompt: "what changed?"`}},
		{"/ftp", "ftp://example.org/file", []string{"uses the ftp scheme"}},
	} {
		res := fetchCall(t, ft, context.Background(), map[string]any{"url": srv.URL + tc.path, "prompt": "what changed?"})
		text := res.TextOf()
		if res.IsError || !strings.HasPrefix(text, "URL: "+srv.URL+tc.path+"\n") || !strings.Contains(text, "Redirect: "+tc.redirect+"\n") {
			t.Errorf("%s: got %v %q", tc.path, res.IsError, text)
		}
		for _, w := range tc.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s: %q lacks %q", tc.path, text, w)
			}
		}
		if res.Data["redirect"] != tc.redirect {
			t.Errorf("%s: data %v", tc.path, res.Data)
		}
	}
	if n := hits.Load(); n != 3 {
		t.Errorf("server saw %d requests, want 3 (no redirect followed)", n)
	}
}

func TestFetchSameSite(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		from, to string
		same     bool
	}{
		{"https://example.com/a", "https://example.com/b", true},
		{"https://example.com/a", "https://www.example.com/b", true},
		{"https://www.example.com/a", "https://EXAMPLE.com/b", true},
		{"http://example.com/a", "https://example.com/a", true},
		{"http://example.com:8080/a", "https://example.com/a", false},
		{"https://example.com/a", "http://example.com/a", false},
		{"https://example.com/a", "https://example.com:8443/a", false},
		{"https://example.com:443/a", "https://example.com/a", true},
		{"https://example.com/a", "https://api.example.com/a", false},
		{"https://example.com/a", "https://example.org/a", false},
		{"https://example.com/a", "https://user@example.com/a", false},
		{"http://127.0.0.1:80/a", "http://localhost/a", false},
	} {
		from, _ := url.Parse(tc.from)
		to, _ := url.Parse(tc.to)
		if got := fetchSameSite(from, to); got != tc.same {
			t.Errorf("%s -> %s: %v, want %v", tc.from, tc.to, got, tc.same)
		}
	}
}

func TestWebFetchContent(t *testing.T) {
	t.Parallel()
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + strings.Repeat("\x00", 100))
	srv, _ := fetchServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/page":
			if r.Header.Get("User-Agent") == "" || !strings.Contains(r.Header.Get("Accept"), "text/html") {
				http.Error(w, "bad headers", http.StatusBadRequest)
				return
			}
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			io.WriteString(w, `<html><head><title>Doc</title></head><body><nav>menu</nav><h2>Install</h2><p>Run <code>go get</code>, see <a href="/more">more</a>.</p></body></html>`)
		case "/plain":
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			io.WriteString(w, "line 1\n  <b>kept</b>\n")
		case "/json":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"a": [1, 2]}`)
		case "/md":
			w.Header().Set("Content-Type", "text/markdown")
			io.WriteString(w, "# Title\n\n- item\n")
		case "/latin1":
			w.Header().Set("Content-Type", "text/plain; charset=iso-8859-1")
			w.Write([]byte("caf\xe9"))
		case "/latin1-meta":
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte("<html><head><meta charset=\"windows-1252\"></head><body><p>na\xefve \x93quotes\x94</p></body></html>"))
		case "/utf8-late":
			// No declaration and only ASCII in the first 1024 bytes.
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, "<p>"+strings.Repeat("a", 1100)+"</p><p>日本語</p>")
		case "/sniff":
			w.Header()["Content-Type"] = nil
			io.WriteString(w, "<!DOCTYPE html><html><body><h1>Sniffed</h1></body></html>")
		case "/png":
			w.Header().Set("Content-Type", "image/png")
			w.Write(png)
		case "/pdf":
			w.Header().Set("Content-Type", "application/pdf")
			w.Header().Set("Content-Length", "2048")
			w.Write(make([]byte, 2048))
		case "/empty":
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, "<html><body><script>app()</script></body></html>")
		case "/hop1":
			http.Redirect(w, r, "/hop2", http.StatusMovedPermanently)
		case "/hop2":
			http.Redirect(w, r, srv0(r)+"/plain", http.StatusTemporaryRedirect)
		case "/big":
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, strings.Repeat("x", 5000))
		default:
			http.NotFound(w, r)
		}
	})
	wf := NewWebFetch(Config{AllowPrivateNetworks: true, MaxFetchBytes: 4096})
	for _, tc := range []struct {
		path   string
		header string // exact start of the result
		want   []string
		not    []string
	}{
		{"/page", "URL: " + srv.URL + "/page\nStatus: 200\nContent-Type: text/html; charset=utf-8\n\nPrompt: what is it?\n\n",
			[]string{"Title: Doc\n\n## Install\n\nRun `go get`, see [more](" + srv.URL + "/more)."}, []string{"menu"}},
		{"/plain", "URL: " + srv.URL + "/plain\nStatus: 200\nContent-Type: text/plain; charset=utf-8\n\nPrompt: what is it?\n\nline 1\n  <b>kept</b>\n", nil, nil},
		{"/json", "", []string{"Content-Type: application/json\n", "\n\n{\"a\": [1, 2]}"}, nil},
		{"/md", "", []string{"\n\n# Title\n\n- item\n"}, nil},
		{"/latin1", "", []string{"café"}, nil},
		{"/latin1-meta", "", []string{"naïve “quotes”"}, nil},
		{"/utf8-late", "", []string{"日本語"}, nil},
		{"/sniff", "", []string{"Content-Type: (none; sniffed as text/html)", "# Sniffed"}, nil},
		{"/png", "", []string{"Content-Type: image/png\n", "[The response is image/png (", "bytes), which WebFetch does not return as text"}, []string{"PNG"}},
		{"/pdf", "", []string{"application/pdf (2 KiB)"}, nil},
		{"/empty", "", []string{"[The page has no readable text.]"}, []string{"app()"}},
		{"/hop1", "URL: " + srv.URL + "/plain\nRedirected from: " + srv.URL + "/hop1\nStatus: 200\n", []string{"line 1"}, nil},
		{"/big", "", []string{"Truncated: the response is larger than 4 KiB; only the first 4 KiB was read.\n", strings.Repeat("x", 4096)}, []string{strings.Repeat("x", 4097)}},
	} {
		res := fetchCall(t, wf, context.Background(), map[string]any{"url": srv.URL + tc.path, "prompt": "what is it?"})
		text := res.TextOf()
		if res.IsError {
			t.Errorf("%s: error %q", tc.path, text)
			continue
		}
		if !strings.HasPrefix(text, tc.header) {
			t.Errorf("%s: result starts\n%q\nwant\n%q", tc.path, text, tc.header)
		}
		for _, w := range tc.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s: %q lacks %q", tc.path, text, w)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(text, w) {
				t.Errorf("%s: %q should not contain %q", tc.path, text, w)
			}
		}
		if !utf8.ValidString(text) {
			t.Errorf("%s: invalid UTF-8", tc.path)
		}
	}
}

// srv0 is the origin a request came to, for absolute same-host redirects.
func srv0(r *http.Request) string { return "http://" + r.Host }

func TestWebFetchErrors(t *testing.T) {
	t.Parallel()
	srv, _ := fetchServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/missing":
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, "<html><head><style>x{}</style></head><body><h1>Not here</h1><p>"+strings.Repeat("word ", 200)+"</p></body></html>")
		case "/boom":
			http.Error(w, "database on fire", http.StatusInternalServerError)
		case "/loop":
			http.Redirect(w, r, "/loop", http.StatusFound)
		case "/badloc":
			w.Header().Set("Location", "http://[::1")
			w.WriteHeader(http.StatusFound)
		case "/slow":
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		}
	})
	wf := NewWebFetch(Config{AllowPrivateNetworks: true, FetchTimeout: 300 * time.Millisecond})
	for _, tc := range []struct {
		path string
		want []string
	}{
		{"/missing", []string{"answered HTTP 404 Not Found: # Not here word word", "…"}},
		{"/boom", []string{"answered HTTP 500 Internal Server Error: database on fire"}},
		{"/loop", []string{"stopped after 5 redirects"}},
		{"/badloc", []string{"Location"}},
		{"/slow", []string{"timed out after 300ms fetching " + srv.URL + "/slow"}},
	} {
		res := fetchCall(t, wf, context.Background(), map[string]any{"url": srv.URL + tc.path, "prompt": "p"})
		text := res.TextOf()
		if !res.IsError {
			t.Errorf("%s: not an error: %q", tc.path, text)
		}
		for _, w := range tc.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s: %q lacks %q", tc.path, text, w)
			}
		}
		if strings.Contains(text, "x{}") || utf8.RuneCountInString(text) > 500 {
			t.Errorf("%s: excerpt not cleaned or not short: %q", tc.path, text)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	res := fetchCall(t, NewWebFetch(Config{AllowPrivateNetworks: true}), ctx, map[string]any{"url": srv.URL + "/slow", "prompt": "p"})
	if !res.IsError || !strings.Contains(res.TextOf(), "canceled") {
		t.Errorf("cancel: %v %q", res.IsError, res.TextOf())
	}

	// Nothing listens on a closed server's port.
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	res = fetchCall(t, wf, context.Background(), map[string]any{"url": closed.URL, "prompt": "p"})
	if !res.IsError || !strings.Contains(res.TextOf(), "fetching "+closed.URL+" failed") {
		t.Errorf("closed port: %v %q", res.IsError, res.TextOf())
	}
}

// TestWebFetchThroughRegistry runs the tool the way the engine does.
func TestWebFetchThroughRegistry(t *testing.T) {
	t.Parallel()
	srv, _ := fetchServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, strings.Repeat("y", 100000))
	})
	reg, err := tool.NewRegistry(NewWebFetch(fetchOpen()))
	if err != nil {
		t.Fatal(err)
	}
	res := reg.Execute(context.Background(), &tool.Call{ID: "1", Name: "WebFetch", Input: json.RawMessage(`{"url":"` + srv.URL + `"}`)})
	if !res.IsError || !strings.Contains(res.TextOf(), "prompt") {
		t.Errorf("missing prompt: %v %q", res.IsError, res.TextOf())
	}
	res = reg.Execute(context.Background(), &tool.Call{ID: "2", Name: "WebFetch", Input: json.RawMessage(`{"url":"` + srv.URL + `","prompt":"p"}`)})
	if res.IsError || res.Truncated == 0 || !strings.HasPrefix(res.TextOf(), "URL: "+srv.URL) {
		t.Errorf("got error=%v truncated=%d", res.IsError, res.Truncated)
	}
}

// TestWebFetchProxy: behind a proxy the dial goes to the proxy, so the
// target is checked before the request instead.
func TestWebFetchProxy(t *testing.T) {
	t.Parallel()
	var targets []string
	var mu sync.Mutex
	proxy, hits := fetchServer(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		targets = append(targets, r.URL.String())
		mu.Unlock()
		io.WriteString(w, "via proxy")
	})
	pu, _ := url.Parse(proxy.URL)
	cfg := Config{HTTPClient: &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}}
	wf := NewWebFetch(cfg)
	// A public literal address is sent to the (loopback) proxy, which
	// answers itself: no packet goes to the public address.
	res := fetchCall(t, wf, context.Background(), map[string]any{"url": "http://93.184.215.14/page", "prompt": "p"})
	if res.IsError || !strings.HasSuffix(res.TextOf(), "via proxy") {
		t.Fatalf("public via proxy: %v %q", res.IsError, res.TextOf())
	}
	for _, u := range []string{"http://localhost/admin", "http://10.1.2.3/"} {
		res = fetchCall(t, wf, context.Background(), map[string]any{"url": u, "prompt": "p"})
		if !res.IsError || !strings.Contains(res.TextOf(), "refused to connect") {
			t.Errorf("%s via proxy: %v %q", u, res.IsError, res.TextOf())
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if hits.Load() != 1 || targets[0] != "http://93.184.215.14/page" {
		t.Errorf("proxy saw %v", targets)
	}
}

type fetchRoundTripper func(*http.Request) (*http.Response, error)

func (f fetchRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestWebFetchOpaqueTransport: a caller's custom RoundTripper cannot be
// instrumented at dial time, so hosts are resolved and checked first.
func TestWebFetchOpaqueTransport(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	rt := fetchRoundTripper(func(r *http.Request) (*http.Response, error) {
		calls.Add(1)
		return &http.Response{
			StatusCode: 200, Status: "200 OK", Request: r,
			Header: http.Header{"Content-Type": {"text/plain"}},
			Body:   io.NopCloser(strings.NewReader("canned " + r.URL.Host)),
		}, nil
	})
	wf := NewWebFetch(Config{HTTPClient: &http.Client{Transport: rt}})
	res := fetchCall(t, wf, context.Background(), map[string]any{"url": "http://localhost:9/", "prompt": "p"})
	if !res.IsError || !strings.Contains(res.TextOf(), "refused to connect to localhost") {
		t.Errorf("localhost: %v %q", res.IsError, res.TextOf())
	}
	if calls.Load() != 0 {
		t.Errorf("the transport was called for a refused host")
	}
	res = fetchCall(t, wf, context.Background(), map[string]any{"url": "https://93.184.215.14/x", "prompt": "p"})
	if res.IsError || !strings.HasSuffix(res.TextOf(), "canned 93.184.215.14") {
		t.Errorf("public: %v %q", res.IsError, res.TextOf())
	}
	// With private networks allowed the caller's transport is used as is.
	res = fetchCall(t, NewWebFetch(Config{AllowPrivateNetworks: true, HTTPClient: &http.Client{Transport: rt}}), context.Background(), map[string]any{"url": "http://localhost:9/", "prompt": "p"})
	if res.IsError || !strings.HasSuffix(res.TextOf(), "canned localhost:9") {
		t.Errorf("allowed: %v %q", res.IsError, res.TextOf())
	}
}

func TestFetchHTMLToMarkdown(t *testing.T) {
	t.Parallel()
	base, _ := url.Parse("https://example.com/docs/page.html")
	for _, tc := range []struct {
		name, in, want string
	}{
		{"title and heading", `<title> My  Page </title><h1>Hello <em>there</em></h1>`, "Title: My Page\n\n# Hello *there*"},
		{"whitespace", "<p>  a \n\t b   <b> c </b>d</p>", "a b **c** d"},
		{"paragraphs", "<p>one</p><p>two</p>", "one\n\ntwo"},
		{"br", "<p>one<br>two<br/><br>three</p>", "one  \ntwo\n\nthree"},
		{"drops", `<script>x()</script><style>p{}</style><noscript>js</noscript><nav>menu</nav><svg><text>s</text></svg><footer>foot</footer><template>t</template><p>body</p><div hidden>h</div><span aria-hidden="true">icon</span>`, "body"},
		{"headings", "<h1>A</h1><h3>B</h3><h6>C</h6>", "# A\n\n### B\n\n###### C"},
		{"empty heading", "<h2> </h2><p>x</p>", "x"},
		{"list", "<ul><li>one</li><li>two</li></ul>", "- one\n- two"},
		{"ordered", `<ol start="3"><li>c</li><li>d</li></ol>`, "3. c\n4. d"},
		{"nested list", "<ul><li>a<ul><li>b</li></ul></li><li>c</li></ul>", "- a\n\n  - b\n- c"},
		{"list after para", "<p>intro</p><ul><li>x</li></ul><p>after</p>", "intro\n\n- x\n\nafter"},
		{"li paragraphs", "<ul><li><p>first</p><p>second</p></li></ul>", "- first\n\n  second"},
		{"link", `<p>see <a href="/x?a=1">the docs</a>.</p>`, "see [the docs](https://example.com/x?a=1)."},
		{"relative link", `<a href="other.html#sec">o</a>`, "[o](https://example.com/docs/other.html#sec)"},
		{"link spaces", `<p>a<a href="/b"> b </a>c</p>`, "a [b](https://example.com/b) c"},
		{"fragment link", `<a href="#top">top</a>`, "top"},
		{"js link", `<a href="javascript:void(0)">click</a>`, "click"},
		{"mailto", `<a href="mailto:a@b.c">mail</a>`, "[mail](mailto:a@b.c)"},
		{"link parens", `<a href="/wiki/Go_(language)">Go</a>`, "[Go](https://example.com/wiki/Go_%28language%29)"},
		{"link brackets", `<a href="/x">[1]</a>`, `[[1]](https://example.com/x)`},
		{"empty link", `<p>x<a href="/y"></a>z</p>`, "xz"},
		{"image", `<img src="/i.png" alt="A cat">`, "![A cat](https://example.com/i.png)"},
		{"image no alt", `<p>x<img src="/i.png">y</p>`, "xy"},
		{"image in link", `<a href="/home"><img src="logo.png" alt="Logo"></a>`, "[Logo](https://example.com/home)"},
		{"data image", `<img src="data:image/png;base64,AAAA" alt="dot">`, "dot"},
		{"base element", `<head><base href="https://cdn.example.net/v2/"></head><a href="a">a</a>`, "[a](https://cdn.example.net/v2/a)"},
		{"inline code", "<p>run <code>go  test</code> now</p>", "run `go test` now"},
		{"code backtick", "<code>a`b</code>", "``a`b``"},
		{"pre", "<pre><code class=\"language-go\">func f() {\n\treturn\n}\n</code></pre>", "```go\nfunc f() {\n\treturn\n}\n```"},
		{"pre fence", "<pre>```\nx\n```</pre>", "````\n```\nx\n```\n````"},
		{"pre lang class", `<pre class="highlight-source-python">print(1)</pre>`, "```python\nprint(1)\n```"},
		{"pre bad lang", `<pre><code class="language-x}y">z</code></pre>`, "```\nz\n```"},
		{"pre br", "<pre>a<br>b</pre>", "```\na\nb\n```"},
		{"blockquote", "<p>x</p><blockquote><p>a</p><p>b</p></blockquote>", "x\n\n> a\n> \n> b"},
		{"hr", "<p>a</p><hr><p>b</p>", "a\n\n---\n\nb"},
		{"table", `<table><thead><tr><th>K</th><th>V</th></tr></thead><tbody><tr><td>a|b</td><td><a href="/v">v</a></td></tr></tbody></table>`, "| K | V |\n|---|---|\n| a\\|b | [v](https://example.com/v) |"},
		{"table no header", `<table><tr><td>1</td><td>2</td></tr><tr><td></td><td></td></tr></table>`, "| 1 | 2 |\n|---|---|"},
		{"layout table", `<table><tr><td><h2>Main</h2><p>body</p></td><td>side</td></tr></table>`, "## Main\n\nbody\n\nside"},
		{"single column table", `<table><tr><td>only</td></tr><tr><td>cell</td></tr></table>`, "| only |\n|---|\n| cell |"},
		{"table caption", `<table><caption>Cap</caption><tr><th>a</th><th>b</th></tr></table>`, "| a | b |\n|---|---|\n\nCap"},
		{"entities", "<p>&lt;tag&gt; &amp; &copy; &nbsp;x</p>", "<tag> & © x"},
		{"math", `<p>e = <math><mi>m</mi><mi>c</mi></math></p>`, "e = mc"},
		{"dl", "<dl><dt>term</dt><dd>def</dd></dl>", "term\n\ndef"},
		{"buttons and forms", `<form><label>Name</label><input value="v"><button>Go</button><select><option>o</option></select></form>`, "Name"},
		{"aside and landmarks", `<aside>related</aside><div role="navigation">menu</div><div role="contentinfo">foot</div><div role="complementary">side</div><p>body</p>`, "body"},
		{"markdown characters are not escaped", "<p>1. not a list, * a star, _under_, # hash, [x], a_b_c</p>", "1. not a list, * a star, _under_, # hash, [x], a_b_c"},
		{"angle brackets", "<p>if a &lt; b &amp;&amp; b &gt; c then &lt;div&gt;</p>", "if a < b && b > c then <div>"},
		{"private use characters", "<p>\ue000script\ue001</p>", "\ufffdscript\ufffd"},
		{"pipe in table code", "<table><tr><th>op</th><th>x</th></tr><tr><td><code>a|b</code></td><td>y</td></tr></table>", "| op | x |\n|---|---|\n| `a\\|b` | y |"},
		{"image alt in cell", `<table><tr><th>a</th><th>b</th></tr><tr><td><img src="/i.png" alt="x|y"></td><td>z</td></tr></table>`, "| a | b |\n|---|---|\n| ![x\\|y](https://example.com/i.png) | z |"},
		{"strikethrough", "<p>price <del>10</del> 8</p>", "price ~~10~~ 8"},
		{"no-break spaces", "<p>a&nbsp;&nbsp;b</p>", "a b"},
		{"link title dropped", `<a href="/x" title="tip">x</a>`, "[x](https://example.com/x)"},
		{"pre in list", "<ul><li>run<pre>go test</pre></li></ul>", "- run\n\n  ```\n  go test\n  ```"},
		{"plain text doc", "just text", "just text"},
		{"empty", "", ""},
	} {
		if got := fetchHTMLToMarkdown(tc.in, base); got != tc.want {
			t.Errorf("%s:\ngot  %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

func TestFetchHTMLDeepNesting(t *testing.T) {
	t.Parallel()
	const depth = 20000
	for _, in := range []string{
		strings.Repeat("<div><span>", depth) + "deep" + strings.Repeat("</span></div>", depth),
		strings.Repeat("<ul><li>", depth) + "deep",
		strings.Repeat("<blockquote>", 450) + "deep",
		strings.Repeat("<table><tr><td>", 150) + "deep",
		"<script>" + strings.Repeat("<div>", 600) + "x</script><p>deep</p>",
	} {
		got := fetchHTMLToMarkdown(in, nil)
		if !strings.Contains(got, "deep") || strings.Contains(got, "<") || len(got) > 10000 {
			t.Errorf("%.40q...: got %.200q", in, got)
		}
	}
	// Nesting the parser accepts is converted, but lists and quotes deeper
	// than fetchMaxIndent stop indenting: no line grows with the depth.
	for _, in := range []string{
		strings.Repeat("<ul><li>item", 120),
		strings.Repeat("<ol><li><p>item</p>", 120),
		strings.Repeat("<blockquote><p>quote</p>", 400),
		strings.Repeat("<ul><li><blockquote>mixed", 100),
	} {
		got := fetchHTMLToMarkdown(in, nil)
		lines := strings.Split(got, "\n")
		longest := 0
		for _, l := range lines {
			longest = max(longest, len(l))
		}
		if longest > 80 || !strings.Contains(got, "item") && !strings.Contains(got, "quote") && !strings.Contains(got, "mixed") {
			t.Errorf("%.40q...: longest line %d bytes: %.300q", in, longest, got)
		}
	}
}

func FuzzFetchHTMLToMarkdown(f *testing.F) {
	for _, s := range []string{
		"<p>hello</p>",
		"<ul><li>a<ol><li>b</li></ol></li></ul>",
		"<table><tr><th>a</th></tr><tr><td><a href='/x'>b</a></td></tr></table>",
		"<pre><code class='language-go'>x\n\ty</code></pre>",
		"<blockquote><ul><li><blockquote>q</blockquote></li></ul></blockquote>",
		"<a href='%zz'>bad</a><img alt='\xff' src='::'>",
		"\xff\xfe<p>\x00</p>",
		"<base href='::bad'><a href='x'>y</a>",
	} {
		f.Add(s)
	}
	base, _ := url.Parse("https://example.com/a/b")
	f.Fuzz(func(t *testing.T, in string) {
		out := fetchHTMLToMarkdown(in, base)
		if !utf8.ValidString(out) {
			t.Fatalf("invalid UTF-8 output for %q", in)
		}
		if strings.Contains(out, "<script") && !strings.Contains(in, "<script") {
			t.Fatalf("output invents markup")
		}
	})
}

func TestFetchSize(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{0: "0 bytes", 1: "1 byte", 512: "512 bytes", 1024: "1 KiB", 1536: "1.5 KiB", 5 << 20: "5 MiB", 3 << 19: "1.5 MiB"} {
		if got := fetchSize(n); got != want {
			t.Errorf("%d: %q, want %q", n, got, want)
		}
	}
}

// TestWebFetchRealPage fetches a real documentation page (see
// testdata/webfetch/README.md) the way a model would: the content comes
// through as Markdown, the page's navigation, scripts and icons do not.
func TestWebFetchRealPage(t *testing.T) {
	t.Parallel()
	page, err := os.ReadFile("testdata/webfetch/rust-book-data-types.html")
	if err != nil {
		t.Fatal(err)
	}
	srv, _ := fetchServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write(page)
	})
	res := fetchCall(t, NewWebFetch(fetchOpen()), context.Background(), map[string]any{"url": srv.URL + "/book/ch03-02-data-types.html", "prompt": "which integer types are there?"})
	text := res.TextOf()
	if res.IsError {
		t.Fatalf("error: %s", text)
	}
	for _, want := range []string{
		"\n\nTitle: Data Types - The Rust Programming Language\n\n",
		"\n## Data Types\n\nEvery value in Rust is of a certain *data type*, which tells Rust",
		"\n| Length | Signed | Unsigned |\n|---|---|---|\n| 8-bit | `i8` | `u8` |\n",
		"\n```rust\nfn main() {\n    let x = 2.0; // f64\n",
		"[two’s complement](https://en.wikipedia.org/wiki/Two%27s_complement)",
		"[“Comparing the Guess to the Secret Number”](" + srv.URL + "/book/ch02-00-guessing-game-tutorial.html#comparing-the-guess-to-the-secret-number)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("result lacks %q", want)
		}
	}
	for _, not := range []string{
		"ch03-03-how-functions-work.html", // the page navigation
		"localStorage",                    // scripts
		"Font Awesome",                    // inline SVG icons
		"&lt;", `\*`, `\_`, `\#`,          // escaping meant for a renderer
	} {
		if strings.Contains(text, not) {
			t.Errorf("result contains %q", not)
		}
	}
	if n := utf8.RuneCountInString(text); n > fetchOutputCap {
		t.Errorf("%d characters, over the output cap", n)
	}
}
