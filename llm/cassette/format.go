package cassette

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"
)

// version is the file format version this package writes and reads.
const version = 1

type fileHeader struct {
	Cassette   int    `json:"cassette"`
	RecordedAt string `json:"recorded_at,omitempty"`
}

// interaction is one line of the file.
type interaction struct {
	Request  request   `json:"request"`
	Response *response `json:"response,omitempty"`
	// Error is a transport failure before any response.
	Error string `json:"error,omitempty"`
	// ErrorKind keeps what callers classify transport errors by (a
	// cancellation, a deadline, a network timeout), so that a replayed error
	// lands in the same llm category.
	ErrorKind string `json:"error_kind,omitempty"`
}

type request struct {
	Method  string      `json:"method"`
	URL     string      `json:"url"`
	Headers http.Header `json:"headers,omitempty"`
	// Body is the body itself when it is JSON, else a JSON string.
	Body json.RawMessage `json:"body,omitempty"`
	// BodyBase64 holds a body that is neither JSON nor UTF-8 text.
	BodyBase64 string `json:"body_base64,omitempty"`
}

type response struct {
	Status  int         `json:"status"`
	Headers http.Header `json:"headers,omitempty"`
	// Chunks are the body as the inner transport's reads returned it.
	Chunks []string `json:"chunks"`
	// Base64 says each chunk is base64, because the body is not UTF-8 text.
	Base64 bool `json:"base64,omitempty"`
	// Cut: a body read failed (the connection dropped) after the chunks.
	Cut bool `json:"cut,omitempty"`
	// Partial: the reader stopped (closed the body or cancelled) before the
	// end, so the chunks are only what it read.
	Partial    bool  `json:"partial,omitempty"`
	DurationMS int64 `json:"duration_ms"`
}

const (
	kindCanceled = "canceled"
	kindDeadline = "deadline"
	kindTimeout  = "timeout"
)

// recorded is a loaded interaction, decoded for matching and replaying.
type recorded struct {
	interaction
	u     *url.URL
	query url.Values
	// The stored request body, decoded for matching: body is the JSON
	// value when hasBody (a text body is a JSON string); bin is a base64
	// body.
	body    any
	hasBody bool
	bin     []byte
	chunks  [][]byte
}

// load parses a cassette file. name is used in error messages only.
func load(name string, data []byte) ([]*recorded, error) {
	var recs []*recorded
	header := false
	for n := 1; len(data) > 0; n++ {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		fail := func(format string, args ...any) error {
			return fmt.Errorf("cassette %s:%d: %s", name, n, fmt.Sprintf(format, args...))
		}
		if !header {
			var h struct {
				Cassette *int `json:"cassette"`
			}
			if err := json.Unmarshal(line, &h); err != nil {
				return nil, fail("invalid header line: %v", err)
			}
			if h.Cassette == nil {
				return nil, fail(`not a cassette: the first line must be the header {"cassette":%d,...}`, version)
			}
			if *h.Cassette != version {
				return nil, fail("unsupported cassette version %d (this build reads version %d)", *h.Cassette, version)
			}
			header = true
			continue
		}
		r := &recorded{}
		if err := json.Unmarshal(line, &r.interaction); err != nil {
			return nil, fail("invalid interaction: %v", err)
		}
		if err := r.check(); err != nil {
			return nil, fail("%v", err)
		}
		recs = append(recs, r)
	}
	if !header {
		return nil, fmt.Errorf("cassette %s: empty file (no header line)", name)
	}
	return recs, nil
}

// check validates a decoded interaction and fills the derived fields.
func (r *recorded) check() error {
	q := &r.Request
	if q.Method == "" {
		return fmt.Errorf("request has no method")
	}
	u, err := url.Parse(q.URL)
	if err != nil {
		return fmt.Errorf("request url: %v", err)
	}
	r.u = u
	r.query, err = url.ParseQuery(u.RawQuery)
	if err != nil {
		return fmt.Errorf("request url query: %v", err)
	}
	switch {
	case q.BodyBase64 != "" && len(q.Body) > 0:
		return fmt.Errorf("request has both body and body_base64")
	case q.BodyBase64 != "":
		if r.bin, err = base64.StdEncoding.DecodeString(q.BodyBase64); err != nil {
			return fmt.Errorf("request body_base64: %v", err)
		}
	case len(q.Body) > 0 && !isNull(q.Body):
		if r.body, err = decodeJSON(q.Body); err != nil {
			return fmt.Errorf("request body: %v", err)
		}
		r.hasBody = true
	}
	switch {
	case r.Response != nil && r.Error != "":
		return fmt.Errorf("interaction has both a response and an error")
	case r.Response == nil && r.Error == "":
		return fmt.Errorf("interaction has neither a response nor an error")
	case r.Response == nil:
		return nil
	}
	resp := r.Response
	if resp.Status < 100 || resp.Status > 999 {
		return fmt.Errorf("response status %d is not an HTTP status", resp.Status)
	}
	if resp.Cut && resp.Partial {
		return fmt.Errorf("response is both cut and partial")
	}
	r.chunks = make([][]byte, 0, len(resp.Chunks))
	for i, s := range resp.Chunks {
		b := []byte(s)
		if resp.Base64 {
			if b, err = base64.StdEncoding.DecodeString(s); err != nil {
				return fmt.Errorf("response chunk %d: %v", i, err)
			}
		}
		if len(b) > 0 {
			r.chunks = append(r.chunks, b)
		}
	}
	return nil
}

