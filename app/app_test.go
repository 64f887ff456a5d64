package app_test

import (
	"context"
	"errors"
	"iter"
	"net"
	"net/http"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/weft-run/weft/app"
	"github.com/weft-run/weft/event"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/observe"
	"github.com/weft-run/weft/session"
	"github.com/weft-run/weft/store/memstore"
	"github.com/weft-run/weft/store/sqlite"
	"github.com/weft-run/weft/tool"
)

type models struct{ p llm.Provider }

func (m models) Resolve(string) (llm.Provider, llm.ModelInfo, error) {
	return m.p, llm.ModelInfo{ID: "m", Provider: "scripted", MaxOutputTokens: 1000}, nil
}

// squatter is a tool whose name a later step of New needs: adding that
// step's tool fails, after the services before it have started.
func squatter(name string) tool.Tool {
	return tool.Func(name, "takes the name", tool.Meta{ReadOnly: true},
		func(context.Context, struct{}, *tool.Call) (tool.Result, error) { return tool.Result{}, nil })
}

// TestNewCleansUpOnError: when a step of New fails, what the steps before
// it started is stopped (no goroutine left) and the store it opened is
// closed (the file can be opened again: one writer per database).
func TestNewCleansUpOnError(t *testing.T) {
	tests := []struct {
		name   string
		tools  []string // registry given with these names taken
		memory bool
		models bool
	}{
		{"no models: nothing started", nil, false, false},
		{"memory tool taken: after the sessions", []string{"memory_remember"}, true, true},
		{"task tool taken: after runs and background tasks", []string{"task_output"}, false, true},
		{"schedule tool taken: last tool step", []string{"task_schedule"}, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "weft.db")
			var reg *tool.Registry
			if tt.tools != nil {
				var ts []tool.Tool
				for _, n := range tt.tools {
					ts = append(ts, squatter(n))
				}
				var err error
				if reg, err = tool.NewRegistry(ts...); err != nil {
					t.Fatal(err)
				}
			}
			cfg := app.Config{DB: db, Tools: reg, Memory: tt.memory, Workspace: t.TempDir()}
			if tt.models {
				cfg.Models = models{llmtest.NewScripted("scripted")}
			}
			before := runtime.NumGoroutine()
			a, err := app.New(context.Background(), cfg)
			if err == nil {
				_ = a.Shutdown(context.Background())
				t.Fatal("New succeeded")
			}
			deadline := time.Now().Add(5 * time.Second)
			for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if n := runtime.NumGoroutine(); n > before {
				buf := make([]byte, 1<<16)
				t.Fatalf("%d goroutines after the failed New, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
			}
			again, err := sqlite.Open(context.Background(), db, sqlite.Options{})
			if errors.Is(err, sqlite.ErrLocked) {
				t.Fatalf("the failed New left the database open: %v", err)
			}
			if err == nil {
				_ = again.Close()
			}
		})
	}
}

// TestServeShutsDown: Serve answers until its context ends, then shuts
// down in order and returns nil; the store is closed after.
func TestServeShutsDown(t *testing.T) {
	db := filepath.Join(t.TempDir(), "weft.db")
	a, err := app.New(context.Background(), app.Config{DB: db, Models: models{llmtest.NewScripted("scripted")}, Workspace: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- a.Serve(ctx, ln) }()
	resp, err := http.Get("http://" + ln.Addr().String() + "/v1/health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("health: %s", resp.Status)
	}
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
	if _, err := http.Get("http://" + ln.Addr().String() + "/v1/health"); err == nil {
		t.Fatal("still answering after shutdown")
	}
	again, err := sqlite.Open(context.Background(), db, sqlite.Options{})
	if err != nil {
		t.Fatalf("the store is still open after Serve returned: %v", err)
	}
	_ = again.Close()
}

// recorder is an observer and a gauge registry that keep what they get.
type recorder struct {
	mu     sync.Mutex
	events []string
	gauges map[string]func() float64
}

func (r *recorder) Event(name string, _ map[string]any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, name)
}

func (r *recorder) Error(error, map[string]any) {}

func (r *recorder) GaugeFunc(name, _ string, fn func() float64) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gauges == nil {
		r.gauges = map[string]func() float64{}
	}
	r.gauges[name] = fn
	return nil
}

// TestObserverAndGauges: the sessions' turns report to Config.Observer
// (weft serve --metrics gives promobs), and the sessions gauge counts the
// sessions with a turn running.
func TestObserverAndGauges(t *testing.T) {
	rec := &recorder{}
	hold := make(chan struct{})
	p := holding{llmtest.NewScripted("scripted", llmtest.Text("hi")), hold}
	a, err := app.New(context.Background(), app.Config{Store: memstore.New(), Models: models{p}, DefaultModel: "scripted:m",
		Workspace: t.TempDir(), Observer: rec, Gauges: rec})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Shutdown(context.Background())
	active := rec.gauges["sessions_active"]
	if active == nil {
		t.Fatalf("gauges registered: %v", rec.gauges)
	}
	ctx := context.Background()
	sess, err := a.Sessions.CreateSession(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	seq, err := a.Sessions.Send(ctx, sess.ID, "hello", session.TurnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := active(); n != 1 {
		t.Errorf("sessions_active %v while the turn runs, want 1", n)
	}
	close(hold)
	r := a.Sessions.Subscribe(sess.ID, seq)
	defer r.Close()
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		ev, err := r.Next(wctx)
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == event.Done {
			break
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for active() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := active(); n != 0 {
		t.Errorf("sessions_active %v after the turn, want 0", n)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if !slices.Contains(rec.events, observe.EventModelCall) {
		t.Errorf("observer got %v, want a %s", rec.events, observe.EventModelCall)
	}
}

// holding holds its model calls until hold is closed.
type holding struct {
	llm.Provider
	hold chan struct{}
}

func (h holding) Stream(ctx context.Context, req *llm.Request) iter.Seq[llm.Event] {
	<-h.hold
	return h.Provider.Stream(ctx, req)
}
