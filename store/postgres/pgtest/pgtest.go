// Package pgtest starts a throwaway PostgreSQL 15 server for tests: Debian's
// postgresql-15 binaries, initdb into a temporary directory, a free
// loopback port, trust authentication on loopback only, stopped (and its
// directory removed) at the end.
//
// PostgreSQL refuses to run as root, and CI (.ci/run) runs as root, so a
// root test process runs initdb and postgres as the unprivileged user
// "nobody" (WEFT_PG_USER names another). Without the binaries the tests
// that need them skip, unless WEFT_PG_REQUIRED is set (as .ci/run does),
// which makes their absence a failure.
package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// DefaultBinDir is where Debian's postgresql-15 puts the server binaries.
const DefaultBinDir = "/usr/lib/postgresql/15/bin"

// Server is a running PostgreSQL server.
type Server struct {
	Port    int
	dir     string
	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error
	logBuf  *lockedBuffer
	next    atomic.Int64
	stopped sync.Once
}

// BinDir is the directory with initdb and postgres: WEFT_PG_BIN or
// DefaultBinDir.
func BinDir() string {
	if d := os.Getenv("WEFT_PG_BIN"); d != "" {
		return d
	}
	return DefaultBinDir
}

// Available says why the server cannot start here ("" when it can).
func Available() string {
	for _, b := range []string{"initdb", "postgres"} {
		if _, err := os.Stat(filepath.Join(BinDir(), b)); err != nil {
			return fmt.Sprintf("PostgreSQL server binary %s not found in %s (install Debian's postgresql-15 or set WEFT_PG_BIN)", b, BinDir())
		}
	}
	return ""
}

// Require skips t when the binaries are missing, unless
// WEFT_PG_REQUIRED is set.
func Require(t testing.TB) {
	t.Helper()
	if why := Available(); why != "" {
		if os.Getenv("WEFT_PG_REQUIRED") != "" {
			t.Fatalf("%s; WEFT_PG_REQUIRED is set, so this is a failure", why)
		}
		t.Skipf("%s; skipping (set WEFT_PG_REQUIRED=1 to make this a failure)", why)
	}
}

var (
	sharedMu  sync.Mutex
	shared    *Server
	sharedErr error
)

// Shared returns the process's shared server, starting it on first use,
// with fsync off (the tests that share it check behaviour, not durability).
// Call StopShared from TestMain after m.Run.
func Shared(t testing.TB) *Server {
	t.Helper()
	Require(t)
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if shared == nil && sharedErr == nil {
		shared, sharedErr = Start(Options{NoFsync: true})
	}
	if sharedErr != nil {
		t.Fatalf("pgtest: %v", sharedErr)
	}
	return shared
}

// Main is a TestMain for a package whose tests use Shared: it runs the
// tests, then stops the shared server, which would otherwise outlive the
// test binary.
func Main(m *testing.M) {
	code := m.Run()
	StopShared()
	os.Exit(code)
}

// StopShared stops the shared server, if one was started.
func StopShared() {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if shared != nil {
		shared.Stop()
		shared = nil
	}
}

// Options tunes Start.
type Options struct {
	// NoFsync turns fsync off: faster, and fine for tests that do not
	// measure durability. Benchmarks leave it on.
	NoFsync bool
}

// Start initialises a cluster in a new temporary directory and starts a
// server on a free loopback port.
func Start(opt Options) (*Server, error) {
	if why := Available(); why != "" {
		return nil, errors.New(why)
	}
	cred, err := credential()
	if err != nil {
		return nil, err
	}
	// As root, under /tmp: the server's user must be able to reach the
	// directory, and $TMPDIR may be inside root's home.
	base := ""
	if cred != nil {
		base = "/tmp"
	}
	dir, err := os.MkdirTemp(base, "weft-pgtest-")
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	fail := func(err error) (*Server, error) {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	if err := os.Mkdir(data, 0o700); err != nil {
		return fail(err)
	}
	if cred != nil {
		// The temp directory is root's; the server's user must reach its
		// data directory, which it must own.
		if err := os.Chmod(dir, 0o755); err != nil {
			return fail(err)
		}
		if err := os.Chown(data, int(cred.Uid), int(cred.Gid)); err != nil {
			return fail(err)
		}
	}
	initdb := exec.Command(filepath.Join(BinDir(), "initdb"), "-D", data, "-U", "weft", "--auth=trust",
		"--encoding=UTF8", "--locale=C", "--no-sync")
	initdb.Dir = dir
	initdb.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C"}
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		return fail(fmt.Errorf("initdb: %v\n%s", err, out))
	}
	var last error
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freePort()
		if err != nil {
			return fail(err)
		}
		s, err := start(dir, data, port, cred, opt)
		if err == nil {
			return s, nil
		}
		last = err
	}
	return fail(last)
}

