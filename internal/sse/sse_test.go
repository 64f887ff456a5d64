package sse

import (
	"errors"
	"io"
	"strings"
	"testing"
)

type ev struct {
	name, data, id string
	bare           bool
}

func readAll(t testing.TB, in string) ([]ev, error) {
	r := NewReader(strings.NewReader(in))
	var out []ev
	for {
		e, err := r.Next()
		if err != nil {
			return out, err
		}
		out = append(out, ev{string(e.Name), string(e.Data), string(e.ID), e.Bare})
	}
}

func TestReader(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want []ev
		err  error
	}{
		{"anthropic frame", "event: ping\ndata: {\"type\": \"ping\"}\n\n", []ev{{"ping", `{"type": "ping"}`, "", false}}, io.EOF},
		{"openai frames and done", "data: {\"a\":1}\n\ndata: [DONE]\n\n", []ev{{"", `{"a":1}`, "", false}, {"", "[DONE]", "", false}}, io.EOF},
		{"crlf", "data: x\r\n\r\ndata: y\r\n\r\n", []ev{{"", "x", "", false}, {"", "y", "", false}}, io.EOF},
		{"multi-line data", "data: a\ndata: b\n\n", []ev{{"", "a\nb", "", false}}, io.EOF},
		{"comments skipped", ": keepalive\n\ndata: x\n\n", []ev{{"", "x", "", false}}, io.EOF},
		{"no space after colon", "data:x\nid:7\n\n", []ev{{"", "x", "7", false}}, io.EOF},
		{"event without data is not dispatched", "event: x\n\ndata: y\n\n", []ev{{"", "y", "", false}}, io.EOF},
		{"bare json line", "data: a\n\n{\"error\":{\"code\":500}}\n", []ev{{"", "a", "", false}, {"", `{"error":{"code":500}}`, "", true}}, io.EOF},
		{"cut mid-event", "data: a\n\ndata: {\"par", []ev{{"", "a", "", false}}, io.ErrUnexpectedEOF},
		{"last line without newline then eof", "data: a\n", nil, io.ErrUnexpectedEOF},
		{"empty", "", nil, io.EOF},
		{"unknown field and retry ignored", "retry: 10\nfoo: bar\ndata: z\n\n", []ev{{"", "z", "", false}}, io.EOF},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readAll(t, tt.in)
			if !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("event %d = %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestReaderLongLine(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 100_000)
	got, err := readAll(t, "data: "+long+"\n\n")
	if err != io.EOF || len(got) != 1 || got[0].data != long {
		t.Fatalf("long line: err=%v events=%d", err, len(got))
	}
}

func TestReaderTooLarge(t *testing.T) {
	t.Parallel()
	r := NewReader(io.MultiReader(strings.NewReader("data: "), strings.NewReader(strings.Repeat("x", MaxEventSize+10))))
	if _, err := r.Next(); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
}

// FuzzReader checks that arbitrary input never panics, that every event the
// reader dispatches is well-formed, and that feeding the input in one-byte
// reads gives the same events as reading it whole.
func FuzzReader(f *testing.F) {
	for _, s := range []string{
		"event: ping\ndata: {}\n\n", "data: [DONE]\n\n", "data: a\r\ndata: b\r\n\r\n", ": c\n\n", "{\"error\":1}\n", "data", "\r\r\n\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		whole, err1 := readAll(t, in)
		r := NewReader(&oneByte{s: in})
		var split []ev
		var err2 error
		for {
			e, err := r.Next()
			if err != nil {
				err2 = err
				break
			}
			split = append(split, ev{string(e.Name), string(e.Data), string(e.ID), e.Bare})
		}
		if !errors.Is(err1, err2) && !(errors.Is(err1, ErrTooLarge) || errors.Is(err2, ErrTooLarge)) {
			t.Fatalf("errors differ: %v vs %v", err1, err2)
		}
		if len(whole) != len(split) {
			t.Fatalf("event counts differ: %d vs %d", len(whole), len(split))
		}
		for i := range whole {
			if whole[i] != split[i] {
				t.Fatalf("event %d differs: %+v vs %+v", i, whole[i], split[i])
			}
		}
	})
}

type oneByte struct {
	s string
	i int
}

func (o *oneByte) Read(p []byte) (int, error) {
	if o.i >= len(o.s) {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	p[0] = o.s[o.i]
	o.i++
	return 1, nil
}

func TestReleaseReuses(t *testing.T) {
	t.Parallel()
	for range 3 {
		r := NewReader(strings.NewReader("data: x\n\n"))
		e, err := r.Next()
		if err != nil || string(e.Data) != "x" {
			t.Fatalf("event %+v, %v", e, err)
		}
		r.Release()
		r.Release() // idempotent
	}
}
