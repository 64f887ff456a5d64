package wire

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/weft-run/weft/llm"
)

// slowServer sends one byte, then waits for the test to end.
func slowServer(t *testing.T) *httptest.Server {
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if got := r.Header.Get("X-Extra"); got != "1" {
			http.Error(w, "missing endpoint header", 400)
			return
		}
		w.WriteHeader(200)
		_, _ = w.Write([]byte("a"))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}))
	t.Cleanup(func() { close(done); srv.Close() })
	return srv
}

func TestPostIdleAndCancel(t *testing.T) {
	t.Parallel()
	srv := slowServer(t)
	tests := []struct {
		name   string
		idle   time.Duration
		cancel time.Duration
		want   llm.Category
	}{
		{"idle timeout", 50 * time.Millisecond, 0, llm.CategoryTimeout},
		{"caller cancels", -1, 50 * time.Millisecond, llm.CategoryCanceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancel > 0 {
				time.AfterFunc(tt.cancel, cancel)
			}
			ep := &llm.Endpoint{IdleTimeout: tt.idle, Headers: http.Header{"X-Extra": {"1"}}}
			resp, err := Post(ctx, ep, "p", srv.URL, []byte("{}"), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Close()
			_, err = io.ReadAll(resp.Body)
			if err == nil {
				t.Fatal("read succeeded")
			}
			if e := resp.Err("p", err); e.Category != tt.want {
				t.Fatalf("category = %s (%v), want %s", e.Category, e, tt.want)
			}
		})
	}
}

func TestPostTransportError(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close() // nothing listens any more
	_, err := Post(context.Background(), &llm.Endpoint{}, "p", url, nil, nil)
	var e *llm.Error
	if !errors.As(err, &e) || e.Category != llm.CategoryNetwork || e.Provider != "p" {
		t.Fatalf("err = %#v", err)
	}
}

func TestCutStreamIsNetwork(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		_, _ = w.Write([]byte("partial"))
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}))
	defer srv.Close()
	resp, err := Post(context.Background(), &llm.Endpoint{}, "p", srv.URL, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Close()
	_, err = io.ReadAll(resp.Body)
	if e := resp.Err("p", err); err == nil || e.Category != llm.CategoryNetwork {
		t.Fatalf("err = %v, category %v", err, e)
	}
	resp.Close() // idempotent
}
