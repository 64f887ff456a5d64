package main

// The multi-node mode (issue 20): PostgreSQL (pgtest, fsync on) and N
// `weft serve` processes on it, a fake OpenAI-compatible model on
// loopback streaming stamped deltas at a steady rate, writers posting
// every session's turns to node 1 and readers following each session's
// event stream on node 2 (node 1 when there is one node), so that the
// deltas measured cross from the node running the turn to another:
//
//	go run ./bench/serveload -nodes 3 -db postgres -sessions 100 -deltas 50 -interval 100ms -steady 20s
//
// It reports the text deltas delivered to the readers per second and the
// latency added between the model emitting a delta and a reader parsing
// it (p50/p99/p99.9), over the steady window.

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
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/weft-run/weft/store/postgres/pgtest"
)

// nodesConfig is the multi-node mode's.
type nodesConfig struct {
	nodes    int
	db       string
	weft     string // the weft binary; "" builds ./cmd/weft
	sessions int
	deltas   int
	interval time.Duration
	steady   time.Duration
}

// fakeOpenAI streams every chat completion as deltas "t<unix nanos> ",
// one every interval, in OpenAI's chunk format.
func fakeOpenAI(deltas int, interval time.Duration, emitted *stampLog) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		fl, _ := w.(http.Flusher)
		chunk := func(delta map[string]any, finish any) {
			b, _ := json.Marshal(map[string]any{"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1754000000,
				"model": "bench", "choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
			fmt.Fprintf(w, "data: %s\n\n", b)
			if fl != nil {
				fl.Flush()
			}
		}
		chunk(map[string]any{"role": "assistant", "content": ""}, nil)
		for k := range deltas {
			if k > 0 {
				select {
				case <-time.After(interval):
				case <-r.Context().Done():
					return
				}
			}
			ts := time.Now().UnixNano()
			emitted.add(ts)
			chunk(map[string]any{"content": "t" + strconv.FormatInt(ts, 10) + " "}, nil)
		}
		chunk(map[string]any{}, "stop")
		b, _ := json.Marshal(map[string]any{"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1754000000,
			"model": "bench", "choices": []any{}, "usage": map[string]any{"prompt_tokens": 10, "completion_tokens": deltas, "total_tokens": 10 + deltas}})
		fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", b)
	})
}

// stampLog is the stamps the fake model emitted.
type stampLog struct {
	mu sync.Mutex
	ts []int64
}

func (l *stampLog) add(ts int64) {
	l.mu.Lock()
	l.ts = append(l.ts, ts)
	l.mu.Unlock()
}

// within counts the stamps in [from, to).
func (l *stampLog) within(from, to time.Time) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, ts := range l.ts {
		if ts >= from.UnixNano() && ts < to.UnixNano() {
			n++
		}
	}
	return n
}

type node struct {
	cmd  *exec.Cmd
	base string
	log  *bytes.Buffer
	mu   *sync.Mutex
}

var listening = regexp.MustCompile(`listening on (http://[^ ]+)`)

// startNode starts `weft serve` and waits for its "listening" line.
func startNode(bin, id, dsn, modelURL, workspace string) (*node, error) {
	cmd := exec.Command(bin, "serve", "--db", dsn, "--addr", "127.0.0.1:0", "--node-id", id,
		"--model", "openai:bench", "--base-url", modelURL+"/v1", "--api-key", "k",
		"--permission-mode", "bypass", "--workspace", workspace, "--rate-limit", "0", "--log-level", "warn", "--no-ui",
		// Only the turns' deltas are measured: no model calls of the
		// turn-end pipeline (memory extraction) besides them.
		"--no-extract-memory", "--no-dream", "--suggestions=false")
	cmd.Env = append(os.Environ(), "WEFT_BEARER_TOKEN=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	n := &node{cmd: cmd, log: &bytes.Buffer{}, mu: &sync.Mutex{}}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			n.mu.Lock()
			n.log.WriteString(sc.Text() + "\n")
			n.mu.Unlock()
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case ready <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case n.base = <-ready:
		return n, nil
	case <-time.After(60 * time.Second):
		n.stop()
		n.mu.Lock()
		defer n.mu.Unlock()
		return nil, fmt.Errorf("node %s did not start:\n%s", id, n.log)
	}
}

