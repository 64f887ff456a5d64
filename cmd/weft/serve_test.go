package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/weft-run/weft/internal/sse"
	"github.com/weft-run/weft/llm/llmtest"
)

func TestServeSettingsPrecedence(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	lines := write("weft.conf", `
# a comment
addr = 0.0.0.0:9000
rate_limit: 10
keepalive = 5s   # trailing comment
bearer-token = "from file # not a comment"
cors = http://a.example, http://b.example
`)
	jsonConf := write("weft.json", `{"addr": "127.0.0.1:9100", "rate-limit": 7, "cors": ["http://c.example", "http://d.example"], "permission_mode": "plan"}`)
	unknown := write("bad.conf", "adress = x\n")
	badValue := write("badvalue.conf", "rate-limit = lots\n")

	type want struct {
		addr, token, cors, mode string
		rateLimit               int
		keepalive               time.Duration
	}
	defaults := want{addr: "127.0.0.1:8080", // mode "": the settings files decide, else default
		rateLimit: 60, keepalive: 15 * time.Second}
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    want
		wantErr string
	}{
		{name: "defaults", want: defaults},
		{name: "file", args: []string{"--config", lines},
			want: want{addr: "0.0.0.0:9000", token: "from file # not a comment", cors: "http://a.example, http://b.example", rateLimit: 10, keepalive: 5 * time.Second}},
		{name: "env beats file", args: []string{"--config", lines}, env: map[string]string{"WEFT_RATE_LIMIT": "20", "WEFT_BEARER_TOKEN": "env-token"},
			want: want{addr: "0.0.0.0:9000", token: "env-token", cors: "http://a.example, http://b.example", rateLimit: 20, keepalive: 5 * time.Second}},
		{name: "flag beats env", args: []string{"--config", lines, "--rate-limit", "30", "--addr", ":1"}, env: map[string]string{"WEFT_RATE_LIMIT": "20", "WEFT_ADDR": "env:2"},
			want: want{addr: ":1", token: "from file # not a comment", cors: "http://a.example, http://b.example", rateLimit: 30, keepalive: 5 * time.Second}},
		{name: "json file from WEFT_CONFIG", env: map[string]string{"WEFT_CONFIG": jsonConf},
			want: want{addr: "127.0.0.1:9100", cors: "http://c.example,http://d.example", mode: "plan", rateLimit: 7, keepalive: 15 * time.Second}},
		{name: "unknown setting", args: []string{"--config", unknown}, wantErr: `unknown setting "adress"`},
		{name: "bad value in the file", args: []string{"--config", badValue}, wantErr: "rate-limit"},
		{name: "bad value in the env", env: map[string]string{"WEFT_KEEPALIVE": "often"}, wantErr: "WEFT_KEEPALIVE"},
		{name: "missing file", args: []string{"--config", filepath.Join(dir, "nope")}, wantErr: "config"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var f serveFlags
			fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
			f.register(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			err := f.load(fs, func(k string) string { return tc.env[k] })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one mentioning %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := want{addr: f.addr, token: f.bearerToken, cors: f.cors, mode: f.permissionMode, rateLimit: f.rateLimit, keepalive: f.keepalive}
			if got != tc.want {
				t.Fatalf("settings %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestServeModelSpec(t *testing.T) {
	t.Parallel()
	tests := []struct {
		model, provider string
		env             map[string]string
		want, wantErr   string
	}{
		{want: ""},
		{env: map[string]string{"OPENAI_API_KEY": "k"}, want: "openai:gpt-4.1"},
		{model: "anthropic:claude-sonnet-4-5", want: "anthropic:claude-sonnet-4-5"},
		{model: "llama3.3", provider: "ollama", want: "ollama:llama3.3"},
		{model: "llama3.3:70b", provider: "ollama", want: "ollama:llama3.3:70b"},
		{model: "ollama:llama3.3", provider: "ollama", want: "ollama:llama3.3"},
		{provider: "ollama", wantErr: "--provider needs --model"},
	}
	for _, tc := range tests {
		f := serveFlags{provider: tc.provider}
		f.model = tc.model
		got, err := f.modelSpec(func(k string) string { return tc.env[k] })
		if (err != nil) != (tc.wantErr != "") || got != tc.want || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("modelSpec(%q, %q) = %q, %v; want %q, %q", tc.model, tc.provider, got, err, tc.want, tc.wantErr)
		}
	}
}

// serveProc is a running weft serve.
type serveProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	url    string
	mu     sync.Mutex
	stderr strings.Builder
	done   chan struct{}
}

// startServe starts the binary and waits for it to listen.
func startServe(t *testing.T, env []string, args ...string) *serveProc {
	t.Helper()
	return startServeIn(t, "", env, args...)
}

// startServeIn is startServe in working directory dir ("": the test's).
func startServeIn(t *testing.T, dir string, env []string, args ...string) *serveProc {
	t.Helper()
	cmd := exec.Command(weftBinary(t), append([]string{"serve", "--addr", "127.0.0.1:0"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, turnEndOff...), env...)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &serveProc{t: t, cmd: cmd, done: make(chan struct{})}
	listening := make(chan string, 1)
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.stderr.WriteString(line + "\n")
			p.mu.Unlock()
			if _, rest, ok := strings.Cut(line, "listening on "); ok {
				addr, _, _ := strings.Cut(rest, " ")
				listening <- addr
			}
		}
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	select {
	case p.url = <-listening:
	case <-p.done:
		_ = cmd.Wait()
		t.Fatalf("weft serve exited before listening:\n%s", p.log())
	case <-time.After(20 * time.Second):
		t.Fatalf("weft serve did not start:\n%s", p.log())
	}
	return p
}

func (p *serveProc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

// stop sends SIGTERM and checks that weft exits 0 within the timeout.
func (p *serveProc) stop() {
	p.t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		p.t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { <-p.done; exited <- p.cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil {
			p.t.Fatalf("weft serve exited with %v after SIGTERM:\n%s", err, p.log())
		}
	case <-time.After(20 * time.Second):
		p.t.Fatalf("weft serve did not stop on SIGTERM:\n%s", p.log())
	}
	if !strings.Contains(p.log(), "weft serve: stopped") {
		p.t.Fatalf("no clean stop in the log:\n%s", p.log())
	}
}

func (p *serveProc) request(method, path, body string, header ...string) *http.Response {
	p.t.Helper()
	req, err := http.NewRequest(method, p.url+path, strings.NewReader(body))
	if err != nil {
		p.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		p.t.Fatalf("%s %s: %v\n%s", method, path, err, p.log())
	}
	return resp
}

func (p *serveProc) expect(method, path, body string, status int, header ...string) map[string]any {
	p.t.Helper()
	resp := p.request(method, path, body, header...)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != status {
		p.t.Fatalf("%s %s: %d, want %d: %s", method, path, resp.StatusCode, status, raw)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		p.t.Fatalf("%s %s: %v: %s", method, path, err, raw)
	}
	return m
}

type frame struct{ id, event, data string }

// frames reads an SSE response until stop returns true or the stream ends.
func frames(t *testing.T, resp *http.Response, stop func(frame) bool) ([]frame, error) {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
		raw, _ := io.ReadAll(resp.Body)
		t.Fatalf("not an event stream: %d %s: %s", resp.StatusCode, ct, raw)
	}
	rd := sse.NewReader(resp.Body)
	var out []frame
	for {
		ev, err := rd.Next()
		if err != nil {
			return out, err
		}
		f := frame{string(ev.ID), string(ev.Name), string(ev.Data)}
		out = append(out, f)
		if stop != nil && stop(f) {
			return out, nil
		}
	}
}

func eventNames(fs []frame) string {
	var names []string
	for _, f := range fs {
		names = append(names, f.event)
	}
	return strings.Join(names, " ")
}

// TestServeWithoutKey: weft serve starts with no model and no key, serves,
// explains a turn it cannot run, and stops cleanly on SIGTERM.
func TestServeWithoutKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := startServe(t, nil, "--db", filepath.Join(dir, "weft.db"), "--workspace", dir)
	if !strings.Contains(p.log(), "no default model") {
		t.Errorf("no warning about the missing model:\n%s", p.log())
	}
	if m := p.expect("GET", "/v1/health", "", 200); m["status"] != "ok" {
		t.Fatalf("health %v", m)
	}
	if m := p.expect("POST", "/v1/sessions", `{"session_id":"first"}`, 201); m["session_id"] != "first" {
		t.Fatalf("create %v", m)
	}
	p.expect("GET", "/v1/sessions/first", "", 200)
	tools := p.expect("GET", "/v1/tools", "", 200)
	if n, _ := tools["count"].(float64); n < 6 {
		t.Fatalf("tools %v", tools)
	}
	resp := p.request("POST", "/v1/sessions/first/messages", `{"prompt":"hello"}`)
	fs, err := frames(t, resp, nil)
	resp.Body.Close()
	if !errors.Is(err, io.EOF) || eventNames(fs) != "user_message message_consumed error done" || !strings.Contains(fs[2].data, "no model") {
		t.Fatalf("turn without a model: %v %q %v", err, eventNames(fs), fs)
	}
	p.stop()
	if _, err := os.Stat(filepath.Join(dir, "weft.db")); err != nil {
		t.Fatal(err)
	}
}

// TestServeGracefulRestart: settings from a config file and the
// environment; SIGTERM in the middle of a turn ends it at a safe point
// (its stream gets done and ends), weft exits 0, and a new weft on the same
// database replays the session and carries its conversation on.
func TestServeGracefulRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fake := llmtest.NewOpenAI(t)
	conf := filepath.Join(dir, "weft.conf")
	if err := os.WriteFile(conf, []byte("model = openai:gpt-4.1\nbase-url = "+fake.URL+"/v1\napi-key = k\nbearer-token = file-token\npermission-mode = bypass\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "weft.db")
	env := []string{"WEFT_BEARER_TOKEN=env-token", "WEFT_CONFIG=" + conf}
	auth := []string{"Authorization", "Bearer env-token"}

	p := startServe(t, env, "--db", db, "--workspace", dir, "--keepalive", "1s")
	p.expect("GET", "/v1/tools", "", 403, "Authorization", "Bearer file-token")
	p.expect("POST", "/v1/sessions", `{"session_id":"s"}`, 201, auth...)

	chunks := make([]string, 400)
	for i := range chunks {
		chunks[i] = "word "
	}
	fake.Push(llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock(chunks...)}, Delay: 10 * time.Millisecond})
	resp := p.request("POST", "/v1/sessions/s/messages", `{"prompt":"talk for a while"}`, auth...)
	defer resp.Body.Close()
	var turn []frame
	var turnErr error
	got := make(chan struct{})
	go func() {
		defer close(got)
		turn, turnErr = frames(t, resp, nil)
	}()
	waitForRequests(t, fake, 1)
	time.Sleep(50 * time.Millisecond) // a few deltas in
	p.stop()
	<-got
	if !errors.Is(turnErr, io.EOF) || len(turn) == 0 {
		t.Fatalf("turn stream: %v after %q", turnErr, eventNames(turn))
	}
	last := turn[len(turn)-1]
	if last.event != "done" || !strings.Contains(last.data, `"stop_reason":"cancelled"`) {
		t.Fatalf("the interrupted turn ends with %+v (%s)\n%s", last, eventNames(turn), p.log())
	}

	p = startServe(t, env, "--db", db, "--workspace", dir)
	resp2 := p.request("GET", "/v1/sessions/s/events?after=0&token=env-token", "")
	replay, err := frames(t, resp2, func(f frame) bool { return f.event == "done" })
	resp2.Body.Close()
	if err != nil || len(replay) != len(turn) {
		t.Fatalf("replay after restart: %v, %d frames, want %d", err, len(replay), len(turn))
	}
	for i := range turn {
		if replay[i] != turn[i] {
			t.Fatalf("frame %d after restart %+v, want %+v", i, replay[i], turn[i])
		}
	}
	fake.Push(llmtest.Text("Carrying on."))
	resp3 := p.request("POST", "/v1/sessions/s/messages", `{"prompt":"go on"}`, auth...)
	next, err := frames(t, resp3, nil)
	resp3.Body.Close()
	if !errors.Is(err, io.EOF) || next[0].id != strconv.Itoa(len(turn)+1) || next[len(next)-1].event != "done" {
		t.Fatalf("next turn after restart: %v %+v", err, next)
	}
	body := string(fake.LastRequest().Body)
	if !strings.Contains(body, "talk for a while") || !strings.Contains(body, "go on") {
		t.Fatalf("the model request after the restart lacks the history: %s", body)
	}
	p.stop()
	if strings.Contains(p.log(), "env-token") || strings.Contains(p.log(), "file-token") {
		t.Fatalf("a token is in the log:\n%s", p.log())
	}
}

