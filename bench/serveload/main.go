// Command serveload measures weft serve end to end on loopback: the real
// HTTP handler, runtime, event log and SQLite store, with an in-process
// model that streams N text deltas per turn, each stamped with the time the
// provider emitted it, so that the client can measure the latency weft adds
// between a provider delta and the SSE frame that carries it.
//
//	go run ./bench/serveload -sessions 1,100,1000 -deltas 50 -readers 1,100,1000 -idle 1000
//
// (a) concurrent streaming sessions: delivered events/s, added latency
// p50/p99/p99.9 and the CPU used (in cores: CPU seconds per second of
// wall time). Latency is measured twice: by the client, as it parses the
// frame, and by the server process, as the frame is flushed to the
// connection (writes.go). The first includes the kernel's delivery and the
// client process's own scheduling, which on a shared machine is the load
// generator competing with the server; the second is the latency weft
// itself adds; (b) one session fanned out to R readers of its event stream:
// delivered events/s; (c) memory per idle session; (d) durable event
// appends per second.
//
// With -steady DURATION, (a) runs in a steady state instead of one burst:
// each session runs turns back to back, the first turns start spread over
// one turn's time, and only the deltas emitted in a window of DURATION
// after that ramp are measured.
//
// With -split the SSE clients of (a) and (b) run in a second process (this
// program re-executed with -clients-only), so that a CPU profile
// (-cpuprofile) and the CPU column separate the server's work from the
// load generator's. Both processes share the machine's cores either way.
//
// Each row of (a) is measured twice in the same run, unless -relay=false:
// against weft, and against a bare relay (relay.go: a minimal Go SSE
// server fanning out the same fake deltas with no store and no engine),
// so that weft's server CPU per delivered delta is reported as a ratio
// to the relay's.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/weft-run/weft/event"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/server"
	"github.com/weft-run/weft/session"
	"github.com/weft-run/weft/store/sqlite"
)

// stamped is a provider that streams deltas carrying their emission time.
type stamped struct {
	deltas   int
	interval time.Duration // between deltas; 0 emits the turn in one burst
}

func (stamped) Name() string { return "stamped" }

func (p stamped) Stream(ctx context.Context, req *llm.Request) iter.Seq[llm.Event] {
	return func(yield func(llm.Event) bool) {
		f := llm.NewFramer(yield)
		i, ok := f.Start(llm.Block{Type: llm.BlockText})
		if !ok {
			return
		}
		for k := range p.deltas {
			if p.interval > 0 && k > 0 {
				time.Sleep(p.interval)
			}
			if ctx.Err() != nil {
				f.Fail("stamped", ctx.Err())
				return
			}
			if !f.Delta(i, "t"+strconv.FormatInt(time.Now().UnixNano(), 10)+" ") {
				return
			}
		}
		f.Stop(i)
		f.SetUsage(llm.Usage{InputTokens: 10, OutputTokens: p.deltas})
		f.Finish(llm.Outcome{Status: llm.StatusCompleted, StopReason: llm.StopEndTurn})
	}
}

type resolver struct{ p llm.Provider }

func (r resolver) Resolve(string) (llm.Provider, llm.ModelInfo, error) {
	return r.p, llm.ModelInfo{ID: "stamped", Provider: "stamped", MaxOutputTokens: 1000}, nil
}

// config is what both roles need to know of a run.
type config struct {
	sessions []int
	deltas   int
	interval time.Duration
	readers  []int
	idle     int
	split    bool
	profile  string
	steady   time.Duration
	relay    bool
}

