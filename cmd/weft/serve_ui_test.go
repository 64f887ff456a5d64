package main

import (
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeUIFlags checks what --no-ui and --ui-dir give the server: the
// embedded UI by default, none with --no-ui, a directory's build with
// --ui-dir (refused without an index.html there), and an error for both.
func TestServeUIFlags(t *testing.T) {
	t.Parallel()
	dev := t.TempDir()
	if err := os.WriteFile(filepath.Join(dev, "index.html"), []byte("dev build"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		f       serveFlags
		wantErr string
		body    string // prefix of GET /; "" for no handler
	}{
		{name: "embedded", f: serveFlags{}, body: "<!doctype html>"},
		{name: "no-ui", f: serveFlags{noUI: true}},
		{name: "ui-dir", f: serveFlags{uiDir: dev}, body: "dev build"},
		{name: "ui-dir without index.html", f: serveFlags{uiDir: t.TempDir()}, wantErr: "no index.html"},
		{name: "both", f: serveFlags{noUI: true, uiDir: dev}, wantErr: "contradict"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := tc.f.ui()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.body == "" {
				if h != nil {
					t.Fatal("got a UI handler, want none")
				}
				return
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
			b, _ := io.ReadAll(rec.Result().Body)
			if !strings.HasPrefix(strings.ToLower(string(b)), strings.ToLower(tc.body)) {
				t.Fatalf("GET / = %.60q, want %q...", b, tc.body)
			}
		})
	}
}
