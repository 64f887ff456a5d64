package web

import (
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

func testAssets() fstest.MapFS {
	return fstest.MapFS{
		"index.html":           {Data: []byte("<!doctype html><title>weft</title><div id=app></div>")},
		"assets/index-abc.js":  {Data: []byte(strings.Repeat("console.log('weft');\n", 100))},
		"assets/index-abc.css": {Data: []byte("body{}")},
		"assets/sub/x.txt":     {Data: []byte("x")},
	}
}

func get(t *testing.T, h http.Handler, method, path string, header ...string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

func TestHandlerServesSPA(t *testing.T) {
	t.Parallel()
	h := New(testAssets(), true)
	for _, tc := range []struct {
		method, path string
		status       int
		body         string // prefix
		cache        string
		ctype        string
	}{
		{"GET", "/", 200, "<!doctype html>", "no-cache", "text/html"},
		{"GET", "/index.html", 200, "<!doctype html>", "no-cache", "text/html"},
		{"GET", "/chat", 200, "<!doctype html>", "no-cache", "text/html"},       // a route of the app
		{"GET", "/runs/run_1", 200, "<!doctype html>", "no-cache", "text/html"}, // deep route
		{"GET", "/assets", 200, "<!doctype html>", "no-cache", "text/html"},     // a directory is not listed
		{"GET", "/assets/index-abc.css", 200, "body{}", "public, max-age=31536000, immutable", "text/css"},
		{"GET", "/assets/missing-123.js", 404, "not found", "", ""}, // a missing file is not the page
		{"GET", "/../embed.go", 404, "not found", "", ""},           // cleaned to /embed.go: not among the assets
		{"HEAD", "/", 200, "", "no-cache", "text/html"},
		{"POST", "/", 405, "method not allowed", "", ""},
		{"PUT", "/chat", 405, "method not allowed", "", ""},
	} {
		resp := get(t, h, tc.method, tc.path)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != tc.status || !strings.HasPrefix(string(body), tc.body) {
			t.Errorf("%s %s: %d %.60q, want %d %q...", tc.method, tc.path, resp.StatusCode, body, tc.status, tc.body)
		}
		if tc.cache != "" && resp.Header.Get("Cache-Control") != tc.cache {
			t.Errorf("%s %s: Cache-Control %q, want %q", tc.method, tc.path, resp.Header.Get("Cache-Control"), tc.cache)
		}
		if tc.ctype != "" && !strings.HasPrefix(resp.Header.Get("Content-Type"), tc.ctype) {
			t.Errorf("%s %s: Content-Type %q, want %q", tc.method, tc.path, resp.Header.Get("Content-Type"), tc.ctype)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("%s %s: Content-Security-Policy %q", tc.method, tc.path, csp)
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s %s: no nosniff", tc.method, tc.path)
		}
	}
}

func TestHandlerGzipAndETag(t *testing.T) {
	t.Parallel()
	h := New(testAssets(), true)
	want := testAssets()["assets/index-abc.js"].Data

	plain := get(t, h, "GET", "/assets/index-abc.js")
	pb, _ := io.ReadAll(plain.Body)
	if plain.Header.Get("Content-Encoding") != "" || !bytes.Equal(pb, want) {
		t.Fatalf("without Accept-Encoding: encoding %q, %d bytes", plain.Header.Get("Content-Encoding"), len(pb))
	}

	for _, ae := range []string{"gzip", "br, gzip;q=0.8", "GZIP"} {
		resp := get(t, h, "GET", "/assets/index-abc.js", "Accept-Encoding", ae)
		if resp.Header.Get("Content-Encoding") != "gzip" {
			t.Fatalf("Accept-Encoding %q: Content-Encoding %q", ae, resp.Header.Get("Content-Encoding"))
		}
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(zr)
		if !bytes.Equal(got, want) {
			t.Fatalf("gunzipped body differs: %d bytes, want %d", len(got), len(want))
		}
		tag := resp.Header.Get("ETag")
		if tag == "" || tag == plain.Header.Get("ETag") {
			t.Fatalf("ETag %q (plain %q): want one per encoding", tag, plain.Header.Get("ETag"))
		}
		// Revalidation of the same encoding: 304.
		again := get(t, h, "GET", "/assets/index-abc.js", "Accept-Encoding", ae, "If-None-Match", tag)
		if again.StatusCode != http.StatusNotModified {
			t.Fatalf("If-None-Match %s: status %d, want 304", tag, again.StatusCode)
		}
	}
	if resp := get(t, h, "GET", "/assets/index-abc.js", "Accept-Encoding", "gzip;q=0"); resp.Header.Get("Content-Encoding") != "" {
		t.Fatalf("gzip;q=0 got gzip")
	}
}

func TestDirHandler(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := DirHandler(dir); err == nil {
		t.Fatal("DirHandler on a directory without index.html: no error")
	}
	if err := os.WriteFile(filepath.Join(dir, "index.html"), []byte("v1"), 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := DirHandler(dir)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(get(t, h, "GET", "/flows/x").Body); string(b) != "v1" {
		t.Fatalf("got %q", b)
	}
	// A rebuild shows without a restart.
	if err := os.WriteFile(filepath.Join(dir, "index.html"), []byte("v2"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(get(t, h, "GET", "/").Body); string(b) != "v2" {
		t.Fatalf("after rebuild got %q", b)
	}
}

// TestEmbeddedBuild checks the committed build is embedded and whole:
// index.html and every asset it references.
func TestEmbeddedBuild(t *testing.T) {
	t.Parallel()
	assets := Assets()
	index, err := fs.ReadFile(assets, "index.html")
	if err != nil {
		t.Fatalf("the embedded build has no index.html (run npm run build in web/): %v", err)
	}
	refs := 0
	for _, part := range strings.Split(string(index), `"/assets/`)[1:] {
		name := "assets/" + part[:strings.IndexByte(part, '"')]
		if _, err := fs.Stat(assets, name); err != nil {
			t.Errorf("index.html references %s, which is not embedded: %v", name, err)
		}
		refs++
	}
	if refs == 0 {
		t.Fatalf("index.html references no assets: %s", index)
	}
	resp := get(t, Handler(), "GET", "/")
	if b, _ := io.ReadAll(resp.Body); !bytes.Equal(b, index) {
		t.Fatal("Handler does not serve the embedded index.html")
	}
}