func main() {
	sessions := flag.String("sessions", "1,100,1000", "concurrent streaming sessions to measure, comma-separated")
	deltas := flag.Int("deltas", 50, "text deltas per turn")
	readers := flag.String("readers", "1,100,1000", "readers of one session's stream, comma-separated")
	idle := flag.Int("idle", 1000, "idle sessions for the memory measurement (0 skips it)")
	interval := flag.Duration("interval", 0, "pause between a turn's deltas (a model streams at 20-100 tokens/s; 0 sends each turn in one burst)")
	split := flag.Bool("split", false, "run the SSE clients of (a) and (b) in a second process")
	profile := flag.String("cpuprofile", "", "write a CPU profile of (a) and (b) to this file (with -split: the server's; the clients' goes to FILE.clients)")
	clientsOnly := flag.String("clients-only", "", "internal: run only the clients of (a) and (b) against this base URL (what -split starts)")
	steady := flag.Duration("steady", 0, "measure (a) in a steady state: sessions start spread over one turn, run turns back to back, and only this window after the ramp is measured (0: every session runs one turn, all starting at once)")
	withRelay := flag.Bool("relay", true, "measure each row of (a) against the bare relay too (relay.go), for the CPU ratio")
	nodes := flag.Int("nodes", 0, "start PostgreSQL and this many weft serve processes, writers on node 1 and readers on node 2 (nodes.go); 0: the in-process measurements")
	db := flag.String("db", "postgres", "with -nodes: the store (postgres)")
	weftBin := flag.String("weft", "", "with -nodes: the weft binary (default: go build ./cmd/weft)")
	flag.Parse()
	if *nodes > 0 {
		n := 100
		if ss := ints(*sessions); len(ss) > 0 {
			n = ss[0]
		}
		if err := runNodes(nodesConfig{nodes: *nodes, db: *db, weft: *weftBin, sessions: n, deltas: *deltas,
			interval: *interval, steady: *steady}); err != nil {
			fmt.Fprintln(os.Stderr, "serveload:", err)
			os.Exit(1)
		}
		return
	}
	cfg := config{sessions: ints(*sessions), deltas: *deltas, interval: *interval, readers: ints(*readers),
		idle: *idle, split: *split, profile: *profile, steady: *steady, relay: *withRelay}
	var err error
	if *clientsOnly != "" {
		err = runClients(cfg, *clientsOnly)
	} else {
		err = run(cfg)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "serveload:", err)
		os.Exit(1)
	}
}

func ints(s string) []int {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	return out
}

// cpuPath serves the server process's CPU time to a client process.
const cpuPath = "/serveload/cpu"

// cpuTime is the CPU time (user and system) this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func run(cfg config) error {
	dir, err := os.MkdirTemp("", "serveload")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(dir, "weft.db"), sqlite.Options{})
	if err != nil {
		return err
	}
	defer db.Close()
	rt, err := session.New(session.Config{Store: db, Models: resolver{stamped{cfg.deltas, cfg.interval}}, DefaultModel: "stamped:m",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return err
	}
	defer rt.Shutdown(ctx)
	h := server.New(server.Config{Runtime: rt, RateLimit: -1, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}).Handler()
	mux := http.NewServeMux()
	mux.HandleFunc(cpuPath, func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, int64(cpuTime()))
	})
	var writes writeLog
	mux.HandleFunc(writesPath, writes.serve)
	mux.Handle("/", writes.wrap(h))
	(&relay{deltas: cfg.deltas, interval: cfg.interval}).register(mux, writes.wrap)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(ln)
	defer srv.Close()
	base := "http://" + ln.Addr().String()
	client := newClient()

	stopProfile, err := startProfile(cfg.profile)
	if err != nil {
		return err
	}
	if cfg.split {
		err = spawnClients(cfg, base)
	} else {
		err = clients(cfg, client, base, nil)
	}
	stopProfile()
	if err != nil {
		return err
	}

	if cfg.idle > 0 {
		heap, rss, err := idleMemory(client, base, cfg.idle)
		if err != nil {
			return err
		}
		fmt.Printf("\n(c) per idle session (%d sessions, each with one finished turn): heap %.1f KiB, RSS %.1f KiB\n", cfg.idle, heap/1024, rss/1024)
	}

	fmt.Printf("\n(d) durable event appends (SQLite, 2 s each)\n")
	for _, writers := range []int{1, 16} {
		rate, err := appends(db, writers)
		if err != nil {
			return err
		}
		fmt.Printf("%3d writers, 1 event per append: %8.0f events/s\n", writers, rate)
	}
	return nil
}

func newClient() *http.Client {
	return &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 10000, MaxConnsPerHost: 0}}
}

func startProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// spawnClients re-executes this program with -clients-only and waits for
// it; its report goes to this process's stdout.
func spawnClients(cfg config, base string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	args := []string{"-clients-only", base,
		"-sessions", joinInts(cfg.sessions), "-readers", joinInts(cfg.readers),
		"-deltas", strconv.Itoa(cfg.deltas), "-interval", cfg.interval.String(), "-steady", cfg.steady.String(),
		"-relay=" + strconv.FormatBool(cfg.relay)}
	if cfg.profile != "" {
		args = append(args, "-cpuprofile", cfg.profile+".clients")
	}
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("client process: %w", err)
	}
	return nil
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// runClients is the client process of -split.
func runClients(cfg config, base string) error {
	stopProfile, err := startProfile(cfg.profile)
	if err != nil {
		return err
	}
	defer stopProfile()
	client := newClient()
	serverCPU := func() (time.Duration, error) {
		resp, err := client.Get(base + cpuPath)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return 0, err
		}
		n, err := strconv.ParseInt(string(b), 10, 64)
		return time.Duration(n), err
	}
	return clients(cfg, client, base, serverCPU)
}

// settle waits until the server is idle (under a tenth of a core for a
// quarter of a second), so that one measurement does not pay for the
// previous one's work still in progress: events are delivered before they
// are stored, and a burst leaves the store catching up. It returns how long
// that took.
func settle(serverCPU func() (time.Duration, error)) (time.Duration, error) {
	const tick = 250 * time.Millisecond
	start := time.Now()
	prev, err := serverCPU()
	if err != nil {
		return 0, err
	}
	for time.Since(start) < time.Minute {
		time.Sleep(tick)
		cur, err := serverCPU()
		if err != nil {
			return 0, err
		}
		if cur-prev < tick/10 {
			return time.Since(start) - tick, nil
		}
		prev = cur
	}
	return time.Since(start), fmt.Errorf("the server was still busy after a minute")
}

// clients runs (a) and (b). serverCPU is nil when the server runs in this
// process.
func clients(cfg config, client *http.Client, base string, serverCPU func() (time.Duration, error)) error {
	busy := serverCPU
	if busy == nil {
		busy = func() (time.Duration, error) { return cpuTime(), nil }
	}
	var settled []string
	fmt.Printf("(a) concurrent streaming sessions, %d deltas per turn, %s between deltas\n", cfg.deltas, cfg.interval)
	if cfg.steady > 0 {
		fmt.Printf("    steady state: turns back to back, starts spread over one turn, %s measured after the ramp (events/s: text deltas)\n", cfg.steady)
	}
	fmt.Println("    added latency from provider delta: at the client (as it parses the frame), and at the server (as the frame is flushed to the connection)")
	head := fmt.Sprintf("%6s %10s %10s %11s %11s %11s %11s %11s %11s", "server", "sessions", "events/s", "client p50", "client p99", "client p99.9", "server p50", "server p99", "server p99.9")
	if serverCPU == nil {
		fmt.Printf("%s %12s %10s\n", head, "cpu (cores)", "µs/delta")
	} else {
		fmt.Printf("%s %12s %12s %10s\n", head, "server cores", "client cores", "µs/delta")
	}
	servers := []string{"weft"}
	if cfg.relay {
		servers = append(servers, "relay")
	}
	for _, n := range cfg.sessions {
		perDelta := map[string]float64{}
		for _, server := range servers {
			prefix := ""
			if server == "relay" {
				prefix = relayPrefix
			}
			r, err := measureRow(cfg, client, base, prefix, n, serverCPU)
			if err != nil {
				return err
			}
			round := func(d time.Duration) string { return d.Round(10 * time.Microsecond).String() }
			row := fmt.Sprintf("%6s %10d %10.0f %11s %11s %11s %11s %11s %11s", server, n, r.rate,
				pct(r.m.lat, 50), pct(r.m.lat, 99), pct(r.m.lat, 99.9), round(r.w50), round(r.w99), round(r.w999))
			us := "-"
			if r.deltas > 0 {
				perDelta[server] = r.serverCPU.Seconds() / float64(r.deltas) * 1e6
				us = fmt.Sprintf("%.1f", perDelta[server])
			}
			if serverCPU == nil {
				fmt.Printf("%s %12.2f %10s\n", row, r.clientCores, us)
			} else {
				fmt.Printf("%s %12.2f %12.2f %10s\n", row, r.serverCores, r.clientCores, us)
			}
			wait, err := settle(busy)
			if err != nil {
				return err
			}
			settled = append(settled, fmt.Sprintf("%s %d sessions %s", server, n, wait.Round(10*time.Millisecond)))
		}
		if w, b := perDelta["weft"], perDelta["relay"]; w > 0 && b > 0 {
			what := "server CPU"
			if serverCPU == nil {
				what = "CPU (server and clients: use -split to separate them)"
			}
			fmt.Printf("%6s %10d %s per delivered delta, weft/relay: %.2fx\n", "ratio", n, what, w/b)
		}
	}
	if len(settled) > 0 {
		fmt.Printf("server busy after the last stream ended (storing what it delivered): %s\n", strings.Join(settled, ", "))
	}

	fmt.Printf("\n(b) one session fanned out, %d deltas per turn\n", cfg.deltas)
	fmt.Printf("%10s %16s\n", "readers", "delivered ev/s")
	for _, r := range cfg.readers {
		rate, err := fanout(client, base, r)
		if err != nil {
			return err
		}
		fmt.Printf("%10d %16.0f\n", r, rate)
	}
	return nil
}

