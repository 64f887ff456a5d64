package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/weft-run/weft/session"
)

// The error types of seed 000; every error response is
// {"error":{"type":...,"message":...}} with one of them.
const (
	errInvalidRequest = "invalid_request_error" // 400 (and 405, 408, 413, 415, 431)
	errAuthentication = "authentication_error"  // 401
	errPermission     = "permission_error"      // 403
	errNotFound       = "not_found_error"       // 404
	errConflict       = "conflict_error"        // 409
	errRateLimit      = "rate_limit_error"      // 429
	errInternal       = "internal_error"        // 500 (and 503)
)

// MaxBodyBytes bounds a request body (seed 000: 10 MB).
const MaxBodyBytes = 10 << 20

// MaxPromptChars bounds a prompt, in characters (seed 000).
const MaxPromptChars = 100_000

type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

// writeError writes the error JSON with status.
func writeError(w http.ResponseWriter, status int, typ, msg string) {
	writeJSON(w, status, errorBody{Error: errorDetail{Type: typ, Message: msg}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// Only our own response types reach here; a failure is a bug, and
		// the client still deserves well-formed JSON.
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"type":"internal_error","message":"encoding the response failed"}}`)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// writeRuntimeError maps an error of the runtime onto a status. Anything
// unexpected is logged with the request id and answered with a generic 500,
// so that internals (paths, SQL) do not leak to clients.
func (s *Server) writeRuntimeError(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, session.ErrNotFound):
		writeError(w, http.StatusNotFound, errNotFound, notFoundMessage(r))
	case errors.Is(err, session.ErrExists):
		writeError(w, http.StatusConflict, errConflict, "session "+quote(r.PathValue("id"))+" already exists")
	case errors.Is(err, session.ErrAnswered):
		writeError(w, http.StatusConflict, errConflict, "permission request "+quote(r.PathValue("request_id"))+" was already answered")
	case errors.Is(err, session.ErrNotBudget):
		writeError(w, http.StatusBadRequest, errInvalidRequest, "request "+quote(r.PathValue("request_id"))+" is not a budget request")
	case errors.Is(err, session.ErrClosed):
		w.Header().Set("Retry-After", "5")
		writeError(w, http.StatusServiceUnavailable, errInternal, "the server is shutting down")
	case errors.Is(err, context.Canceled) && r.Context().Err() != nil:
		// The client went away; nobody reads an answer.
	default:
		s.log.Error("request failed", "request_id", requestID(r.Context()), "method", r.Method,
			"path", r.URL.Path, "error", err)
		writeError(w, http.StatusInternalServerError, errInternal,
			"internal error (request "+requestID(r.Context())+")")
	}
}

func notFoundMessage(r *http.Request) string {
	if rid := r.PathValue("request_id"); rid != "" {
		return "permission request " + quote(rid) + " not found (unknown, expired or its turn ended)"
	}
	return "session " + quote(r.PathValue("id")) + " not found"
}

// quote shows a client-supplied string in a message without letting it
// forge structure (newlines, quotes) or grow the message without bound.
func quote(s string) string {
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return fmt.Sprintf("%q", s)
}

// decodeBody decodes the JSON request body into dst. An empty body decodes
// as {} (so that optional bodies, like POST /v1/sessions', may be left
// out). It writes the error response itself and reports whether decoding
// succeeded: 415 for a body that is not declared as JSON, 413 over
// MaxBodyBytes, 408 when the client does not send the body in time, 400
// naming the problem otherwise.
func decodeBody(w http.ResponseWriter, r *http.Request, dst any) bool {
	if !requireJSON(w, r) {
		return false
	}
	if r.ContentLength > MaxBodyBytes {
		writeError(w, http.StatusRequestEntityTooLarge, errInvalidRequest, tooLargeMessage)
		return false
	}
	body := &bodyReader{r: http.MaxBytesReader(w, r.Body, MaxBodyBytes)}
	if err := decodeJSON(body, dst); err != nil {
		if body.err != nil {
			writeBodyError(w, body.err)
		} else {
			writeError(w, http.StatusBadRequest, errInvalidRequest, err.Error())
		}
		return false
	}
	return true
}

// bodyReader remembers the error reading the body failed with, to tell a
// transport failure from bad JSON.
type bodyReader struct {
	r   io.Reader
	err error
}

func (b *bodyReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF && b.err == nil {
		b.err = err
	}
	return n, err
}

// writeBodyError answers a request whose body could not be read: 413 over
// MaxBodyBytes, 408 when the body read deadline passed (and the connection
// is closed: the rest of the body may still be on its way), 400 otherwise.
func writeBodyError(w http.ResponseWriter, err error) {
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		writeError(w, http.StatusRequestEntityTooLarge, errInvalidRequest, tooLargeMessage)
	case errors.Is(err, os.ErrDeadlineExceeded):
		w.Header().Set("Connection", "close")
		writeError(w, http.StatusRequestTimeout, errInvalidRequest, "the request body did not arrive in time")
	default:
		writeError(w, http.StatusBadRequest, errInvalidRequest, "reading the request body failed")
	}
}

const tooLargeMessage = "request body exceeds 10 MB"

// decodeJSON decodes exactly one JSON value from body into dst, with
// messages a client can act on. An unknown field is an error that names
// it: a misspelt optional field ("sesion_id") would otherwise be dropped
// without a word, and the request run as if it had not been sent.
func decodeJSON(body io.Reader, dst any) error {
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	err := dec.Decode(dst)
	if errors.Is(err, io.EOF) {
		return nil // empty body
	}
	if err == nil {
		// Exactly one value: trailing garbage usually means a broken client.
		if _, terr := dec.Token(); !errors.Is(terr, io.EOF) {
			var tooLarge *http.MaxBytesError
			if errors.As(terr, &tooLarge) {
				return terr
			}
			return errors.New("malformed JSON: unexpected data after the request object")
		}
		return nil
	}
	var (
		syntax    *json.SyntaxError
		typ       *json.UnmarshalTypeError
		tooLarge  *http.MaxBytesError
		invalidUT *json.InvalidUnmarshalError
	)
	switch {
	case errors.As(err, &tooLarge):
		return err
	case errors.As(err, &syntax):
		return fmt.Errorf("malformed JSON at byte %d: %s", syntax.Offset, strings.TrimPrefix(syntax.Error(), "json: "))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("malformed JSON: the body ends in the middle of a value")
	case errors.As(err, &typ):
		if typ.Field == "" {
			return fmt.Errorf("the request body must be a JSON object, not %s", typ.Value)
		}
		return fmt.Errorf("field %q must be %s, not %s", typ.Field, jsonKind(typ.Type.Kind().String()), typ.Value)
	case errors.As(err, &invalidUT):
		return err // a bug in the caller, not the client
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		// encoding/json has no type for it; the message names the field.
		return errors.New(strings.TrimPrefix(err.Error(), "json: "))
	}
	return fmt.Errorf("malformed JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
}

// jsonKind names a Go kind the way a JSON client thinks of it.
func jsonKind(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "an integer"
	case "float32", "float64":
		return "a number"
	case "slice", "array":
		return "an array"
	case "map", "struct":
		return "an object"
	}
	return "a " + kind
}
