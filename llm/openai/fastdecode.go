package openai

import (
	"bytes"
	"strconv"
	"unicode/utf8"
)

// A stream is dozens to hundreds of small chunks, and decoding them with
// encoding/json (reflection, a validating pre-scan, a field lookup per key)
// was the largest single cost of an agent turn after the syscalls
// (bench/agentloop). fastChunk decodes the shapes servers actually send
// with a hand-written scanner into the same reused chunk.
//
// It is a fast path, not a second JSON implementation: it succeeds only
// when it is sure encoding/json would have decoded the payload without
// error into exactly the same chunk, and reports false for anything else
// (escaped keys, keys that match a field only case-insensitively,
// duplicated fields, surrogate escapes, invalid UTF-8 in a kept string,
// non-integer numbers in integer fields, type mismatches, an error object,
// deep nesting, invalid JSON). decode then runs encoding/json on the
// payload, whose result or error is the reference. FuzzFastChunk holds
// the two to that.

// fastMaxDepth bounds the nesting of the values the scanner skips; deeper
// payloads go to encoding/json, which has its own limit.
const fastMaxDepth = 64

// maxIntDigits is the most digits that always fit in an int.
const maxIntDigits = 9 + 9*(strconv.IntSize/64)

// fastScanner reads one payload. buf is scratch for unescaping strings,
// kept across frames.
type fastScanner struct {
	b   []byte
	i   int
	buf []byte
}