func (n *node) stop() {
	if n.cmd.Process == nil {
		return
	}
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = n.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(40 * time.Second):
		_ = syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

// createDatabase makes an empty database on srv and returns its DSN.
func createDatabase(ctx context.Context, srv *pgtest.Server, name string) (string, error) {
	c, err := pgx.Connect(ctx, srv.DSN("postgres"))
	if err != nil {
		return "", err
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "CREATE DATABASE "+name+" TEMPLATE template0 STRATEGY FILE_COPY"); err != nil {
		return "", err
	}
	return srv.DSN(name), nil
}

func runNodes(nc nodesConfig) error {
	if nc.db != "postgres" {
		return errors.New("-nodes needs -db postgres (on SQLite one process holds the database: run without -nodes)")
	}
	if nc.interval <= 0 {
		nc.interval = 100 * time.Millisecond
	}
	if nc.steady <= 0 {
		nc.steady = 20 * time.Second
	}
	tmp, err := os.MkdirTemp("", "serveload-nodes-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin := nc.weft
	if bin == "" {
		bin = filepath.Join(tmp, "weft")
		build := exec.Command("go", "build", "-o", bin, "./cmd/weft")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("building weft (run from the repository root, or give -weft): %w", err)
		}
	}
	srv, err := pgtest.Start(pgtest.Options{})
	if err != nil {
		return err
	}
	defer srv.Stop()
	ctx := context.Background()
	dsn, err := createDatabase(ctx, srv, "serveload")
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	emitted := &stampLog{}
	model := &http.Server{Handler: fakeOpenAI(nc.deltas, nc.interval, emitted)}
	go func() { _ = model.Serve(ln) }()
	defer model.Close()

	var nodes []*node
	defer func() {
		for _, n := range nodes {
			n.stop()
		}
	}()
	for i := range nc.nodes {
		n, err := startNode(bin, fmt.Sprintf("node-%d", i+1), dsn, "http://"+ln.Addr().String(), tmp)
		if err != nil {
			return err
		}
		nodes = append(nodes, n)
	}
	writer, reader := nodes[0], nodes[0]
	if len(nodes) > 1 {
		reader = nodes[1]
	}
	client := newClient()
	m, err := crossNode(client, writer.base, reader.base, nc)
	if err != nil {
		for _, n := range nodes {
			n.mu.Lock()
			fmt.Fprintf(os.Stderr, "--- %s\n%s", n.base, n.log)
			n.mu.Unlock()
		}
		return err
	}
	fmt.Printf("## weft serve on PostgreSQL: %d node(s), writers on node 1, readers on node %d\n\n", nc.nodes, min(2, nc.nodes))
	fmt.Printf("| nodes | sessions | deltas/s per session | emitted deltas/s | delivered deltas/s | added p50 | p99 | p99.9 |\n")
	fmt.Printf("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	rate := float64(time.Second) / float64(nc.interval)
	sent := emitted.within(m.from, m.to)
	fmt.Printf("| %d | %d | %.0f | %.0f | %.0f | %s | %s | %s |\n", nc.nodes, nc.sessions, rate,
		float64(sent)/m.elapsed.Seconds(), float64(m.events)/m.elapsed.Seconds(), pct(m.lat, 50), pct(m.lat, 99), pct(m.lat, 99.9))
	if int64(sent) != m.events {
		fmt.Printf("\n%d deltas emitted in the window, %d delivered to the readers\n", sent, m.events)
	}
	return nil
}

// crossNode runs every session's turns back to back on the writer node
// and follows each session's events on the reader node, counting the
// deltas emitted in the steady window (after one turn of ramp, the
// sessions' first turns spread over it) as the readers parse them.
func crossNode(client *http.Client, writerBase, readerBase string, nc nodesConfig) (measured, error) {
	turn := time.Duration(nc.deltas) * nc.interval
	ids := make([]string, nc.sessions)
	for i := range ids {
		id, err := createSession(client, writerBase)
		if err != nil {
			return measured{}, err
		}
		ids[i] = id
	}
	start := time.Now().Add(time.Second) // readers connect first
	from, to := start.Add(turn), start.Add(turn+nc.steady)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var total atomic.Int64
	var mu sync.Mutex
	var all []time.Duration
	var readers, writers sync.WaitGroup
	errs := make(chan error, 2*len(ids))
	for _, id := range ids {
		req, err := http.NewRequestWithContext(ctx, "GET", readerBase+"/v1/sessions/"+id+"/events?after=0", nil)
		if err != nil {
			return measured{}, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return measured{}, err
		}
		if resp.StatusCode != 200 {
			resp.Body.Close()
			return measured{}, fmt.Errorf("follow %s: %d", id, resp.StatusCode)
		}
		readers.Go(func() {
			defer resp.Body.Close()
			var lat []time.Duration
			var k int64
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(make([]byte, 64<<10), 1<<20)
			var typ string
			for sc.Scan() {
				line := sc.Bytes()
				switch {
				case bytes.HasPrefix(line, []byte("event: ")):
					typ = string(line[7:])
				case bytes.HasPrefix(line, []byte("data: ")) && typ == "text_delta":
					k += int64(stampWindow(line[6:], time.Now().UnixNano(), from.UnixNano(), to.UnixNano(), &lat))
				}
			}
			total.Add(k)
			mu.Lock()
			all = append(all, lat...)
			mu.Unlock()
		})
	}
	for i, id := range ids {
		writers.Go(func() {
			time.Sleep(time.Until(start.Add(turn * time.Duration(i) / time.Duration(len(ids)))))
			for time.Now().Before(to) {
				resp, err := post(client, writerBase+"/v1/sessions/"+id+"/messages", map[string]any{"prompt": "go"})
				if err != nil {
					errs <- err
					return
				}
				if resp.StatusCode != 200 {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					errs <- fmt.Errorf("messages: %d %s", resp.StatusCode, b)
					return
				}
				_, err = readSSE(resp.Body, nil)
				resp.Body.Close()
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	writers.Wait()
	time.Sleep(time.Second) // the last deltas reach the readers
	cancel()
	readers.Wait()
	select {
	case err := <-errs:
		return measured{}, err
	default:
	}
	return measured{total.Load(), all, nc.steady, from, to}, nil
}
