package cassette

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// decodeJSON decodes one JSON value, numbers kept as written so that large
// integers compare exactly.
func decodeJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the JSON value")
	}
	return v, nil
}

// liveBody is a live request body in the form the recording holds.
type liveBody struct {
	val     any
	hasBody bool
	bin     []byte
}

func newLiveBody(b []byte) liveBody {
	raw, b64 := encodeBody(b)
	if b64 != "" {
		return liveBody{bin: b}
	}
	if raw == nil || isNull(raw) {
		return liveBody{}
	}
	v, err := decodeJSON(raw)
	if err != nil {
		// encodeBody only returns valid JSON; keep the bytes comparable anyway.
		return liveBody{bin: b}
	}
	return liveBody{val: v, hasBody: true}
}

func isNull(raw []byte) bool { return string(bytes.TrimSpace(raw)) == "null" }

// mismatch describes how the live request differs from r, or returns "".
func (r *recorded) mismatch(method string, u *url.URL, body []byte) string {
	if method != r.Request.Method {
		return fmt.Sprintf("method differs: recorded %q, got %q", r.Request.Method, method)
	}
	lu := cleanURL(u)
	lq, _ := url.ParseQuery(lu.RawQuery)
	if lu.Path != r.u.Path || !sameQuery(lq, r.query) {
		return fmt.Sprintf("url differs: recorded %q, got %q", pathQuery(r.u), pathQuery(lu))
	}
	return r.bodyDiff(newLiveBody(body))
}

func sameQuery(a, b url.Values) bool {
	if len(a) != len(b) {
		return false
	}
	for k, va := range a {
		vb, ok := b[k]
		if !ok || !slices.Equal(va, vb) {
			return false
		}
	}
	return true
}

func (r *recorded) bodyDiff(live liveBody) string {
	recBin, liveBin := r.bin != nil, live.bin != nil
	switch {
	case !r.hasBody && !recBin && !live.hasBody && !liveBin:
		return ""
	case r.hasBody && live.hasBody:
		if d := diffJSON("$", r.body, live.val); d != "" {
			return "body differs at " + d
		}
		return ""
	case recBin && liveBin:
		if bytes.Equal(r.bin, live.bin) {
			return ""
		}
		i := 0
		for i < len(r.bin) && i < len(live.bin) && r.bin[i] == live.bin[i] {
			i++
		}
		return fmt.Sprintf("binary body differs at byte %d: recorded %d bytes, got %d bytes", i, len(r.bin), len(live.bin))
	}
	return fmt.Sprintf("body differs: recorded %s, got %s", r.bodyKind(), live.kind())
}

func (r *recorded) bodyKind() string {
	return bodyKind(r.hasBody, r.body, r.bin)
}

func (l liveBody) kind() string { return bodyKind(l.hasBody, l.val, l.bin) }

func bodyKind(has bool, v any, bin []byte) string {
	switch {
	case has:
		return show(v)
	case bin != nil:
		return fmt.Sprintf("%d bytes of binary data", len(bin))
	}
	return "no body"
}

// diffJSON returns "<path>: recorded X, got Y" for the first place where a
// and b differ (object keys visited in sorted order), or "".
func diffJSON(path string, a, b any) string {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			break
		}
		keys := make([]string, 0, len(av)+len(bv))
		for k := range av {
			keys = append(keys, k)
		}
		for k := range bv {
			if _, ok := av[k]; !ok {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			p := path + pathKey(k)
			x, inA := av[k]
			y, inB := bv[k]
			switch {
			case !inB:
				return fmt.Sprintf("%s: recorded %s, got nothing", p, show(x))
			case !inA:
				return fmt.Sprintf("%s: recorded nothing, got %s", p, show(y))
			}
			if d := diffJSON(p, x, y); d != "" {
				return d
			}
		}
		return ""
	case []any:
		bv, ok := b.([]any)
		if !ok {
			break
		}
		for i := 0; i < len(av) || i < len(bv); i++ {
			p := path + "[" + strconv.Itoa(i) + "]"
			switch {
			case i >= len(bv):
				return fmt.Sprintf("%s: recorded %s, got nothing (%d elements instead of %d)", p, show(av[i]), len(bv), len(av))
			case i >= len(av):
				return fmt.Sprintf("%s: recorded nothing, got %s (%d elements instead of %d)", p, show(bv[i]), len(bv), len(av))
			}
			if d := diffJSON(p, av[i], bv[i]); d != "" {
				return d
			}
		}
		return ""
	case string:
		bv, ok := b.(string)
		if !ok {
			break
		}
		if av == bv {
			return ""
		}
		x, y := showStrings(av, bv)
		return fmt.Sprintf("%s: recorded %s, got %s", path, x, y)
	case json.Number:
		if bv, ok := b.(json.Number); ok && sameNumber(av, bv) {
			return ""
		}
	default:
		// bool and nil.
		if reflect.DeepEqual(a, b) {
			return ""
		}
	}
	return fmt.Sprintf("%s: recorded %s, got %s", path, show(a), show(b))
}

func sameNumber(a, b json.Number) bool {
	if a == b {
		return true
	}
	x, err1 := a.Float64()
	y, err2 := b.Float64()
	return err1 == nil && err2 == nil && x == y
}

func pathKey(k string) string {
	if k == "" {
		return `[""]`
	}
	for i, r := range k {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return "[" + string(marshalText(k)) + "]"
		}
	}
	return "." + k
}

const showMax = 80

// show renders a JSON value for a one-line message, shortened.
func show(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf("%v", v)
	}
	s := strings.TrimRight(buf.String(), "\n")
	if len(s) > showMax {
		s = truncateUTF8(s, showMax) + "…"
	}
	return s
}

// showStrings renders two differing strings around where they first differ,
// so that a change deep in a long prompt is visible.
func showStrings(a, b string) (string, string) {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	start := 0
	if i > showMax/2 {
		start = i - showMax/4
		for start > 0 && !utf8.RuneStart(a[start]) {
			start--
		}
	}
	return snippet(a, start), snippet(b, start)
}

func snippet(s string, start int) string {
	t := s[start:]
	more := len(t) > showMax
	if more {
		t = truncateUTF8(t, showMax)
	}
	if start > 0 {
		t = "…" + t
	}
	if more {
		t += "…"
	}
	return string(marshalText(t))
}

func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