func (s *fastScanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next byte after white space, or 0 at the end.
func (s *fastScanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *fastScanner) lit(w string) bool {
	if len(s.b)-s.i >= len(w) && string(s.b[s.i:s.i+len(w)]) == w {
		s.i += len(w)
		return true
	}
	return false
}

// null consumes a null if one is next. ok is false for a value starting
// with 'n' that is not null.
func (s *fastScanner) null() (isNull, ok bool) {
	if s.peek() != 'n' {
		return false, true
	}
	return true, s.lit("null")
}

// key reads the next member name of an object whose '{' is consumed:
// end reports the closing '}'. Names with escapes or non-ASCII bytes
// fail, because encoding/json unescapes and case-folds them (Unicode
// folding included) before matching fields.
func (s *fastScanner) key(first bool) (name []byte, end, ok bool) {
	c := s.peek()
	if c == '}' {
		s.i++
		return nil, true, true
	}
	if !first {
		if c != ',' {
			return nil, false, false
		}
		s.i++
		c = s.peek()
	}
	if c != '"' {
		return nil, false, false
	}
	s.i++
	start := s.i
	for ; s.i < len(s.b); s.i++ {
		c := s.b[s.i]
		if c == '"' {
			break
		}
		if c < 0x20 || c == '\\' || c >= utf8.RuneSelf {
			return nil, false, false
		}
	}
	if s.i >= len(s.b) {
		return nil, false, false
	}
	name = s.b[start:s.i]
	s.i++
	if s.peek() != ':' {
		return nil, false, false
	}
	s.i++
	return name, false, true
}

// unknown reports whether an unmatched name is safe to skip: encoding/json
// would store a name that equals a field's case-insensitively.
func unknown(name []byte, fields ...string) bool {
	for _, f := range fields {
		// Names are ASCII here (key), so fold-equal names have one length.
		if len(name) == len(f) && bytes.EqualFold(name, []byte(f)) {
			return false
		}
	}
	return true
}

// str decodes a string, or a null into nothing (encoding/json leaves the
// field as it was).
func (s *fastScanner) str(dst *string) bool {
	if isNull, ok := s.null(); isNull || !ok {
		return ok
	}
	if s.peek() != '"' {
		return false
	}
	s.i++
	start := s.i
	ascii := true
	for ; s.i < len(s.b); s.i++ {
		c := s.b[s.i]
		switch {
		case c == '"':
			raw := s.b[start:s.i]
			s.i++
			// encoding/json replaces invalid UTF-8 with U+FFFD; such a
			// string is left to it.
			if !ascii && !utf8.Valid(raw) {
				return false
			}
			*dst = string(raw)
			return true
		case c == '\\':
			return s.strEscaped(dst, start)
		case c < 0x20:
			return false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return false
}

// strEscaped finishes a string with escapes that started at start.
func (s *fastScanner) strEscaped(dst *string, start int) bool {
	s.buf = append(s.buf[:0], s.b[start:s.i]...)
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			if !utf8.Valid(s.buf) {
				return false
			}
			*dst = string(s.buf)
			return true
		case c < 0x20:
			return false
		case c != '\\':
			s.buf = append(s.buf, c)
			s.i++
			continue
		}
		if s.i+1 >= len(s.b) {
			return false
		}
		e := s.b[s.i+1]
		s.i += 2
		switch e {
		case '"', '\\', '/':
			s.buf = append(s.buf, e)
		case 'b':
			s.buf = append(s.buf, '\b')
		case 'f':
			s.buf = append(s.buf, '\f')
		case 'n':
			s.buf = append(s.buf, '\n')
		case 'r':
			s.buf = append(s.buf, '\r')
		case 't':
			s.buf = append(s.buf, '\t')
		case 'u':
			r, ok := s.hex4()
			// Surrogates (pairs or lone) are left to encoding/json.
			if !ok || r >= 0xD800 && r < 0xE000 {
				return false
			}
			s.buf = utf8.AppendRune(s.buf, r)
		default:
			return false
		}
	}
	return false
}

func (s *fastScanner) hex4() (rune, bool) {
	if len(s.b)-s.i < 4 {
		return 0, false
	}
	var r rune
	for _, c := range s.b[s.i : s.i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	s.i += 4
	return r, true
}

// int decodes an integer that surely fits in an int (maxIntDigits), or a
// null into nothing. Fractions and exponents fail: encoding/json refuses
// them for an int field.
func (s *fastScanner) int(dst *int) bool {
	if isNull, ok := s.null(); isNull || !ok {
		return ok
	}
	neg := s.peek() == '-'
	if neg {
		s.i++
	}
	start := s.i
	n := 0
	for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
		n = n*10 + int(s.b[s.i]-'0')
		s.i++
	}
	digits := s.i - start
	if digits == 0 || digits > maxIntDigits || digits > 1 && s.b[start] == '0' {
		return false
	}
	if s.i < len(s.b) {
		switch s.b[s.i] {
		case '.', 'e', 'E':
			return false
		}
	}
	if neg {
		n = -n
	}
	*dst = n
	return true
}

// skip consumes any valid JSON value.
func (s *fastScanner) skip(depth int) bool {
	if depth > fastMaxDepth {
		return false
	}
	switch c := s.peek(); {
	case c == '"':
		return s.skipStr()
	case c == '{':
		s.i++
		for first := true; ; first = false {
			c := s.peek()
			if c == '}' {
				s.i++
				return true
			}
			if !first {
				if c != ',' {
					return false
				}
				s.i++
			}
			if s.peek() != '"' || !s.skipStr() || s.peek() != ':' {
				return false
			}
			s.i++
			if !s.skip(depth + 1) {
				return false
			}
		}
	case c == '[':
		s.i++
		for first := true; ; first = false {
			c := s.peek()
			if c == ']' {
				s.i++
				return true
			}
			if !first {
				if c != ',' {
					return false
				}
				s.i++
			}
			if !s.skip(depth + 1) {
				return false
			}
		}
	case c == 't':
		return s.lit("true")
	case c == 'f':
		return s.lit("false")
	case c == 'n':
		return s.lit("null")
	case c == '-' || '0' <= c && c <= '9':
		return s.skipNumber()
	}
	return false
}

func (s *fastScanner) skipStr() bool {
	s.i++ // the opening quote
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return true
		case c < 0x20:
			return false
		case c == '\\':
			if s.i+1 >= len(s.b) {
				return false
			}
			switch s.b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				s.i += 2
				if _, ok := s.hex4(); !ok {
					return false
				}
			default:
				return false
			}
		default:
			s.i++
		}
	}
	return false
}

func (s *fastScanner) digits() int {
	start := s.i
	for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i - start
}