func waitForRequests(t *testing.T, fake *llmtest.Server, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(fake.Requests()) < n {
		if time.Now().After(deadline) {
			t.Fatalf("the model got %d requests, want %d", len(fake.Requests()), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestServeLocalServerGuards: the flags of the local server's defences
// reach it: --allowed-hosts, --body-timeout, --max-conns, and the listener
// that answers net/http's own errors with the error JSON.
func TestServeLocalServerGuards(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := startServe(t, nil, "--db", filepath.Join(dir, "weft.db"), "--workspace", dir,
		"--allowed-hosts", "weft.test", "--body-timeout", "300ms", "--max-conns", "4", "--cors", "*")
	if !strings.Contains(p.log(), "any web page") {
		t.Errorf("no warning about --cors '*' without a token:\n%s", p.log())
	}
	addr := strings.TrimPrefix(p.url, "http://")
	raw := func(req string) (string, time.Duration) {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		start := time.Now()
		_ = c.SetDeadline(start.Add(10 * time.Second))
		if _, err := io.WriteString(c, req); err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(c)
		return string(b), time.Since(start)
	}
	for _, tc := range []struct{ host, status string }{
		{"weft.test:80", "200 OK"}, {"localhost", "200 OK"}, {"evil.example", "403 Forbidden"},
	} {
		got, _ := raw("GET /v1/tools HTTP/1.1\r\nHost: " + tc.host + "\r\nConnection: close\r\n\r\n")
		if !strings.HasPrefix(got, "HTTP/1.1 "+tc.status) {
			t.Errorf("Host %s: %.80q", tc.host, got)
		}
	}
	if got, _ := raw("GARBAGE\r\n\r\n"); !strings.HasPrefix(got, "HTTP/1.1 400 ") || !strings.Contains(got, `"type":"invalid_request_error"`) {
		t.Errorf("garbage: %q", got)
	}
	got, took := raw("POST /v1/sessions HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\nContent-Length: 50\r\n\r\n{")
	if !strings.HasPrefix(got, "HTTP/1.1 408 ") || took > 3*time.Second {
		t.Errorf("half a body: %q after %s", got, took)
	}
	// Four connections the server admitted, held open without a request.
	// The connections of the requests above may not all be released yet
	// (under load, their goroutines finish late): a connection refused for
	// them gets its 503 at once, where an admitted one waits for its
	// request, so a refused one is replaced until four are held.
	var held []net.Conn
	deadline := time.Now().Add(5 * time.Second)
	for len(held) < 4 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		var b [1]byte
		if _, err := c.Read(b[:]); !errors.Is(err, os.ErrDeadlineExceeded) {
			c.Close()
			if time.Now().After(deadline) {
				t.Fatalf("no fourth connection admitted: %v", err)
			}
			time.Sleep(50 * time.Millisecond)
			continue
		}
		_ = c.SetReadDeadline(time.Time{})
		held = append(held, c)
	}
	deadline = time.Now().Add(5 * time.Second)
	for {
		got, _ := raw("GET /v1/health HTTP/1.1\r\nHost: " + addr + "\r\nConnection: close\r\n\r\n")
		if strings.HasPrefix(got, "HTTP/1.1 503 ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a fifth connection: %q", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, c := range held {
		c.Close()
	}
	p.stop()
}
