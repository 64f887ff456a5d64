package cassette

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

// FuzzLoad: arbitrary file contents never panic, and whatever loads can be
// replayed and matched without panicking.
func FuzzLoad(f *testing.F) {
	for _, s := range []string{
		"",
		`{"cassette":1}`,
		`{"cassette":2}`,
		`{"cassette":1}` + "\n" + okLine("POST", "/v1/chat", `{"a":[1,2]}`),
		`{"cassette":1}` + "\n" + `{"request":{"method":"GET","url":"/x?alt=sse","body_base64":"AAE="},"response":{"status":200,"base64":true,"chunks":["AAE=",""],"cut":true}}`,
		`{"cassette":1}` + "\n" + `{"request":{"method":"GET","url":"/x","body":"text"},"error":"boom","error_kind":"timeout"}`,
		`{"cassette":1}` + "\n" + `{"request":{"method":"GET","url":"/x"},"response":{"status":204,"chunks":[],"partial":true}}`,
		`{"cassette":1}` + "\n" + `{"request":{"method":"G","url":"::"},"response":{"status":200}}`,
		"{\"cassette\":1}\r\n\r\n{\"request\":null}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, err := load("fuzz.jsonl", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "cassette fuzz.jsonl") {
				t.Errorf("error does not name the file: %v", err)
			}
			return
		}
		for _, r := range recs {
			_ = r.mismatch(r.Request.Method, r.u, []byte(`{"x":1}`))
			if r.Response != nil {
				resp := r.response(newRequest(t))
				var buf bytes.Buffer
				_, _ = buf.ReadFrom(resp.Body)
			}
		}
	})
}

// FuzzBodyMatch: matching two bodies never panics, a body always matches
// itself (and its re-indented self), and a mismatch message is one line.
func FuzzBodyMatch(f *testing.F) {
	for _, p := range [][2]string{
		{`{"a":1}`, `{ "a" : 1 }`},
		{`{"messages":[{"content":"hi"}]}`, `{"messages":[{"content":"hello"}]}`},
		{`[1,2,3]`, `[1,2]`},
		{`"text"`, `text`},
		{"plain\ntext", "plain\ntext!"},
		{"\xff\xfe", "\xff"},
		{`{"n":1e2}`, `{"n":100}`},
		{``, `null`},
		{`{"a-b":{"":null}}`, `{"a-b":{"":false}}`},
	} {
		f.Add([]byte(p[0]), []byte(p[1]))
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		r := recordedBody(t, a)
		if d := r.bodyDiff(newLiveBody(a)); d != "" {
			t.Fatalf("%q does not match itself: %s", a, d)
		}
		if json.Valid(a) {
			var ind bytes.Buffer
			if json.Indent(&ind, a, "", "  ") == nil {
				if d := r.bodyDiff(newLiveBody(ind.Bytes())); d != "" {
					t.Fatalf("%q does not match its indented self: %s", a, d)
				}
			}
		}
		d := r.bodyDiff(newLiveBody(b))
		if strings.ContainsAny(d, "\r\n") {
			t.Errorf("message is not one line: %q", d)
		}
		if d == "" && json.Valid(a) && json.Valid(b) {
			// Matching treats numbers by value; plain decoding does too.
			var va, vb any
			if json.Unmarshal(a, &va) == nil && json.Unmarshal(b, &vb) == nil && !reflect.DeepEqual(va, vb) {
				t.Errorf("%q and %q matched but are different JSON", a, b)
			}
		}
	})
}

func newRequest(t *testing.T) *http.Request {
	req, err := http.NewRequest("GET", "http://h/x", nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// recordedBody builds a loaded interaction whose request body is b, through
// the same encoding a recording uses.
func recordedBody(t *testing.T, b []byte) *recorded {
	raw, b64 := encodeBody(b)
	line, err := json.Marshal(interaction{Request: request{Method: "POST", URL: "/x", Body: raw, BodyBase64: b64}, Error: "e"})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := load("fuzz.jsonl", append([]byte(`{"cassette":1}`+"\n"), line...))
	if err != nil {
		t.Fatalf("a recorded body does not load: %v\n%s", err, line)
	}
	return recs[0]
}

// FuzzChunks: any sequence of body reads survives encoding to the file and
// loading back, byte for byte and, for text, boundary for boundary where no
// character was split.
func FuzzChunks(f *testing.F) {
	f.Add([]byte("data: a\n\n"), []byte("data: b"), []byte("\n\n"))
	f.Add([]byte("x\xe2\x98"), []byte("\x83y"), []byte(""))
	f.Add([]byte("\x1f\x8b\x08"), []byte("a"), []byte("\xff"))
	f.Add([]byte("é"), []byte("\xe2"), []byte("\x98"))
	f.Fuzz(func(t *testing.T, a, b, c []byte) {
		chunks := [][]byte{a, b, c}
		strs, b64 := encodeChunks(chunks)
		line, err := json.Marshal(interaction{
			Request:  request{Method: "GET", URL: "/x"},
			Response: &response{Status: 200, Chunks: strs, Base64: b64},
		})
		if err != nil {
			t.Fatal(err)
		}
		recs, err := load("fuzz.jsonl", append([]byte(`{"cassette":1}`+"\n"), line...))
		if err != nil {
			t.Fatalf("does not load: %v\n%s", err, line)
		}
		got := bytes.Join(recs[0].chunks, nil)
		if want := bytes.Join(chunks, nil); !bytes.Equal(got, want) {
			t.Fatalf("bytes changed: %q -> %q (base64 %v)", want, got, b64)
		}
		for _, ch := range recs[0].chunks {
			if len(ch) == 0 {
				t.Fatal("an empty chunk was kept")
			}
		}
		if b64 {
			for i, s := range strs {
				if dec, _ := base64.StdEncoding.DecodeString(s); !bytes.Equal(dec, chunks[i]) {
					t.Fatalf("base64 chunk %d changed", i)
				}
			}
		}
	})
}
