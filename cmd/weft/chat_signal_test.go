package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/weft-run/weft/llm/llmtest"
)

// lockedBuf is an output stream a test reads while the process writes it.
type lockedBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// chatProc is a running `weft chat` fed through a pipe.
type chatProc struct {
	t              *testing.T
	cmd            *exec.Cmd
	stdin          io.WriteCloser
	stdout, stderr lockedBuf
	exited         chan struct{}
	err            error
}

func startChat(t *testing.T, env []string, args ...string) *chatProc {
	t.Helper()
	p := &chatProc{t: t, exited: make(chan struct{})}
	p.cmd = exec.Command(weftBinary(t), append([]string{"chat"}, args...)...)
	p.cmd.Env = append(append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, turnEndOff...), env...)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
	})
	return p
}

// waitFor waits until out holds at least n copies of s, failing if weft
// exits or takes too long.
func (p *chatProc) waitFor(out *lockedBuf, s string, n int) {
	p.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for strings.Count(out.String(), s) < n {
		select {
		case <-p.exited:
			p.t.Fatalf("weft chat exited (%v) before printing %q x%d\nstdout: %s\nstderr: %s", p.err, s, n, p.stdout.String(), p.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("no %q x%d\nstdout: %s\nstderr: %s", s, n, p.stdout.String(), p.stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (p *chatProc) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
		p.t.Fatal(err)
	}
}

func (p *chatProc) interrupt() {
	p.t.Helper()
	if err := syscall.Kill(p.cmd.Process.Pid, syscall.SIGINT); err != nil {
		p.t.Fatal(err)
	}
}

// exitCode waits for weft to exit and returns its code.
func (p *chatProc) exitCode() int {
	p.t.Helper()
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		p.t.Fatalf("weft chat did not exit\nstderr: %s", p.stderr.String())
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	if p.err != nil {
		p.t.Fatal(p.err)
	}
	return 0
}

// TestChatInterrupt: Ctrl-C (SIGINT) during a run stops that run and the
// REPL carries on with the same session; at the prompt it only clears the
// line; two in a row at the prompt leave, with status 0.
func TestChatInterrupt(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewOpenAI(t)
	env := []string{"OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + fake.URL + "/v1", "WEFT_WORKSPACE=" + t.TempDir()}
	p := startChat(t, env, "--model", "openai:gpt-4.1")
	prompts := 1
	p.waitFor(&p.stderr, "> ", prompts)

	// A long answer, cut off by Ctrl-C.
	chunks := make([]string, 500)
	for i := range chunks {
		chunks[i] = "word "
	}
	fake.Push(llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock(chunks...)}, Delay: 20 * time.Millisecond})
	p.send("talk for a while")
	p.waitFor(&p.stdout, "word ", 3)
	p.interrupt()
	p.waitFor(&p.stderr, "[cancelled]", 1)
	prompts++
	p.waitFor(&p.stderr, "> ", prompts)
	if strings.Count(p.stdout.String(), "word ") >= len(chunks) {
		t.Fatal("the run was not stopped: the whole answer streamed")
	}

	// The REPL and its session carry on.
	fake.Push(llmtest.Text("Still here."))
	p.send("are you there?")
	p.waitFor(&p.stdout, "Still here.", 1)
	prompts++
	p.waitFor(&p.stderr, "> ", prompts)
	if reqs := fake.Requests(); len(reqs) != 2 || !strings.Contains(string(reqs[1].Body), "talk for a while") {
		t.Fatalf("the turn after the interrupt lost the session: %d requests", len(reqs))
	}

	// Ctrl-C at the prompt clears the line and prompts again.
	p.interrupt()
	p.waitFor(&p.stderr, "Ctrl-C again to leave", 1)
	prompts++
	p.waitFor(&p.stderr, "> ", prompts)
	fake.Push(llmtest.Text("Yes."))
	p.send("one more")
	p.waitFor(&p.stdout, "Yes.", 1)
	prompts++
	p.waitFor(&p.stderr, "> ", prompts)

	// A line in between resets it: this Ctrl-C only clears the line, and
	// the next one, right after, leaves.
	p.interrupt()
	p.waitFor(&p.stderr, "Ctrl-C again to leave", 2)
	prompts++
	p.waitFor(&p.stderr, "> ", prompts)
	p.interrupt()
	if code := p.exitCode(); code != 0 {
		t.Fatalf("exit code %d after a double Ctrl-C, want 0\nstderr: %s", code, p.stderr.String())
	}
	if n := len(fake.Requests()); n != 3 {
		t.Fatalf("%d model requests, want 3", n)
	}
}

// TestRunInterrupt: weft run still ends on Ctrl-C, with status 130.
func TestRunInterrupt(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewOpenAI(t)
	chunks := make([]string, 500)
	for i := range chunks {
		chunks[i] = "word "
	}
	fake.Push(llmtest.Script{Blocks: []llmtest.Block{llmtest.TextBlock(chunks...)}, Delay: 20 * time.Millisecond})
	p := &chatProc{t: t, exited: make(chan struct{})}
	p.cmd = exec.Command(weftBinary(t), "run", "--model", "openai:gpt-4.1", "talk")
	p.cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "OPENAI_API_KEY=sk-test", "OPENAI_BASE_URL=" + fake.URL + "/v1", "WEFT_WORKSPACE=" + t.TempDir()}, turnEndOff...)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() { _ = p.cmd.Process.Kill(); <-p.exited })
	p.waitFor(&p.stdout, "word ", 3)
	p.interrupt()
	if code := p.exitCode(); code != 130 {
		t.Fatalf("exit code %d, want 130\nstderr: %s", code, p.stderr.String())
	}
}

// TestLineReaderAbandonedRead: an approval prompt given up on (the run was
// stopped) leaves its read pending; the line typed next goes to the next
// reader (the REPL prompt), not into the void.
func TestLineReaderAbandonedRead(t *testing.T) {
	t.Parallel()
	r, w := io.Pipe()
	defer w.Close()
	lines := newLineReader(r)
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	go func() { _, err := lines.ReadLine(ctx); got <- err }()
	cancel()
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Fatalf("ReadLine after cancel = %v", err)
	}
	intr := make(chan os.Signal, 1)
	intr <- syscall.SIGINT
	if _, err := lines.readLineOr(context.Background(), intr); !errors.Is(err, errInterrupted) {
		t.Fatalf("readLineOr with a pending signal = %v", err)
	}
	go func() { _, _ = io.WriteString(w, "next line\nafter\n") }()
	for _, want := range []string{"next line", "after"} {
		line, err := lines.ReadLine(context.Background())
		if err != nil || line != want {
			t.Fatalf("ReadLine = %q, %v; want %q", line, err, want)
		}
	}
	w.Close()
	if _, err := lines.ReadLine(context.Background()); !errors.Is(err, io.EOF) {
		t.Fatalf("ReadLine at the end = %v", err)
	}
}
