package plan

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// The helpers below walk JSON that json.Valid has already accepted, so
// they index without bounds checks beyond what valid JSON guarantees.
// Working on raw bytes rather than decoding into maps keeps object key
// order and number text exactly as the author wrote them, which is what
// makes rendering a template without placeholders an identity.

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipWS(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// skipString returns the index just past the string starting at b[i] ('"').
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}

// skipValue returns the index just past the value starting at b[i].
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return len(b)
	}
	for i < len(b) {
		switch b[i] {
		case ',', ']', '}', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}

// decodeString returns the content of the JSON string literal raw.
func decodeString(raw []byte) string {
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return string(inner)
	}
	var s string
	_ = json.Unmarshal(raw, &s) // valid by construction
	return s
}

// trimValue strips the whitespace around a valid JSON value.
func trimValue(b []byte) []byte {
	return bytes.TrimFunc(b, func(r rune) bool { return r < 128 && isSpace(byte(r)) })
}

// objectGet returns the value of key in the object v (trimmed). Like
// encoding/json, the last of duplicate keys wins.
func objectGet(v []byte, key string) ([]byte, bool) {
	var found []byte
	ok := false
	i := skipWS(v, 1)
	if v[i] == '}' {
		return nil, false
	}
	for {
		ks := i
		ke := skipString(v, ks)
		i = skipWS(v, ke)
		i = skipWS(v, i+1) // ':'
		vs := i
		ve := skipValue(v, vs)
		if decodeString(v[ks:ke]) == key {
			found, ok = v[vs:ve], true
		}
		i = skipWS(v, ve)
		if v[i] != ',' {
			return found, ok
		}
		i = skipWS(v, i+1)
	}
}

// arrayGet returns element n of the array v (trimmed) and the array's
// length when n is out of range.
func arrayGet(v []byte, n int) ([]byte, int, bool) {
	i := skipWS(v, 1)
	if v[i] == ']' {
		return nil, 0, false
	}
	for k := 0; ; k++ {
		ve := skipValue(v, i)
		if k == n {
			return v[i:ve], 0, true
		}
		i = skipWS(v, ve)
		if v[i] != ',' {
			return nil, k + 1, false
		}
		i = skipWS(v, i+1)
	}
}

// kindOf names the JSON type of the trimmed value v, for error messages.
func kindOf(v []byte) string {
	switch v[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// appendCompact appends v without insignificant whitespace.
func appendCompact(dst, v []byte) []byte {
	for i := 0; i < len(v); {
		c := v[i]
		if c == '"' {
			e := skipString(v, i)
			dst = append(dst, v[i:e]...)
			i = e
			continue
		}
		if !isSpace(c) {
			dst = append(dst, c)
		}
		i++
	}
	return dst
}

func compactRaw(v []byte) json.RawMessage { return appendCompact(make([]byte, 0, len(v)), v) }

const hexDigits = "0123456789abcdef"

// appendQuoted appends s as a JSON string. Unlike encoding/json it does not
// escape <, > and &: rendered arguments go to tools, not HTML pages.
// Invalid UTF-8 becomes U+FFFD, as encoding/json does.
func appendQuoted(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendPointerToken appends one JSON pointer token (RFC 6901 escaping).
func appendPointerToken(dst []byte, tok string) []byte {
	dst = append(dst, '/')
	for i := 0; i < len(tok); i++ {
		switch tok[i] {
		case '~':
			dst = append(dst, '~', '0')
		case '/':
			dst = append(dst, '~', '1')
		default:
			dst = append(dst, tok[i])
		}
	}
	return dst
}

// appendKeyToken appends the pointer token for an object key given as its
// raw JSON literal, without allocating when it has no escapes.
func appendKeyToken(dst, raw []byte) []byte {
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') >= 0 {
		return appendPointerToken(dst, decodeString(raw))
	}
	dst = append(dst, '/')
	for _, c := range inner {
		switch c {
		case '~':
			dst = append(dst, '~', '0')
		case '/':
			dst = append(dst, '~', '1')
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

func appendPointerIndex(dst []byte, n int) []byte {
	return strconv.AppendInt(append(dst, '/'), int64(n), 10)
}
