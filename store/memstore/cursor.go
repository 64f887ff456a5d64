package memstore

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
	"time"

	"github.com/weft-run/weft/record"
)

// cursor is the position after the last session (or run) of a page: a
// key, not an offset, so that items added or deleted since do not shift
// the next page.
type cursor struct {
	createdAt int64 // UnixNano
	id        string
}

// follows reports whether an item created at at with id id comes after
// the cursor in newest-first order.
func (c cursor) follows(at time.Time, id string) bool {
	n := at.UnixNano()
	return n < c.createdAt || n == c.createdAt && id < c.id
}

// The encoding is "m1.<nanos>.<id>" followed by its CRC-32, in unpadded
// URL-safe base64 so it travels in a query string. The checksum is not a
// secret (a cursor is only a position); it makes a truncated or mangled
// cursor an error rather than a different, valid position.
const cursorVersion = "m1."

var cursorEncoding = base64.RawURLEncoding.Strict()

func encodeCursor(c cursor) string {
	payload := []byte(cursorVersion + strconv.FormatInt(c.createdAt, 10) + "." + c.id)
	return cursorEncoding.EncodeToString(binary.BigEndian.AppendUint32(payload, crc32.ChecksumIEEE(payload)))
}

// decodeCursor accepts exactly what encodeCursor produces.
func decodeCursor(s string) (cursor, error) {
	invalid := func(why string) (cursor, error) {
		return cursor{}, fmt.Errorf("memstore: list: %w (%s)", record.ErrInvalidCursor, why)
	}
	raw, err := cursorEncoding.DecodeString(s)
	if err != nil || len(raw) < 4 {
		return invalid("not a cursor")
	}
	payload := raw[:len(raw)-4]
	if crc32.ChecksumIEEE(payload) != binary.BigEndian.Uint32(raw[len(raw)-4:]) {
		return invalid("checksum mismatch")
	}
	rest, ok := strings.CutPrefix(string(payload), cursorVersion)
	if !ok {
		return invalid("unknown version")
	}
	num, id, ok := strings.Cut(rest, ".")
	n, err := strconv.ParseInt(num, 10, 64)
	if !ok || id == "" || err != nil {
		return invalid("malformed")
	}
	c := cursor{createdAt: n, id: id}
	// The decoder skips newlines: only the canonical form is accepted.
	if encodeCursor(c) != s {
		return invalid("not canonical")
	}
	return c, nil
}
