package memory

import (
	"bufio"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeClock is a settable clock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func TestDreamGates(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		state    DreamState // before the check
		sessions int        // noted before the check, on top of state's
		at       time.Time
		due      bool
		gate     string
		scanned  bool // the check records a scan
	}{
		{"never ran, enough sessions", DreamState{}, 3, t0, true, "", true},
		{"never ran, too few sessions", DreamState{}, 2, t0, false, "sessions", true},
		{"ran 23h ago", DreamState{LastRun: t0.Add(-23 * time.Hour)}, 5, t0, false, "time", false},
		{"ran 24h ago, scanned 5 min ago", DreamState{LastRun: t0.Add(-24 * time.Hour), LastScan: t0.Add(-5 * time.Minute)}, 5, t0, false, "throttle", false},
		{"ran 24h ago, scanned 10 min ago", DreamState{LastRun: t0.Add(-24 * time.Hour), LastScan: t0.Add(-10 * time.Minute)}, 3, t0, true, "", true},
		{"ran 25h ago, scanned 11 min ago, 2 sessions", DreamState{LastRun: t0.Add(-25 * time.Hour), LastScan: t0.Add(-11 * time.Minute)}, 2, t0, false, "sessions", true},
		{"sessions already counted", DreamState{LastRun: t0.Add(-48 * time.Hour), Sessions: []string{"a", "b", "c"}}, 0, t0, true, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := openTestDir(t, DirOptions{})
			clk := &fakeClock{now: tt.at}
			dr := NewDreamer(d, DreamConfig{Now: clk.Now})
			if _, err := dr.update(func(st *DreamState) error { *st = tt.state; return nil }); err != nil {
				t.Fatal(err)
			}
			for i := range tt.sessions {
				id := string(rune('k' + i))
				// Noting a session twice counts it once.
				for range 2 {
					if err := dr.NoteSession(id); err != nil {
						t.Fatal(err)
					}
				}
			}
			due, gate, err := dr.Due()
			if err != nil {
				t.Fatal(err)
			}
			if due != tt.due || gate != tt.gate {
				t.Fatalf("Due = %v, %q; want %v, %q", due, gate, tt.due, tt.gate)
			}
			if got := dr.State().LastScan.Equal(tt.at); got != tt.scanned {
				t.Fatalf("scan recorded = %v, want %v (state %+v)", got, tt.scanned, dr.State())
			}
		})
	}
}

