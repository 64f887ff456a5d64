package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
)

// The latency weft adds ends when a delta's frame is handed to the
// kernel. What the client measures also includes the client process's own
// scheduling, and on this machine that process is the load generator,
// competing with the server for the same cores. writeLog records, in the
// server process, when each delta's frame was flushed to its connection,
// so that (a) can report both.

// writesPath serves, for the deltas emitted in a window, percentiles of the
// time from emission to the flush of their frame.
const writesPath = "/serveload/writes"

type writeLog struct {
	mu      sync.Mutex
	emitted []int64 // provider timestamps, Unix ns
	flushed []int64 // when each one's frame was flushed
}

// wrap records the text_delta frames h writes.
func (l *writeLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&stampWriter{ResponseWriter: w, log: l}, r)
	})
}

func (l *writeLog) add(emitted []int64, at int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range emitted {
		l.emitted = append(l.emitted, e)
		l.flushed = append(l.flushed, at)
	}
}

// serve answers GET writesPath?from=NS&to=NS with "p50 p99 p99.9" in
// nanoseconds (0 when no delta was emitted in the window).
func (l *writeLog) serve(w http.ResponseWriter, r *http.Request) {
	from, err1 := strconv.ParseInt(r.URL.Query().Get("from"), 10, 64)
	to, err2 := strconv.ParseInt(r.URL.Query().Get("to"), 10, 64)
	if err1 != nil || err2 != nil {
		http.Error(w, "from and to: Unix nanoseconds", http.StatusBadRequest)
		return
	}
	l.mu.Lock()
	var lat []time.Duration
	for i, e := range l.emitted {
		if e >= from && e < to {
			lat = append(lat, time.Duration(l.flushed[i]-e))
		}
	}
	l.mu.Unlock()
	slices.Sort(lat)
	fmt.Fprintf(w, "%d %d %d", int64(at(lat, 50)), int64(at(lat, 99)), int64(at(lat, 99.9)))
}

// serverWrites asks the server for what serve reports.
func serverWrites(client *http.Client, base string, from, to time.Time) (p50, p99, p999 time.Duration, err error) {
	resp, err := client.Get(fmt.Sprintf("%s%s?from=%d&to=%d", base, writesPath, from.UnixNano(), to.UnixNano()))
	if err != nil {
		return 0, 0, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, 0, 0, err
	}
	var n50, n99, n999 int64
	if _, err := fmt.Sscan(string(b), &n50, &n99, &n999); err != nil {
		return 0, 0, 0, fmt.Errorf("%s: %q: %w", writesPath, b, err)
	}
	return time.Duration(n50), time.Duration(n99), time.Duration(n999), nil
}

// at is the p-th percentile of sorted d (0 when d is empty).
func at(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[min(int(float64(len(d))*p/100), len(d)-1)]
}

// stampWriter notes the provider timestamps of the text_delta frames
// written through it and records them when they are flushed. The server
// writes whole frames, and one goroutine at a time (the stream's mutex).
type stampWriter struct {
	http.ResponseWriter
	log     *writeLog
	typ     []byte
	pending []int64
}

func (w *stampWriter) Write(b []byte) (int, error) {
	for line := range bytes.Lines(b) {
		line = bytes.TrimSuffix(line, []byte("\n"))
		switch {
		case bytes.HasPrefix(line, []byte("event: ")):
			w.typ = append(w.typ[:0], line[7:]...)
		case bytes.HasPrefix(line, []byte("data: ")) && string(w.typ) == "text_delta":
			w.pending = append(w.pending, stamps(line[6:])...)
		}
	}
	return w.ResponseWriter.Write(b)
}

func (w *stampWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
	if len(w.pending) > 0 {
		w.log.add(w.pending, time.Now().UnixNano())
		w.pending = w.pending[:0]
	}
}

func (w *stampWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
