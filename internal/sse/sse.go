// Package sse reads Server-Sent Events streams as the model providers send
// them. It is on the streaming hot path, so it hands out slices of its own
// buffer instead of allocating per line.
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"sync"
)

// MaxEventSize bounds one event's data, so that a server that never sends a
// blank line cannot make the reader grow without limit.
const MaxEventSize = 16 << 20

// ErrTooLarge is returned for an event over MaxEventSize.
var ErrTooLarge = errors.New("sse: event exceeds 16 MiB")

// Event is one dispatched event. Its slices are valid until the next call to
// Next.
type Event struct {
	Name []byte // the "event:" field; empty when absent
	Data []byte // the "data:" lines joined with '\n'
	ID   []byte
	// Bare is set for a line that is not an SSE field but a raw JSON value
	// (starting with '{' or '['). Gemini sends mid-stream errors that way;
	// Data holds the line.
	Bare bool
}

// Reader decodes an SSE stream.
type Reader struct {
	r    *bufio.Reader
	name []byte
	data []byte
	id   []byte
	line []byte
	has  bool // any field seen since the last dispatch
	seen bool // any data line seen since the last dispatch
}

// bufSize is the read buffer. Longer lines are gathered in Reader.line.
const bufSize = 16 << 10

// bufPool recycles read buffers: every model call opens a stream, and a
// fresh buffer per stream was most of the bytes a whole agent turn
// allocated (bench/agentloop).
var bufPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, bufSize) }}

// NewReader reads events from r. Call Release when done with it.
func NewReader(r io.Reader) *Reader {
	br := bufPool.Get().(*bufio.Reader)
	br.Reset(r)
	return &Reader{r: br}
}

// Release returns the reader's buffer for reuse; the Reader and the slices
// of the last Event must not be used afterwards. It is idempotent.
func (r *Reader) Release() {
	if r.r == nil {
		return
	}
	r.r.Reset(nil)
	bufPool.Put(r.r)
	r.r = nil
}

// readLine returns the next line without its terminator ("\n", "\r\n" or a
// lone "\r" at the end of a line). The slice is valid until the next call.
func (r *Reader) readLine() ([]byte, error) {
	line, err := r.r.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		r.line = append(r.line[:0], line...)
		for err == bufio.ErrBufferFull {
			line, err = r.r.ReadSlice('\n')
			r.line = append(r.line, line...)
			if len(r.line) > MaxEventSize {
				return nil, ErrTooLarge
			}
		}
		line = r.line
	}
	if err != nil {
		if err == io.EOF && len(line) > 0 {
			err = nil // a last line without a terminator still counts
		} else {
			return nil, err
		}
	}
	n := len(line)
	if n > 0 && line[n-1] == '\n' {
		n--
	}
	if n > 0 && line[n-1] == '\r' {
		n--
	}
	return line[:n], nil
}

// Next returns the next event. At the end of the stream it returns io.EOF;
// an event cut off by the end of the stream is not dispatched, as the SSE
// specification requires, and io.ErrUnexpectedEOF is returned instead so
// that callers can tell a clean end from a cut one.
func (r *Reader) Next() (Event, error) {
	r.name, r.data, r.id, r.has, r.seen = r.name[:0], r.data[:0], r.id[:0], false, false
	for {
		line, err := r.readLine()
		if err != nil {
			if err == io.EOF && r.has {
				return Event{}, io.ErrUnexpectedEOF
			}
			return Event{}, err
		}
		if len(line) == 0 {
			if !r.seen {
				// No data: per the specification nothing is dispatched.
				r.name, r.id, r.has = r.name[:0], r.id[:0], false
				continue
			}
			return Event{Name: r.name, Data: r.data, ID: r.id}, nil
		}
		if line[0] == ':' {
			continue // a comment, e.g. a keep-alive
		}
		if (line[0] == '{' || line[0] == '[') && !r.has {
			r.data = append(r.data, line...)
			return Event{Data: r.data, Bare: true}, nil
		}
		field, value := line, []byte(nil)
		if i := bytes.IndexByte(line, ':'); i >= 0 {
			field, value = line[:i], line[i+1:]
			if len(value) > 0 && value[0] == ' ' {
				value = value[1:]
			}
		}
		switch string(field) {
		case "data":
			if r.seen {
				r.data = append(r.data, '\n')
			}
			r.data = append(r.data, value...)
			r.seen, r.has = true, true
			if len(r.data) > MaxEventSize {
				return Event{}, ErrTooLarge
			}
		case "event":
			r.name = append(r.name, value...)
			r.has = true
		case "id":
			r.id = append(r.id, value...)
			r.has = true
		}
		// retry and unknown fields are ignored, as the specification says.
	}
}