// row is one measurement of (a).
type row struct {
	m                        measured
	rate                     float64 // events/s
	deltas                   int     // text deltas delivered (counted by the clients)
	w50, w99, w999           time.Duration
	serverCPU                time.Duration // the server's CPU over the row (in one process: all of it, clients included)
	serverCores, clientCores float64
}

// measureRow runs one row of (a) against the server at base+prefix.
func measureRow(cfg config, client *http.Client, base, prefix string, n int, serverCPU func() (time.Duration, error)) (row, error) {
	var s0, s1, c0, c1 time.Duration
	var cpuErr error
	mark := func(server, client *time.Duration) {
		if serverCPU != nil {
			var err error
			if *server, err = serverCPU(); err != nil {
				cpuErr = err
			}
		}
		*client = cpuTime()
	}
	var (
		m   measured
		err error
	)
	if cfg.steady > 0 {
		m, err = steadySessions(client, base+prefix, n, cfg, func() { mark(&s0, &c0) }, func() { mark(&s1, &c1) })
	} else {
		// CPU is counted from when the turns start (after the sessions
		// are created) until the last stream ends.
		m, err = streamSessions(client, base+prefix, n, func() { mark(&s0, &c0) })
		mark(&s1, &c1)
	}
	if err == nil {
		err = cpuErr
	}
	if err != nil {
		return row{}, err
	}
	r := row{m: m, rate: float64(m.events) / m.elapsed.Seconds(), deltas: len(m.lat)}
	if r.w50, r.w99, r.w999, err = serverWrites(client, base, m.from, m.to); err != nil {
		return row{}, err
	}
	r.clientCores = float64(c1-c0) / float64(m.elapsed)
	r.serverCPU = c1 - c0
	if serverCPU != nil {
		r.serverCPU = s1 - s0
		r.serverCores = float64(s1-s0) / float64(m.elapsed)
	}
	return r, nil
}

// appends measures durable single-event appends from concurrent writers,
// each on its own session, as concurrent turns append.
func appends(db *sqlite.DB, writers int) (float64, error) {
	ctx := context.Background()
	var total atomic.Int64
	var wg sync.WaitGroup
	deadline := time.Now().Add(2 * time.Second)
	errs := make(chan error, writers)
	start := time.Now()
	for w := range writers {
		id := fmt.Sprintf("appends-%d-%d", writers, w)
		if _, err := db.CreateSession(ctx, record.Session{ID: id}); err != nil {
			return 0, err
		}
		wg.Go(func() {
			for time.Now().Before(deadline) {
				if _, err := db.AppendEvents(ctx, id, event.Event{Type: "text_delta", Data: json.RawMessage(`{"text":"hello "}`)}); err != nil {
					errs <- err
					return
				}
				total.Add(1)
			}
		})
	}
	wg.Wait()
	select {
	case err := <-errs:
		return 0, err
	default:
	}
	return float64(total.Load()) / time.Since(start).Seconds(), nil
}