func start(dir, data string, port int, cred *syscall.Credential, opt Options) (*Server, error) {
	args := []string{"-D", data, "-p", strconv.Itoa(port), "-h", "127.0.0.1",
		"-c", "unix_socket_directories=", "-c", "max_connections=300",
		"-c", "shared_buffers=64MB", "-c", "listen_addresses=127.0.0.1"}
	if opt.NoFsync {
		args = append(args, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	}
	s := &Server{Port: port, dir: dir, exited: make(chan struct{}), logBuf: &lockedBuffer{}}
	started := make(chan error, 1)
	// The server gets SIGKILL if this process dies (Pdeathsig), so that a
	// killed test run leaves no server behind. Pdeathsig fires when the
	// thread that started the child exits, so that thread stays locked to
	// this goroutine for the server's whole life.
	go func() {
		runtime.LockOSThread()
		cmd := exec.Command(filepath.Join(BinDir(), "postgres"), args...)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=/usr/bin:/bin", "LC_ALL=C"}
		cmd.Stdout, cmd.Stderr = s.logBuf, s.logBuf
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL, Setpgid: true}
		if err := cmd.Start(); err != nil {
			started <- err
			close(s.exited)
			return
		}
		s.cmd = cmd
		started <- nil
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case <-s.exited:
			return nil, fmt.Errorf("postgres exited at start (%v):\n%s", s.waitErr, s.logBuf.String())
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		c, err := pgx.Connect(ctx, s.DSN("postgres"))
		if err == nil {
			_ = c.Close(ctx)
			cancel()
			return s, nil
		}
		cancel()
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("postgres did not accept connections within 60s: %v\n%s", err, s.logBuf.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// DSN is the connection string of database db on s.
func (s *Server) DSN(db string) string {
	return fmt.Sprintf("postgres://weft@127.0.0.1:%d/%s?sslmode=disable", s.Port, db)
}

// NewDatabase creates an empty database and returns its DSN. It is left
// for the server's end to remove.
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("t%d_%d", os.Getpid(), s.next.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, s.DSN("postgres"))
	if err != nil {
		t.Fatalf("pgtest: connect: %v", err)
	}
	defer c.Close(ctx)
	// FILE_COPY: PostgreSQL 15's default (WAL_LOG) writes the whole
	// template into the WAL, ten times slower for an empty database.
	if _, err := c.Exec(ctx, "CREATE DATABASE "+name+" TEMPLATE template0 STRATEGY FILE_COPY"); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	return s.DSN(name)
}

// Log is what the server has printed so far.
func (s *Server) Log() string { return s.logBuf.String() }

// Stop shuts the server down (fast shutdown: open connections are cut)
// and removes its directory.
func (s *Server) Stop() {
	s.stopped.Do(func() {
		if s.cmd != nil && s.cmd.Process != nil {
			_ = s.cmd.Process.Signal(syscall.SIGINT)
			select {
			case <-s.exited:
			case <-time.After(30 * time.Second):
				_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
				<-s.exited
			}
		}
		_ = os.RemoveAll(s.dir)
	})
}

// credential is the user the server runs as: nil (this process's) unless
// this process is root.
func credential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	name := os.Getenv("WEFT_PG_USER")
	if name == "" {
		name = "nobody"
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("pgtest: running as root, and PostgreSQL refuses root: user %q to run it as: %w", name, err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, err
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, err
	}
	// No supplementary groups: the server must not keep root's.
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
