package hook

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// logBuf collects a Manager's log lines for assertions.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// warned reports whether a WARN line mentions every one of words.
func (l *logBuf) warned(words ...string) bool {
	for line := range strings.Lines(l.String()) {
		if !strings.Contains(line, "level=WARN") {
			continue
		}
		ok := true
		for _, w := range words {
			ok = ok && strings.Contains(line, w)
		}
		if ok {
			return true
		}
	}
	return false
}

func newTestManager(t *testing.T, opt Options) (*Manager, *logBuf) {
	t.Helper()
	logs := &logBuf{}
	opt.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return NewManager(opt), logs
}

// script writes an executable #!/bin/sh script and returns its path.
func script(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// envMap parses `env` output.
func envMap(s string) map[string]string {
	m := map[string]string{}
	for line := range strings.Lines(s) {
		k, v, ok := strings.Cut(strings.TrimSuffix(line, "\n"), "=")
		if ok {
			m[k] = v
		}
	}
	return m
}

// processGone reports whether pid has exited (a zombie counts: our test
// process is not its parent, and PID 1 may not reap it).
func processGone(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 || i+2 >= len(data) {
		return true
	}
	return data[i+2] == 'Z' || data[i+2] == 'X'
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
