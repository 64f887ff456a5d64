package app_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/weft-run/weft/app"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/llmtest"
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