// TestDreamThrottleAndPeriod walks the gates through time: the throttle
// holds further checks for 10 minutes, a run starts a new period.
func TestDreamThrottleAndPeriod(t *testing.T) {
	t.Parallel()
	d := openTestDir(t, DirOptions{})
	clk := &fakeClock{now: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	dr := NewDreamer(d, DreamConfig{Now: clk.Now})
	runs := 0
	fn := func(context.Context, *Dir) error { runs++; return nil }
	step := func(want bool) {
		t.Helper()
		ran, err := dr.MaybeRun(context.Background(), fn)
		if err != nil || ran != want {
			t.Fatalf("at %s: MaybeRun = %v, %v; want %v (state %+v)", clk.Now().Format(time.TimeOnly), ran, err, want, dr.State())
		}
	}
	for _, s := range []string{"s1", "s2"} {
		if err := dr.NoteSession(s); err != nil {
			t.Fatal(err)
		}
	}
	step(false) // 2 sessions; the scan is recorded
	if err := dr.NoteSession("s3"); err != nil {
		t.Fatal(err)
	}
	clk.Add(9 * time.Minute)
	step(false) // throttled though 3 sessions
	clk.Add(time.Minute)
	step(true)
	if runs != 1 || len(dr.State().Sessions) != 0 {
		t.Fatalf("runs %d, state %+v", runs, dr.State())
	}
	for _, s := range []string{"s4", "s5", "s6"} {
		_ = dr.NoteSession(s)
	}
	clk.Add(23 * time.Hour)
	step(false) // time gate
	clk.Add(time.Hour)
	step(true)
}

// TestDreamOneAtATime: two Dreamers on one directory (in this process,
// and in another process) never consolidate at once.
func TestDreamOneAtATime(t *testing.T) {
	t.Parallel()
	d := openTestDir(t, DirOptions{})
	a, b := NewDreamer(d, DreamConfig{}), NewDreamer(d, DreamConfig{})
	var inside atomic.Int32
	var overlap atomic.Bool
	entered := make(chan struct{})
	release := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		err := a.Run(context.Background(), func(context.Context, *Dir) error {
			if inside.Add(1) > 1 {
				overlap.Store(true)
			}
			close(entered)
			<-release
			inside.Add(-1)
			return nil
		})
		if err != nil {
			t.Error(err)
		}
	}()
	<-entered
	err := b.Run(context.Background(), func(context.Context, *Dir) error {
		overlap.Store(true)
		return nil
	})
	if !errors.Is(err, ErrDreamBusy) {
		t.Fatalf("second Dreamer: %v, want ErrDreamBusy", err)
	}
	// MaybeRun treats a busy lock as "not now", not as a failure.
	_ = b.NoteSession("x")
	close(release)
	wg.Wait()
	if overlap.Load() {
		t.Fatal("two consolidations overlapped")
	}

	// Another process holds the lock: this one must not consolidate.
	cmd := exec.Command(os.Args[0], "-test.run=^TestDreamLockHelper$")
	cmd.Env = append(os.Environ(), "WEFT_DREAM_LOCK_DIR="+d.Path())
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "locked\n" {
		t.Fatalf("helper: %q, %v", line, err)
	}
	if err := b.Run(context.Background(), func(context.Context, *Dir) error { return nil }); !errors.Is(err, ErrDreamBusy) {
		t.Fatalf("while another process holds the lock: %v, want ErrDreamBusy", err)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	// Its exit released the lock.
	if err := b.Run(context.Background(), func(context.Context, *Dir) error { return nil }); err != nil {
		t.Fatalf("after the other process exited: %v", err)
	}
}

// TestDreamLockHelper is the other process of TestDreamOneAtATime: it
// takes the lock, says so, and holds it until its stdin closes.
func TestDreamLockHelper(t *testing.T) {
	dir := os.Getenv("WEFT_DREAM_LOCK_DIR")
	if dir == "" {
		t.Skip("helper process of TestDreamOneAtATime")
	}
	d, err := OpenDir(dir, DirOptions{})
	if err != nil {
		t.Fatal(err)
	}
	err = NewDreamer(d, DreamConfig{}).Run(context.Background(), func(context.Context, *Dir) error {
		os.Stdout.WriteString("locked\n")
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

type fileState struct {
	data  string
	mode  fs.FileMode
	mtime time.Time
}

// dirFiles reads every regular file directly in dir but the Dreamer's
// own.
func dirFiles(t *testing.T, dir string) map[string]fileState {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]fileState{}
	for _, de := range des {
		if de.IsDir() || ownFile(de.Name()) {
			continue
		}
		p := filepath.Join(dir, de.Name())
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(p)
		out[de.Name()] = fileState{string(b), fi.Mode(), fi.ModTime()}
	}
	return out
}

// TestDreamRollback: a consolidation that fails (an error or a panic)
// after changing, adding and deleting files leaves the directory byte for
// byte as it was, and the state unchanged.
func TestDreamRollback(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"error", "panic"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			d := openTestDir(t, DirOptions{})
			for _, e := range []Entry{
				{Name: "build", Type: TypeProject, Description: "how to build", Body: "Run make."},
				{Name: "tabs", Type: TypeUser, Body: "The user indents with tabs."},
				{Name: "gone", Type: TypeProject, Body: "To be deleted."},
			} {
				if _, err := d.Write(e); err != nil {
					t.Fatal(err)
				}
			}
			// A hand-written file with odd bytes and mode, and an old time.
			hand := filepath.Join(d.Path(), "notes.md")
			if err := os.WriteFile(hand, []byte("no front matter\r\n\x00tail"), 0o640); err != nil {
				t.Fatal(err)
			}
			old := time.Now().Add(-72 * time.Hour).Truncate(time.Second)
			_ = os.Chtimes(hand, old, old)
			before := dirFiles(t, d.Path())
			gen := d.Generation()
			dr := NewDreamer(d, DreamConfig{})
			stateBefore := dr.State()
			err := dr.Run(context.Background(), func(_ context.Context, d *Dir) error {
				if _, err := d.Write(Entry{Name: "build", Body: "Merged: run make, then make check."}); err != nil {
					return err
				}
				if _, err := d.Write(Entry{Name: "new-one", Body: "Added by the dream."}); err != nil {
					return err
				}
				if err := d.Delete("gone"); err != nil {
					return err
				}
				if err := os.Chmod(hand, 0o600); err != nil {
					return err
				}
				if how == "panic" {
					panic("the agent blew up")
				}
				return errors.New("the agent stopped: max_turns")
			})
			if err == nil {
				t.Fatal("a failed consolidation returned no error")
			}
			after := dirFiles(t, d.Path())
			if len(after) != len(before) {
				t.Fatalf("files after the rollback: %v, want %v", keys(after), keys(before))
			}
			for name, b := range before {
				a, ok := after[name]
				if !ok || a.data != b.data || a.mode != b.mode || !a.mtime.Equal(b.mtime) {
					t.Errorf("%s: after %+v, before %+v", name, a, b)
				}
			}
			if d.Generation() == gen {
				t.Error("the rollback did not invalidate the prompt's cache")
			}
			if st := dr.State(); !st.LastRun.Equal(stateBefore.LastRun) {
				t.Errorf("a failed run was recorded as a run: %+v", st)
			}
		})
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
