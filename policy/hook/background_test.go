package hook

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestBackgroundHooks: hook work nobody waits on (async hooks, Go runs) is
// bounded, dropped with a warning beyond the bound or after Close, and
// awaited by Close, which cuts it off (killing processes) when its
// context ends first.
func TestBackgroundHooks(t *testing.T) {
	t.Parallel()
	// slow is a Go hook that finishes after d unless its context ends.
	slow := func(d time.Duration, started, finished *atomic.Int32) Func {
		return func(ctx context.Context, _ Input) (Outcome, error) {
			started.Add(1)
			select {
			case <-time.After(d):
				finished.Add(1)
				return Outcome{}, nil
			case <-ctx.Done():
				return Outcome{}, ctx.Err()
			}
		}
	}
	tests := []struct {
		name  string
		limit int
		async bool // an async hook fired by Run; else a sync hook fired by Go
		fires int
		// wantStarted/wantFinished are counted when Close returned.
		wantStarted, wantFinished int32
		wantDropped               bool
	}{
		{name: "Close waits for a slow async hook", limit: 4, async: true, fires: 1, wantStarted: 1, wantFinished: 1},
		{name: "Close waits for a Go run of sync hooks", limit: 4, fires: 2, wantStarted: 2, wantFinished: 2},
		{name: "async hooks beyond the bound are dropped", limit: 2, async: true, fires: 5, wantStarted: 2, wantFinished: 2, wantDropped: true},
		{name: "Go runs beyond the bound are dropped", limit: 1, fires: 3, wantStarted: 1, wantFinished: 1, wantDropped: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m, logs := newTestManager(t, Options{MaxBackground: tc.limit})
			var started, finished atomic.Int32
			if err := m.Register(Def{Name: "slow", Event: RunComplete, Async: tc.async, Timeout: 10 * time.Second,
				Func: slow(300*time.Millisecond, &started, &finished)}); err != nil {
				t.Fatal(err)
			}
			in := Input{Event: RunComplete, Cwd: t.TempDir()}
			begin := time.Now()
			dropped := 0
			for range tc.fires {
				if tc.async {
					m.Run(context.Background(), in)
				} else if !m.Go(context.Background(), in) {
					dropped++
				}
			}
			if d := time.Since(begin); d > 200*time.Millisecond {
				t.Fatalf("firing background hooks took %s: something waited for them", d)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := m.Close(ctx); err != nil {
				t.Fatalf("Close: %v", err)
			}
			if started.Load() != tc.wantStarted || finished.Load() != tc.wantFinished {
				t.Fatalf("when Close returned: %d started, %d finished; want %d, %d",
					started.Load(), finished.Load(), tc.wantStarted, tc.wantFinished)
			}
			if got := logs.warned("background hook dropped", "too many", "event=run_complete"); got != tc.wantDropped {
				t.Fatalf("drop warning logged: %v, want %v\n%s", got, tc.wantDropped, logs)
			}
			if !tc.async && dropped != tc.fires-int(tc.wantStarted) {
				t.Fatalf("Go reported %d dropped, want %d", dropped, tc.fires-int(tc.wantStarted))
			}
			// Closed: later background work is dropped, not started.
			if tc.async {
				m.Run(context.Background(), in)
			} else if m.Go(context.Background(), in) {
				t.Fatal("Go after Close started a run")
			}
			m.Wait()
			if started.Load() != tc.wantStarted {
				t.Fatal("a hook started after Close")
			}
			if !logs.warned("background hook dropped", "closed") {
				t.Fatalf("no warning for work dropped after Close:\n%s", logs)
			}
		})
	}
}

// TestCloseGivesUp: a hook that would outlive Close's context is killed
// (its process too) and Close says so.
func TestCloseGivesUp(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	m, _ := newTestManager(t, Options{})
	if err := m.Register(Def{Name: "stuck", Event: Stop, Async: true, Timeout: time.Minute,
		Command: `echo $$ > "` + pidFile + `.tmp"; mv "` + pidFile + `.tmp" "` + pidFile + `"; exec sleep 60`}); err != nil {
		t.Fatal(err)
	}
	m.Run(context.Background(), Input{Event: Stop, Cwd: dir})
	waitFor(t, "the hook to start", func() bool { _, err := os.Stat(pidFile); return err == nil })
	pid, err := strconv.Atoi(strings.TrimSpace(readFile(t, pidFile)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	err = m.Close(ctx)
	if err == nil || !strings.Contains(err.Error(), "1 background hooks") {
		t.Fatalf("Close = %v, want an error counting the hook it cut off", err)
	}
	if d := time.Since(start); d > closeGrace {
		t.Fatalf("Close took %s", d)
	}
	waitFor(t, "the hook's process to be killed", func() bool { return processGone(pid) })
}
