// Package web is weft's web UI: the built assets of the Vue application in
// this directory (web/dist, committed, rebuilt and compared by CI), embedded
// in the binary so that `weft serve` serves the UI with no Node.js on the
// machine, and the http.Handler that serves them (server.Config.UI).
//
// The UI is a client of the public HTTP API only. Its files are public: they
// hold no secret and no data, so they are served without the bearer token
// (the UI asks for the token, then every API call carries it).
package web

import (
	"bytes"
	"compress/gzip"
	"embed"
	"errors"
	"io/fs"
	"mime"
	"net/http"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"
)

//go:embed all:dist
var dist embed.FS

// Assets returns the embedded build (the contents of web/dist).
func Assets() fs.FS {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err) // the directive above guarantees dist exists
	}
	return sub
}

// Handler serves the embedded UI.
func Handler() http.Handler { return New(Assets(), true) }

// DirHandler serves a UI build from a directory on disk (weft serve
// --ui-dir, for development): files are read at each request, so a rebuild
// shows without a restart. It fails when dir has no index.html.
func DirHandler(dir string) (http.Handler, error) {
	if _, err := os.Stat(path.Join(dir, "index.html")); err != nil {
		return nil, errors.New("--ui-dir " + dir + ": no index.html there (build the UI with `npm run build` in web/ and point at its dist directory)")
	}
	return New(os.DirFS(dir), false), nil
}

// New serves the files of assets as a single-page application:
//
//   - a file that exists is served, content-hashed files under assets/ as
//     immutable (cached for a year), everything else revalidated;
//   - any other path without a file extension is a route of the app and
//     gets index.html (so /runs/run_1 can be reloaded or bookmarked); a
//     missing file with an extension is a 404;
//   - only GET and HEAD; gzip when the client accepts it.
//
// immutable says the files never change (embedded): compressed bodies are
// then computed once and kept.
func New(assets fs.FS, immutable bool) http.Handler {
	return &handler{fs: assets, cache: immutable}
}

type handler struct {
	fs    fs.FS
	cache bool
	enc   sync.Map // name (+ "\x00gz") -> encoded, when cache
}

// securityHeaders apply to every UI response. The policy allows what the
// app needs and no more: its own scripts (no inline script, no eval), its
// own styles plus inline style attributes (the canvas positions nodes with
// them), and requests to its own origin (the API).
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "+
		"img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'; object-src 'none'; "+
		"base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w.Header())
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	name := strings.TrimPrefix(path.Clean("/"+r.URL.Path), "/")
	if name == "" {
		name = "index.html"
	}
	data, err := fs.ReadFile(h.fs, name)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || isDirErr(h.fs, name) {
			if path.Ext(name) != "" {
				http.Error(w, "not found", http.StatusNotFound)
				return
			}
			// A route of the single-page app.
			name = "index.html"
			data, err = fs.ReadFile(h.fs, name)
		}
		if err != nil {
			http.Error(w, "the UI is not available: "+err.Error(), http.StatusInternalServerError)
			return
		}
	}
	hd := w.Header()
	ctype := mime.TypeByExtension(path.Ext(name))
	if ctype == "" {
		ctype = http.DetectContentType(data)
	}
	hd.Set("Content-Type", ctype)
	if strings.HasPrefix(name, "assets/") {
		// Vite names these by content hash: a new build has new names.
		hd.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		hd.Set("Cache-Control", "no-cache")
	}
	hd.Add("Vary", "Accept-Encoding")
	gz := compressible(ctype) && len(data) > 512 && acceptsGzip(r)
	if gz {
		hd.Set("Content-Encoding", "gzip")
	}
	e := h.encoded(name, data, gz)
	// ServeContent does ranges and conditional requests; the zero modtime
	// leaves Last-Modified out (embedded files have none), the ETag is a
	// hash of the body.
	hd.Set("ETag", e.etag)
	http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(e.body))
}

// encoded is a file's body as sent, gzipped or not, with its ETag.
type encoded struct {
	body []byte
	etag string
}

func isDirErr(fsys fs.FS, name string) bool {
	st, err := fs.Stat(fsys, name)
	return err == nil && st.IsDir()
}

func (h *handler) encoded(name string, data []byte, gz bool) encoded {
	key := name
	if gz {
		key += "\x00gz"
	}
	if h.cache {
		if e, ok := h.enc.Load(key); ok {
			return e.(encoded)
		}
	}
	e := encoded{body: data}
	if gz {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		_, _ = zw.Write(data)
		_ = zw.Close()
		e.body = buf.Bytes()
	}
	e.etag = etag(e.body)
	if h.cache {
		h.enc.Store(key, e)
	}
	return e
}

func compressible(ctype string) bool {
	return strings.HasPrefix(ctype, "text/") || strings.Contains(ctype, "javascript") ||
		strings.Contains(ctype, "json") || strings.Contains(ctype, "svg")
}

func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		enc, q, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(enc), "gzip") {
			q = strings.TrimSpace(q)
			return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
		}
	}
	return false
}

// etag is a strong validator from the body's FNV-1a hash.
func etag(b []byte) string {
	var hsh uint64 = 14695981039346656037
	for _, c := range b {
		hsh ^= uint64(c)
		hsh *= 1099511628211
	}
	return `"` + strconv.FormatUint(hsh, 36) + `"`
}
