package postgres

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"

	"github.com/weft-run/weft/record"
)

// ErrInvalidCursor is record.ErrInvalidCursor, wrapped by ListSessions' and
// ListRuns' error for a cursor they did not hand out.
var ErrInvalidCursor = record.ErrInvalidCursor

// cursor is the keyset position after the last session (or run) of a
// page.
type cursor struct {
	createdAt int64
	id        string
}

// The cursor is opaque to callers but deliberately simple inside:
// "1.<created_at nanos>.<id>" and a CRC-32 of that, in unpadded URL-safe
// base64 so that it can travel in a query string. The leading version lets
// the format change without misreading old cursors. The checksum is not
// security (a cursor is only a position) but catches the usual mangling,
// a truncated copy and paste, which would otherwise often still decode to
// a valid, different position.
const cursorVersion = "1."

var cursorEncoding = base64.RawURLEncoding.Strict()

func encodeCursor(c cursor) string {
	payload := []byte(cursorVersion + strconv.FormatInt(c.createdAt, 10) + "." + c.id)
	return cursorEncoding.EncodeToString(binary.BigEndian.AppendUint32(payload, crc32.ChecksumIEEE(payload)))
}

// decodeCursor accepts exactly the strings encodeCursor produces, so that
// a cursor that decodes is one this store handed out (or an exact forgery
// of one, which is harmless: it is only a position).
func decodeCursor(s string) (cursor, error) {
	invalid := func(why string) (cursor, error) {
		return cursor{}, fmt.Errorf("postgres: list: %w (%s)", ErrInvalidCursor, why)
	}
	if s == "" {
		return invalid("empty")
	}
	raw, err := cursorEncoding.DecodeString(s)
	if err != nil {
		return invalid("not base64url")
	}
	if len(raw) < 4 {
		return invalid("too short")
	}
	payload, sum := raw[:len(raw)-4], binary.BigEndian.Uint32(raw[len(raw)-4:])
	if crc32.ChecksumIEEE(payload) != sum {
		return invalid("checksum mismatch")
	}
	rest, ok := strings.CutPrefix(string(payload), cursorVersion)
	if !ok {
		return invalid("unknown version")
	}
	num, id, ok := strings.Cut(rest, ".")
	if !ok || id == "" {
		return invalid("no session id")
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || strconv.FormatInt(n, 10) != num {
		return invalid("bad timestamp")
	}
	c := cursor{createdAt: n, id: id}
	// The decoder skips newlines, which would make two strings one cursor.
	if encodeCursor(c) != s {
		return invalid("not canonical")
	}
	return c, nil
}
