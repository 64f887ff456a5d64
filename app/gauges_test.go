package app_test

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/weft-run/weft/app"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/llm/registry"
	"github.com/weft-run/weft/observe/promobs"
	"github.com/weft-run/weft/server"
	"github.com/weft-run/weft/session"
	"github.com/weft-run/weft/store/memstore"
)

// TestStreamAndLagGauges: with promobs as Config.Gauges, a scrape of
// /metrics shows weft_streams_active (1 while a turn's SSE stream is
// open, 0 after) and weft_eventlog_lag_events (0 once the events are
// stored).
func TestStreamAndLagGauges(t *testing.T) {
	m, err := promobs.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	hold := make(chan struct{})
	p := holding{llmtest.NewScripted("scripted", llmtest.Text("hi")), hold}
	a, err := app.New(context.Background(), app.Config{Store: memstore.New(), Models: models{p}, DefaultModel: "scripted:m",
		Workspace: t.TempDir(), Observer: m, Gauges: m, Logger: slog.New(slog.DiscardHandler), Server: server.Config{Metrics: m.Handler(), RateLimit: -1}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a.Handler())
	defer srv.Close()
	defer a.Shutdown(context.Background())

	scrape := func() map[string]string {
		t.Helper()
		resp, err := http.Get(srv.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		out := map[string]string{}
		for line := range strings.SplitSeq(string(body), "\n") {
			if name, v, ok := strings.Cut(line, " "); ok && !strings.HasPrefix(line, "#") {
				out[name] = v
			}
		}
		return out
	}
	waitFor := func(series, want string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			got := scrape()[series]
			if got == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s = %q, want %s", series, got, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor("weft_streams_active", "0")
	waitFor("weft_eventlog_lag_events", "0")

	created, err := http.Post(srv.URL+"/v1/sessions", "application/json", strings.NewReader(`{"session_id":"s1"}`))
	if err != nil || created.StatusCode != http.StatusCreated {
		t.Fatalf("creating the session: %v %v", created, err)
	}
	created.Body.Close()
	resp, err := http.Post(srv.URL+"/v1/sessions/s1/messages", "application/json", strings.NewReader(`{"prompt":"hello"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST messages: %d %s", resp.StatusCode, b)
	}
	waitFor("weft_streams_active", "1")
	close(hold)
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if sc.Text() == "event: done" {
			break
		}
	}
	resp.Body.Close()
	waitFor("weft_streams_active", "0")
	waitFor("weft_eventlog_lag_events", "0")
}

// TestKeysFromRegistry: app.New gives the server the model registry's key
// pools for GET /v1/keys; another resolver has none (503).
func TestKeysFromRegistry(t *testing.T) {
	keys := []string{"sk-app-test-aaaaaaaa-0001", "sk-app-test-bbbbbbbb-0002"}
	reg := registry.New(registry.Config{Providers: map[string]registry.ProviderConfig{
		"openai": {BaseURL: "http://127.0.0.1:1/v1", APIKeys: keys}}, Getenv: func(string) string { return "" }})
	tests := []struct {
		name   string
		models session.ModelResolver
		status int
	}{
		{"registry", reg, http.StatusOK},
		{"another resolver", models{llmtest.NewScripted("scripted")}, http.StatusServiceUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := app.New(context.Background(), app.Config{Store: memstore.New(), Models: tt.models, DefaultModel: "openai:gpt-4.1",
				Workspace: t.TempDir(), Logger: slog.New(slog.DiscardHandler), Server: server.Config{RateLimit: -1}})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Shutdown(context.Background())
			srv := httptest.NewServer(a.Handler())
			defer srv.Close()
			resp, err := http.Get(srv.URL + "/v1/keys")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.status {
				t.Fatalf("GET /v1/keys: %d %s", resp.StatusCode, body)
			}
			if tt.status == http.StatusOK && (!strings.Contains(string(body), `"provider":"openai"`) ||
				!strings.Contains(string(body), "sk-a...0001") || strings.Contains(string(body), keys[0])) {
				t.Fatalf("GET /v1/keys = %s", body)
			}
		})
	}
}