// skipNumber consumes a number in JSON's grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *fastScanner) skipNumber() bool {
	if s.b[s.i] == '-' {
		s.i++
	}
	start := s.i
	if n := s.digits(); n == 0 || n > 1 && s.b[start] == '0' {
		return false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if s.digits() == 0 {
			return false
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if s.digits() == 0 {
			return false
		}
	}
	return true
}

// open consumes the '{' of an object, or a null (ok, not opened): a null
// leaves a struct field as it was.
func (s *fastScanner) open() (opened, ok bool) {
	switch s.peek() {
	case '{':
		s.i++
		return true, true
	case 'n':
		return false, s.lit("null")
	}
	return false, false
}

// fastChunk decodes data into c (reset by the caller) and reports whether
// it could; usage is the storage c.Usage points at.
func (s *fastScanner) chunk(data []byte, c *chunk, usage *chunkUsage) bool {
	s.b, s.i = data, 0
	if s.peek() != '{' {
		return false
	}
	s.i++
	var seen uint8
	for first := true; ; first = false {
		name, end, ok := s.key(first)
		if !ok {
			return false
		}
		if end {
			break
		}
		switch string(name) {
		case "choices":
			if !once(&seen, 1) || !s.choices(c) {
				return false
			}
		case "usage":
			if !once(&seen, 2) {
				return false
			}
			opened, ok := s.open()
			if !ok {
				return false
			}
			if opened {
				*usage = chunkUsage{}
				c.Usage = usage
				if !s.usage(usage) {
					return false
				}
			} else {
				c.Usage = nil
			}
		case "error":
			// Only a null goes the fast way; an error is decoded by
			// encoding/json (it is rare, and its raw bytes are kept).
			if isNull, ok := s.null(); !isNull || !ok {
				return false
			}
		default:
			if !unknown(name, "choices", "usage", "error") || !s.skip(1) {
				return false
			}
		}
	}
	// Only white space may follow the object.
	s.ws()
	return s.i == len(s.b)
}

// once sets bit in seen and reports whether it was clear: a field that
// appears twice is left to encoding/json, which merges the two.
func once(seen *uint8, bit uint8) bool {
	if *seen&bit != 0 {
		return false
	}
	*seen |= bit
	return true
}

func (s *fastScanner) choices(c *chunk) bool {
	if isNull, ok := s.null(); isNull || !ok {
		return ok // c.Choices is already empty
	}
	if s.peek() != '[' {
		return false
	}
	s.i++
	for first := true; ; first = false {
		ch := s.peek()
		if ch == ']' {
			s.i++
			return true
		}
		if !first {
			if ch != ',' {
				return false
			}
			s.i++
		}
		// reset left the elements up to cap zeroed, with the tool-call
		// slices' capacity kept.
		n := len(c.Choices)
		if n < cap(c.Choices) {
			c.Choices = c.Choices[:n+1]
		} else {
			c.Choices = append(c.Choices, choice{})
		}
		if !s.choice(&c.Choices[n]) {
			return false
		}
	}
}

func (s *fastScanner) choice(ch *choice) bool {
	opened, ok := s.open()
	if !opened || !ok {
		return ok
	}
	var seen uint8
	for first := true; ; first = false {
		name, end, ok := s.key(first)
		if !ok {
			return false
		}
		if end {
			return true
		}
		switch string(name) {
		case "index":
			ok = once(&seen, 1) && s.int(&ch.Index)
		case "delta":
			ok = once(&seen, 2) && s.delta(&ch.Delta)
		case "finish_reason":
			ok = once(&seen, 4) && s.str(&ch.FinishReason)
		default:
			ok = unknown(name, "index", "delta", "finish_reason") && s.skip(2)
		}
		if !ok {
			return false
		}
	}
}

func (s *fastScanner) delta(d *delta) bool {
	opened, ok := s.open()
	if !opened || !ok {
		return ok
	}
	var seen uint8
	for first := true; ; first = false {
		name, end, ok := s.key(first)
		if !ok {
			return false
		}
		if end {
			return true
		}
		switch string(name) {
		case "content":
			ok = once(&seen, 1) && s.str(&d.Content)
		case "refusal":
			ok = once(&seen, 2) && s.str(&d.Refusal)
		case "reasoning_content":
			ok = once(&seen, 4) && s.str(&d.ReasoningContent)
		case "reasoning":
			ok = once(&seen, 8) && s.str(&d.Reasoning)
		case "tool_calls":
			ok = once(&seen, 16) && s.toolCalls(d)
		default:
			ok = unknown(name, "content", "refusal", "reasoning_content", "reasoning", "tool_calls") && s.skip(3)
		}
		if !ok {
			return false
		}
	}
}

