package mcp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// stopGrace is how long a stdio server gets to exit after its stdin is
// closed, and again after SIGTERM, before its process group is killed.
var stopGrace = 2 * time.Second

// stdioTransport starts a server process in its own process group and
// speaks newline-delimited JSON-RPC over its stdin and stdout. Unlike the
// SDK's CommandTransport it signals the whole group (an npx wrapper and
// the node process it starts die together), closes the connection as soon
// as the process exits (so a crash is noticed even when a grandchild
// keeps stdout open), and keeps the tail of stderr for error messages.
type stdioTransport struct {
	command string
	args    []string
	dir     string
	env     []string
	stderr  *tailBuffer
}

func (t *stdioTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	cmd := exec.Command(t.command, t.args...)
	cmd.Dir = t.dir
	cmd.Env = t.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Our own pipes rather than StdinPipe/StdoutPipe: Wait closes those,
	// and the exit watcher below calls Wait while the connection may
	// still be reading what the process wrote last.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	if t.stderr != nil {
		cmd.Stderr = t.stderr
	}
	if err := cmd.Start(); err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("starting %s: %w", t.command, err)
	}
	inR.Close()
	outW.Close()
	p := &process{cmd: cmd, pgid: cmd.Process.Pid, exited: make(chan struct{})}
	inner, err := (&sdk.IOTransport{Reader: outR, Writer: inW}).Connect(ctx)
	if err != nil {
		inW.Close()
		outR.Close()
		p.kill()
		return nil, err
	}
	c := &procConn{Connection: inner, p: p}
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
		// Whatever the process left behind in its group goes with it,
		// and the connection ends now rather than when the last holder
		// of stdout lets go.
		_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
		_ = c.Connection.Close()
	}()
	return c, nil
}

type process struct {
	cmd    *exec.Cmd
	pgid   int
	exited chan struct{}
	err    error // cmd.Wait's, valid once exited is closed
}

func (p *process) wait(d time.Duration) bool {
	select {
	case <-p.exited:
		return true
	case <-time.After(d):
		return false
	}
}

func (p *process) kill() {
	_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
	<-p.exited
}

// procConn is the connection to a server process; Close stops it.
type procConn struct {
	sdk.Connection
	p    *process
	once sync.Once
}

// Close closes stdin (the MCP spec's shutdown for stdio), waits for the
// process to exit, then SIGTERMs and finally SIGKILLs its process group.
func (c *procConn) Close() error {
	err := c.Connection.Close()
	c.once.Do(func() {
		if c.p.wait(stopGrace) {
			return
		}
		_ = syscall.Kill(-c.p.pgid, syscall.SIGTERM)
		if c.p.wait(stopGrace) {
			return
		}
		c.p.kill()
	})
	if errors.Is(err, os.ErrClosed) {
		err = nil
	}
	return err
}

// tailBuffer keeps the last max bytes written to it (a server's stderr).
type tailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

func (b *tailBuffer) Reset() {
	b.mu.Lock()
	b.buf = b.buf[:0]
	b.mu.Unlock()
}