// encodeBody is how a request body is stored: JSON as itself (compacted, so
// that it fits on the line), UTF-8 text as a JSON string, anything else as
// base64. A nil result with b64 == "" means no body.
func encodeBody(b []byte) (raw json.RawMessage, b64 string) {
	switch {
	case len(b) == 0:
		return nil, ""
	case json.Valid(b):
		var buf bytes.Buffer
		if json.Compact(&buf, b) == nil {
			return buf.Bytes(), ""
		}
	case utf8.Valid(b):
		return marshalText(string(b)), ""
	}
	return nil, base64.StdEncoding.EncodeToString(b)
}

// encodeChunks stores response chunks as strings. A read may end in the
// middle of a multi-byte character; its tail is carried into the next chunk
// so that every stored chunk is valid UTF-8 and the bytes survive JSON. A
// body that still is not UTF-8 (compressed, binary) is stored base64.
func encodeChunks(chunks [][]byte) (out []string, b64 bool) {
	out = make([]string, 0, len(chunks))
	var carry []byte
	for _, c := range chunks {
		buf := c
		if len(carry) > 0 {
			buf = append(carry, c...)
			carry = nil
		}
		cut := len(buf)
		// Back up over an incomplete final character (at most 3 bytes).
		for i := len(buf) - 1; i >= 0 && i >= len(buf)-utf8.UTFMax; i-- {
			if utf8.RuneStart(buf[i]) {
				if !utf8.FullRune(buf[i:]) {
					cut = i
				}
				break
			}
		}
		if !utf8.Valid(buf[:cut]) {
			return encodeBase64(chunks), true
		}
		if cut > 0 {
			out = append(out, string(buf[:cut]))
		}
		carry = append([]byte(nil), buf[cut:]...)
	}
	if len(carry) > 0 {
		return encodeBase64(chunks), true
	}
	return out, false
}

func encodeBase64(chunks [][]byte) []string {
	out := make([]string, len(chunks))
	for i, c := range chunks {
		out[i] = base64.StdEncoding.EncodeToString(c)
	}
	return out
}

// marshalText is a JSON string without HTML escaping, so that stored text
// stays readable.
func marshalText(s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return bytes.TrimRight(buf.Bytes(), "\n")
}

// credentialHeaders never reach the file, nor do headers whose names
// contain a secretWord.
var credentialHeaders = map[string]bool{
	"authorization":       true,
	"proxy-authorization": true,
	"x-api-key":           true,
	"x-goog-api-key":      true,
	"api-key":             true,
	"cookie":              true,
	"set-cookie":          true,
}

// telemetryHeaders change between runs and mean nothing to a replay.
var telemetryHeaders = map[string]bool{
	"user-agent":        true,
	"date":              true,
	"x-goog-api-client": true,
}

// secretWords mark a header or query parameter name as a credential.
var secretWords = []string{"token", "secret", "key", "auth", "password", "signature"}

func secretName(name string) bool {
	n := strings.ToLower(name)
	for _, w := range secretWords {
		if strings.Contains(n, w) {
			return true
		}
	}
	return n == "sig"
}

func credentialHeader(name string) bool {
	n := strings.ToLower(name)
	if credentialHeaders[n] {
		return true
	}
	// Rate-limit headers ("x-ratelimit-remaining-tokens") hold counts, not
	// credentials, and are worth replaying.
	return !strings.Contains(n, "ratelimit") && secretName(n)
}

func dropHeader(name string) bool {
	n := strings.ToLower(name)
	return telemetryHeaders[n] || strings.HasPrefix(n, "x-stainless-") || credentialHeader(n)
}

func cleanHeaders(h http.Header) http.Header {
	out := make(http.Header, len(h))
	for k, vs := range h {
		if !dropHeader(k) {
			out[k] = append([]string(nil), vs...)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// cleanURL drops credentials from a URL: userinfo, the fragment, and secret
// query parameters, keeping the remaining parameters in their order.
func cleanURL(u *url.URL) *url.URL {
	v := *u
	v.User = nil
	v.Fragment, v.RawFragment = "", ""
	v.RawQuery = cleanQuery(u.RawQuery)
	if v.RawQuery == "" {
		v.ForceQuery = false
	}
	return &v
}

func cleanQuery(q string) string {
	if q == "" {
		return ""
	}
	parts := strings.Split(q, "&")
	kept := parts[:0]
	for _, p := range parts {
		name, _, _ := strings.Cut(p, "=")
		if n, err := url.QueryUnescape(name); err == nil {
			name = n
		}
		if p != "" && !secretName(name) {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, "&")
}

// pathQuery is what replay matches and messages show of a URL.
func pathQuery(u *url.URL) string {
	s := u.EscapedPath()
	if s == "" {
		s = "/"
	}
	if u.RawQuery != "" {
		s += "?" + u.RawQuery
	}
	return s
}