func (s *fastScanner) toolCalls(d *delta) bool {
	if isNull, ok := s.null(); isNull || !ok {
		return ok
	}
	if s.peek() != '[' {
		return false
	}
	s.i++
	for first := true; ; first = false {
		ch := s.peek()
		if ch == ']' {
			s.i++
			return true
		}
		if !first {
			if ch != ',' {
				return false
			}
			s.i++
		}
		n := len(d.ToolCalls)
		if n < cap(d.ToolCalls) {
			d.ToolCalls = d.ToolCalls[:n+1]
		} else {
			d.ToolCalls = append(d.ToolCalls, toolCallDelta{})
		}
		if !s.toolCall(&d.ToolCalls[n]) {
			return false
		}
	}
}

func (s *fastScanner) toolCall(tc *toolCallDelta) bool {
	opened, ok := s.open()
	if !opened || !ok {
		return ok
	}
	var seen uint8
	for first := true; ; first = false {
		name, end, ok := s.key(first)
		if !ok {
			return false
		}
		if end {
			return true
		}
		switch string(name) {
		case "index":
			ok = once(&seen, 1) && s.int(&tc.Index)
		case "id":
			ok = once(&seen, 2) && s.str(&tc.ID)
		case "function":
			ok = once(&seen, 4) && s.function(tc)
		default:
			ok = unknown(name, "index", "id", "function") && s.skip(4)
		}
		if !ok {
			return false
		}
	}
}

func (s *fastScanner) function(tc *toolCallDelta) bool {
	opened, ok := s.open()
	if !opened || !ok {
		return ok
	}
	var seen uint8
	for first := true; ; first = false {
		name, end, ok := s.key(first)
		if !ok {
			return false
		}
		if end {
			return true
		}
		switch string(name) {
		case "name":
			ok = once(&seen, 1) && s.str(&tc.Function.Name)
		case "arguments":
			ok = once(&seen, 2) && s.str(&tc.Function.Arguments)
		default:
			ok = unknown(name, "name", "arguments") && s.skip(5)
		}
		if !ok {
			return false
		}
	}
}

func (s *fastScanner) usage(u *chunkUsage) bool {
	var seen uint8
	for first := true; ; first = false {
		name, end, ok := s.key(first)
		if !ok {
			return false
		}
		if end {
			return true
		}
		switch string(name) {
		case "prompt_tokens":
			ok = once(&seen, 1) && s.int(&u.PromptTokens)
		case "completion_tokens":
			ok = once(&seen, 2) && s.int(&u.CompletionTokens)
		case "prompt_cache_hit_tokens":
			ok = once(&seen, 4) && s.int(&u.PromptCacheHitTokens)
		case "prompt_tokens_details":
			ok = once(&seen, 8) && s.details(&u.PromptTokensDetails.CachedTokens, "cached_tokens")
		case "completion_tokens_details":
			ok = once(&seen, 16) && s.details(&u.CompletionTokensDetails.ReasoningTokens, "reasoning_tokens")
		default:
			ok = unknown(name, "prompt_tokens", "completion_tokens", "prompt_cache_hit_tokens", "prompt_tokens_details", "completion_tokens_details") && s.skip(2)
		}
		if !ok {
			return false
		}
	}
}

// details decodes an object of which one integer field is kept.
func (s *fastScanner) details(dst *int, field string) bool {
	opened, ok := s.open()
	if !opened || !ok {
		return ok
	}
	seen := false
	for first := true; ; first = false {
		name, end, ok := s.key(first)
		if !ok {
			return false
		}
		if end {
			return true
		}
		switch {
		case string(name) == field:
			if seen {
				return false
			}
			seen = true
			ok = s.int(dst)
		default:
			ok = unknown(name, field) && s.skip(3)
		}
		if !ok {
			return false
		}
	}
}