// rss reads the process's resident set size.
func rss() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize())
}

func post(client *http.Client, url string, body any) (*http.Response, error) {
	b, _ := json.Marshal(body)
	return client.Post(url, "application/json", bytes.NewReader(b))
}

func createSession(client *http.Client, base string) (string, error) {
	resp, err := post(client, base+"/v1/sessions", map[string]any{})
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var s struct {
		ID string `json:"session_id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil || resp.StatusCode != 201 {
		return "", fmt.Errorf("create session: %d %v", resp.StatusCode, err)
	}
	return s.ID, nil
}

// readSSE reads frames until done, calling fn with each event's type and
// data; it returns the number of frames.
func readSSE(r io.Reader, fn func(typ string, data []byte)) (int, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var typ string
	n := 0
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case bytes.HasPrefix(line, []byte("event: ")):
			typ = string(line[7:])
		case bytes.HasPrefix(line, []byte("data: ")):
			n++
			if fn != nil {
				fn(typ, line[6:])
			}
			if typ == "done" {
				return n, nil
			}
		}
	}
	return n, fmt.Errorf("stream ended before done: %v", sc.Err())
}

// stampLatency records, for every provider timestamp in a text_delta
// payload (a loaded server may carry several deltas in one frame), how long
// ago it was emitted.
func stampLatency(data []byte, now int64, lat *[]time.Duration) {
	for _, ts := range stamps(data) {
		*lat = append(*lat, time.Duration(now-ts))
	}
}

// stamps returns the provider timestamps in a text_delta payload.
func stamps(data []byte) []int64 {
	var d struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(data, &d) != nil {
		return nil
	}
	var out []int64
	for _, f := range strings.Fields(d.Text) {
		if ts, err := strconv.ParseInt(strings.TrimPrefix(f, "t"), 10, 64); err == nil {
			out = append(out, ts)
		}
	}
	return out
}

// streamSessions runs one turn on each of n new sessions at once, calling
// started just before the turns start.
func streamSessions(client *http.Client, base string, n int, started func()) (measured, error) {
	ids := make([]string, n)
	for i := range ids {
		id, err := createSession(client, base)
		if err != nil {
			return measured{}, err
		}
		ids[i] = id
	}
	var total atomic.Int64
	var mu sync.Mutex
	var all []time.Duration
	var wg sync.WaitGroup
	errs := make(chan error, n)
	started()
	start := time.Now()
	for _, id := range ids {
		wg.Go(func() {
			resp, err := post(client, base+"/v1/sessions/"+id+"/messages", map[string]any{"prompt": "go"})
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode != 200 {
				b, _ := io.ReadAll(resp.Body)
				errs <- fmt.Errorf("messages: %d %s", resp.StatusCode, b)
				return
			}
			var lat []time.Duration
			k, err := readSSE(resp.Body, func(typ string, data []byte) {
				if typ == "text_delta" {
					stampLatency(data, time.Now().UnixNano(), &lat)
				}
			})
			if err != nil {
				errs <- err
				return
			}
			total.Add(int64(k))
			mu.Lock()
			all = append(all, lat...)
			mu.Unlock()
		})
	}
	wg.Wait()
	el := time.Since(start)
	select {
	case err := <-errs:
		return measured{}, err
	default:
	}
	return measured{total.Load(), all, el, start, time.Now()}, nil
}

// steadySessions keeps n sessions streaming: session i starts i/n of a
// turn after the first and runs turns back to back. Once all have started
// (one turn's time), the window of cfg.steady opens (begin is called); the
// deltas emitted in it are the measurement, and the events counted are the
// text deltas received for them. Turns running when the window closes (end
// is called) finish, and no more start.
func steadySessions(client *http.Client, base string, n int, cfg config, begin, end func()) (measured, error) {
	turn := time.Duration(cfg.deltas) * cfg.interval
	if turn <= 0 {
		turn = time.Second
	}
	ids := make([]string, n)
	for i := range ids {
		id, err := createSession(client, base)
		if err != nil {
			return measured{}, err
		}
		ids[i] = id
	}
	start := time.Now()
	from, to := start.Add(turn), start.Add(turn+cfg.steady)
	go func() {
		time.Sleep(time.Until(from))
		begin()
		time.Sleep(time.Until(to))
		end()
	}()
	var total atomic.Int64
	var mu sync.Mutex
	var all []time.Duration
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i, id := range ids {
		wg.Go(func() {
			time.Sleep(time.Until(start.Add(turn * time.Duration(i) / time.Duration(n))))
			var lat []time.Duration
			var k int64
			for time.Now().Before(to) {
				resp, err := post(client, base+"/v1/sessions/"+id+"/messages", map[string]any{"prompt": "go"})
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
				_, err = readSSE(resp.Body, func(typ string, data []byte) {
					if typ == "text_delta" {
						k += int64(stampWindow(data, time.Now().UnixNano(), from.UnixNano(), to.UnixNano(), &lat))
					}
				})
				resp.Body.Close()
				if err != nil {
					errs <- err
					return
				}
			}
			total.Add(k)
			mu.Lock()
			all = append(all, lat...)
			mu.Unlock()
		})
	}
	wg.Wait()
	select {
	case err := <-errs:
		return measured{}, err
	default:
	}
	return measured{total.Load(), all, cfg.steady, from, to}, nil
}

// measured is one row of (a): the text deltas delivered, their added
// latencies as the clients saw them, the time they took, and the window
// in which the counted deltas were emitted.
type measured struct {
	events   int64
	lat      []time.Duration
	elapsed  time.Duration
	from, to time.Time
}

// stampWindow is stampLatency for the deltas emitted between from and to;
// it returns how many there were.
func stampWindow(data []byte, now, from, to int64, lat *[]time.Duration) int {
	k := 0
	for _, ts := range stamps(data) {
		if ts >= from && ts < to {
			*lat = append(*lat, time.Duration(now-ts))
			k++
		}
	}
	return k
}

func fanout(client *http.Client, base string, readers int) (float64, error) {
	id, err := createSession(client, base)
	if err != nil {
		return 0, err
	}
	var total atomic.Int64
	var wg sync.WaitGroup
	ready := make(chan struct{}, readers)
	errs := make(chan error, readers)
	for range readers {
		wg.Go(func() {
			resp, err := client.Get(base + "/v1/sessions/" + id + "/events?after=0")
			if err != nil {
				errs <- err
				ready <- struct{}{}
				return
			}
			defer resp.Body.Close()
			ready <- struct{}{}
			k, err := readSSE(resp.Body, nil)
			if err != nil {
				errs <- err
				return
			}
			total.Add(int64(k))
		})
	}
	for range readers {
		<-ready
	}
	start := time.Now()
	resp, err := post(client, base+"/v1/sessions/"+id+"/messages", map[string]any{"prompt": "go"})
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	wg.Wait()
	el := time.Since(start)
	select {
	case err := <-errs:
		return 0, err
	default:
	}
	return float64(total.Load()) / el.Seconds(), nil
}

func idleMemory(client *http.Client, base string, n int) (heap, resident float64, err error) {
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	r0 := rss()
	for range n {
		id, err := createSession(client, base)
		if err != nil {
			return 0, 0, err
		}
		resp, err := post(client, base+"/v1/sessions/"+id+"/messages", map[string]any{"prompt": "hi"})
		if err != nil {
			return 0, 0, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	runtime.GC()
	runtime.ReadMemStats(&m1)
	return float64(int64(m1.HeapAlloc)-int64(m0.HeapAlloc)) / float64(n), float64(rss()-r0) / float64(n), nil
}

func pct(d []time.Duration, p float64) string {
	if len(d) == 0 {
		return "-"
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return at(s, p).Round(10 * time.Microsecond).String()
}
