package secret

import (
	"bytes"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// RedactJSON is [Set.Redact] for JSON text (event payloads, persisted
// rows). A value can appear escaped inside a JSON string (a password with
// a quote or backslash, a newline, "<" written as \u003c, "/" as \/), so
// every string literal is decoded, redacted and, if anything changed,
// re-encoded: valid JSON stays valid and decodes to the redacted text. A
// value inside a number or bare word is replaced by a JSON string of the
// redacted word. Input that is not valid JSON is redacted as well as it can
// be; as a last resort, any value still present verbatim is replaced even if
// that breaks the syntax. When nothing matches, raw is returned as is.
func (s *Set) RedactJSON(raw []byte) []byte {
	if s == nil {
		return raw
	}
	return s.load().redactJSON(raw)
}

// redactJSON is RedactJSON with this snapshot's values.
func (m *matcher) redactJSON(raw []byte) []byte {
	if len(m.entries) == 0 {
		return raw
	}
	if bytes.IndexByte(raw, '\\') < 0 && !m.containsBytes(raw) {
		return raw
	}
	var out []byte
	last := 0 // raw[:last] is accounted for in out
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c == '"':
			end, closed := jsonStringEnd(raw, i)
			if rep, changed := m.redactJSONString(raw[i:end], closed); changed {
				out = append(out, raw[last:i]...)
				out = append(out, rep...)
				last = end
			}
			i = end
		case jsonWordByte(c):
			j := i + 1
			for j < len(raw) && jsonWordByte(raw[j]) {
				j++
			}
			if word := raw[i:j]; m.containsBytes(word) {
				red, _ := m.scan(string(word), true)
				out = append(out, raw[last:i]...)
				out = appendJSONString(out, red)
				last = j
			}
			i = j
		default:
			i++
		}
	}
	if out == nil {
		out = raw
	} else {
		out = append(out, raw[last:]...)
	}
	// A value made of structural characters, or straddling a string's
	// boundary, survives the token-wise pass: leaking it would be worse
	// than invalid JSON.
	if m.containsBytes(out) {
		red, _ := m.scan(string(out), true)
		return []byte(red)
	}
	return out
}

// redactJSONString redacts one string literal (with its quotes; closed is
// false when the input ends inside it). It reports false when nothing
// changed.
func (m *matcher) redactJSONString(lit []byte, closed bool) ([]byte, bool) {
	if !closed || len(lit) < 2 {
		return m.redactBrokenJSONString(lit)
	}
	body := lit[1 : len(lit)-1]
	var text string
	if bytes.IndexByte(body, '\\') < 0 {
		if !m.containsBytes(body) {
			return nil, false
		}
		text = string(body)
	} else {
		var ok bool
		if text, ok = jsonUnescape(body); !ok {
			return m.redactBrokenJSONString(lit)
		}
	}
	red, _ := m.scan(text, true)
	if red == text {
		return nil, false
	}
	return appendJSONString(nil, red), true
}

// redactBrokenJSONString handles a literal that cannot be decoded: it
// replaces values verbatim and in their JSON-escaped spelling.
func (m *matcher) redactBrokenJSONString(lit []byte) ([]byte, bool) {
	s, _ := m.scan(string(lit), true)
	for _, e := range m.entries {
		esc := appendJSONString(nil, e.value)
		esc = esc[1 : len(esc)-1]
		if string(esc) != e.value {
			s = strings.ReplaceAll(s, string(esc), e.token)
		}
	}
	if s == string(lit) {
		return nil, false
	}
	return []byte(s), true
}

func (m *matcher) containsBytes(b []byte) bool {
	for _, e := range m.entries {
		if bytes.Contains(b, e.bvalue) {
			return true
		}
	}
	return false
}

// jsonWordByte reports whether c can be part of a number or bare word.
func jsonWordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '-' || c == '.' || c == '_'
}

// jsonStringEnd returns the index just past the string literal starting at
// raw[i] (a quote), and false if raw ends first.
func jsonStringEnd(raw []byte, i int) (int, bool) {
	for j := i + 1; j < len(raw); j++ {
		switch raw[j] {
		case '\\':
			j++
		case '"':
			return j + 1, true
		}
	}
	return len(raw), false
}

// jsonUnescape decodes the body of a JSON string literal. Bytes that are
// not escapes are kept as they are, invalid UTF-8 included, so re-encoding
// changes nothing but the redacted parts.
func jsonUnescape(body []byte) (string, bool) {
	var b strings.Builder
	b.Grow(len(body))
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i >= len(body) {
			return "", false
		}
		switch body[i] {
		case '"', '\\', '/':
			b.WriteByte(body[i])
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r, ok := jsonHex4(body[i+1:])
			if !ok {
				return "", false
			}
			i += 4
			if utf16.IsSurrogate(r) {
				// A pair is \uD8xx\uDCxx; anything else decodes to U+FFFD,
				// as encoding/json does, and the next escape stands alone.
				dec := utf8.RuneError
				if len(body) >= i+7 && body[i+1] == '\\' && body[i+2] == 'u' {
					if r2, ok := jsonHex4(body[i+3:]); ok {
						if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
							dec = d
							i += 6
						}
					}
				}
				r = dec
			}
			b.WriteRune(r)
		default:
			return "", false
		}
	}
	return b.String(), true
}

func jsonHex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		r <<= 4
		switch {
		case '0' <= c && c <= '9':
			r |= rune(c - '0')
		case 'a' <= c && c <= 'f':
			r |= rune(c-'a') + 10
		case 'A' <= c && c <= 'F':
			r |= rune(c-'A') + 10
		default:
			return 0, false
		}
	}
	return r, true
}

// appendJSONString appends s as a JSON string literal, escaping only what
// JSON requires.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c == '\t':
			dst = append(dst, '\\', 't')
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}
