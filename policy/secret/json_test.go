package secret

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestRedactJSON(t *testing.T) {
	t.Parallel()
	s := mustSet(t,
		"QUOTE", `pa"ss"word`,
		"BACKSLASH", `C:\secret\dir`,
		"NEWLINE", "line-one\nline-two",
		"HTML", "<tag>&amp;-secret",
		"SLASH", "a/b/c/d/e/f",
		"CTRL", "bell\x07ctrl\x01",
		"PLAIN", "plain-secret-1",
		"NUMBER", "12345678901",
		"UNICODE", "schlüssel-€-ключ",
		"EMOJI", "key-😀-secret",
	)
	type doc struct {
		Text  string            `json:"text"`
		List  []string          `json:"list"`
		Map   map[string]string `json:"map"`
		Plain string            `json:"plain"`
	}
	values := []string{`pa"ss"word`, `C:\secret\dir`, "line-one\nline-two", "<tag>&amp;-secret", "a/b/c/d/e/f", "bell\x07ctrl\x01", "plain-secret-1", "schlüssel-€-ключ", "key-😀-secret"}
	for _, v := range values {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			in := doc{
				Text:  "before " + v + " after",
				List:  []string{v, "x" + v + v},
				Map:   map[string]string{"k": v, v: "value is key"},
				Plain: "nothing here",
			}
			raw, err := json.Marshal(in) // escapes <, > and & as \u003c...
			must(t, err)
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			must(t, enc.Encode(in))
			for _, form := range [][]byte{raw, buf.Bytes(), []byte(strings.ReplaceAll(string(raw), "/", `\/`))} {
				out := s.RedactJSON(form)
				if !json.Valid(out) {
					t.Fatalf("invalid JSON %s from %s", out, form)
				}
				var got doc
				must(t, json.Unmarshal(out, &got))
				want := doc{
					Text:  s.Redact(in.Text),
					List:  []string{s.Redact(in.List[0]), s.Redact(in.List[1])},
					Map:   map[string]string{"k": s.Redact(v), s.Redact(v): "value is key"},
					Plain: "nothing here",
				}
				gotJ, _ := json.Marshal(got)
				wantJ, _ := json.Marshal(want)
				if !bytes.Equal(gotJ, wantJ) {
					t.Fatalf("decoded %s, want %s (from %s)", gotJ, wantJ, out)
				}
				if strings.Contains(string(out), v) {
					t.Fatalf("value still in %s", out)
				}
			}
		})
	}
}

func TestRedactJSONCases(t *testing.T) {
	t.Parallel()
	s := mustSet(t, "NUM", "12345678901", "PW", "plain-secret-1", "SP", "\u2028sep-secret")
	tests := []struct {
		name, in, want string
		valid          bool
	}{
		{"unchanged", `{"a": "b", "n": 1}`, `{"a": "b", "n": 1}`, true},
		{"string", `{"a": "x plain-secret-1 y"}`, `{"a": "x [SECRET:PW] y"}`, true},
		{"escaped unicode", `{"a": "plain\u002dsecret-1"}`, `{"a": "[SECRET:PW]"}`, true},
		{"number", `{"n": 12345678901, "m": 1}`, `{"n": "[SECRET:NUM]", "m": 1}`, true},
		{"number inside a longer number", `[9912345678901.5e3]`, `["99[SECRET:NUM].5e3"]`, true},
		{"key", `{"plain-secret-1": true}`, `{"[SECRET:PW]": true}`, true},
		{"line separator escaped", `["\u2028sep-secret"]`, `["[SECRET:SP]"]`, true},
		{"surrogate pair", `["\ud83d\ude00 plain-secret-1"]`, "[\"\U0001F600 [SECRET:PW]\"]", true},
		{"unterminated string", `{"a": "plain-secret-1`, `{"a": "[SECRET:PW]`, false},
		{"bad escape", `["plain-secret-1 \x"]`, `["[SECRET:PW] \x"]`, false},
		{"not JSON at all", `log line plain-secret-1 end`, `log line "[SECRET:PW]" end`, false},
		{"value across structure", `["plain-","secret-1"]`, `["plain-","secret-1"]`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := string(s.RedactJSON([]byte(tt.in)))
			if got != tt.want {
				t.Fatalf("RedactJSON(%s) = %s, want %s", tt.in, got, tt.want)
			}
			if tt.valid && !json.Valid([]byte(got)) {
				t.Fatalf("invalid JSON: %s", got)
			}
		})
	}
}

func TestRedactJSONStructuralValue(t *testing.T) {
	t.Parallel()
	// A value that spans a string boundary cannot be redacted token-wise;
	// leaking it would be worse than breaking the syntax.
	s := mustSet(t, "ODD", `x","y":"z`)
	got := string(s.RedactJSON([]byte(`{"a":"x","y":"z"}`)))
	if strings.Contains(got, `x","y":"z`) || !strings.Contains(got, "[SECRET:ODD]") {
		t.Fatalf("got %s", got)
	}
}

func FuzzRedactJSON(f *testing.F) {
	f.Add([]byte(`{"a":"plain-secret-1","b":[1,2,"\u0070lain-secret-1"]}`))
	f.Add([]byte(`"pa\"ss\"word"`))
	f.Add([]byte(`["\ud800", "\\", 12345678901]`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		s := mustSet(t, "PW", "plain-secret-1", "Q", `pa"ss"word`, "NUM", "12345678901")
		out := s.RedactJSON(raw)
		if json.Valid(raw) {
			if !json.Valid(out) {
				t.Fatalf("valid %q became invalid %q", raw, out)
			}
			var v any
			must(t, json.Unmarshal(out, &v))
			if b, _ := json.Marshal(v); bytes.Contains(b, []byte("plain-secret-1")) || bytes.Contains(b, []byte("12345678901")) || strings.Contains(string(b), `pa\"ss\"word`) {
				t.Fatalf("a value survives in %s", b)
			}
		}
	})
}
