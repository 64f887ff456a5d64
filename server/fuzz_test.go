package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// FuzzDecodeBody: any body gets either a decoded request or a 400/413 with
// the error JSON; decoding never panics, and what decodes validates
// without panicking.
func FuzzDecodeBody(f *testing.F) {
	for _, s := range []string{
		``, `{}`, `null`, `{"prompt":"hi"}`, `{"prompt":"hi","max_turns":3,"stop_sequences":["x"]}`,
		`{"prompt":5}`, `{"prompt":"x"} x`, `[`, `{"prompt":"\ud800"}`, `{"max_turns":1e400}`,
		`{"stop_sequences":[null,"a"]}`, `"str"`, `{"allow":true,"reason":"r"}`, "\xff\xfe",
		`{"prompt":"hi","sesion_id":"x"}`, `{"prompt":"hi","model":"m","extra":{"deep":[1]}}`, `{"prompt":"hi","":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("POST", "/v1/agent/run", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		var q turnRequest
		if decodeBody(rec, req, &q) {
			if rec.Code != http.StatusOK || rec.Body.Len() != 0 {
				t.Fatalf("decoded, yet wrote a response: %d %s", rec.Code, rec.Body)
			}
			// A field turnRequest does not have is refused, never dropped.
			if k := unknownKey(body, "prompt", "model", "system_prompt", "max_turns", "stop_sequences", "thinking"); k != "" {
				t.Fatalf("%q decoded with the unknown field %q", body, k)
			}
			msg := q.validate()
			if msg == "" && strings.TrimSpace(q.Prompt) == "" {
				t.Fatalf("an empty prompt validates: %q", body)
			}
			return
		}
		if rec.Code != http.StatusBadRequest && rec.Code != http.StatusRequestEntityTooLarge {
			t.Fatalf("status %d for %q", rec.Code, body)
		}
		var e errorBody
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error.Type != errInvalidRequest || e.Error.Message == "" {
			t.Fatalf("error response %q (%v) for %q", rec.Body, err, body)
		}

		// Whatever decodes into a permission answer or a session request
		// does not panic either.
		var p struct {
			Allow  *bool  `json:"allow"`
			Reason string `json:"reason"`
		}
		_ = decodeJSON(bytes.NewReader(body), &p)
	})
}

// unknownKey returns a top-level key of a JSON object body that matches
// none of known (encoding/json matches names case-insensitively).
func unknownKey(body []byte, known ...string) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return ""
	}
	for k := range m {
		if !slices.ContainsFunc(known, func(n string) bool { return strings.EqualFold(n, k) }) {
			return k
		}
	}
	return ""
}

// FuzzParsePosition: a position is a non-negative integer written in
// decimal, and the header wins over the query.
func FuzzParsePosition(f *testing.F) {
	for _, s := range [][2]string{{"", ""}, {"5", ""}, {"", "7"}, {"3", "9"}, {"-1", ""}, {"", "1e3"},
		{" 4 ", ""}, {"", "9223372036854775807"}, {"", "9223372036854775808"}, {"+5", ""}, {"007", ""}, {"", "00000000000000000000"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, header, after string) {
		n, err := parsePosition(header, after)
		used := strings.TrimSpace(header)
		if used == "" {
			used = strings.TrimSpace(after)
		}
		if err != nil {
			if used == "" {
				t.Fatalf("no position is an error: %v", err)
			}
			if want, perr := strconv.ParseUint(used, 10, 63); perr == nil && !strings.HasPrefix(used, "+") {
				t.Fatalf("%q (= %d) rejected: %v", used, want, err)
			}
			return
		}
		if n < 0 {
			t.Fatalf("negative position %d from %q, %q", n, header, after)
		}
		if used == "" {
			if n != 0 {
				t.Fatalf("no position gives %d", n)
			}
			return
		}
		want, perr := strconv.ParseInt(used, 10, 64)
		if perr != nil || want != n || strings.ContainsAny(used, "+-") {
			t.Fatalf("%q parsed as %d (strconv: %d, %v)", used, n, want, perr)
		}
	})
}

// FuzzHostAllowed: without configured hosts only localhost, *.localhost
// and IP addresses pass, whatever the case, port or brackets; parsing
// never panics.
func FuzzHostAllowed(f *testing.F) {
	for _, s := range []string{"localhost:8080", "LOCALHOST.", "a.localhost", "evillocalhost", "127.0.0.1:80", "[::1]:1",
		"[::1", "::1", "fe80::1%eth0", "evil.example", "localhost.evil.example", "localhost@evil", "", ":", "[]:80", "2130706433",
		"xn--localhost", "localhost:8080:9090", "[localhost]:80", "a b", "\x00"} {
		f.Add(s)
	}
	none := newHostAllowlist(nil)
	f.Fuzz(func(t *testing.T, host string) {
		ok := none.allowed(host)
		if !ok {
			return
		}
		name := hostName(host)
		_, ipErr := netip.ParseAddr(name)
		if name != "localhost" && !strings.HasSuffix(name, ".localhost") && ipErr != nil {
			t.Fatalf("%q (name %q) is allowed", host, name)
		}
		if !none.allowed(strings.ToUpper(host)) {
			t.Fatalf("%q is allowed, its upper case is not", host)
		}
	})
}

// FuzzNetHTTPError: recognising net/http's own answers never panics, and
// recognises only error statuses.
func FuzzNetHTTPError(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 431 Request Header Fields Too Large" + netHTTPErrorHeaders + "431 Request Header Fields Too Large",
		"HTTP/1.1 400 Bad Request: x" + netHTTPErrorHeaders, "HTTP/1.1 " + netHTTPErrorHeaders, "HTTP/1.1 99" + netHTTPErrorHeaders,
		"HTTP/1.1 417 Expectation Failed\r\nConnection: close\r\n\r\n", "id: 1\n", "",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		code, _, ok := netHTTPError(p)
		if ok && (code < 400 || code > 599) {
			t.Fatalf("status %d recognised in %q", code, p)
		}
		if ok {
			_ = netHTTPErrorMessage(code, "", 4096)
		}
	})
}
