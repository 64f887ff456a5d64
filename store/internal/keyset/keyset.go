// Package keyset is the page cursor every store hands out: the position
// after the last session (or run) of a page, newest first, as a key rather
// than an offset, so that items added or deleted since do not shift the
// next page.
package keyset

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

// Cursor is the position after an item created at CreatedAt (Unix
// nanoseconds) with ID.
type Cursor struct {
	CreatedAt int64
	ID        string
}

// After is the cursor after an item created at at with id.
func After(at time.Time, id string) Cursor { return Cursor{CreatedAt: at.UnixNano(), ID: id} }

// Follows reports whether an item created at at with id id comes after
// the cursor in newest-first order.
func (c Cursor) Follows(at time.Time, id string) bool {
	n := at.UnixNano()
	return n < c.CreatedAt || n == c.CreatedAt && id < c.ID
}

// Codec encodes cursors for one store. The cursor is opaque to callers but
// deliberately simple inside: "<version><created_at nanos>.<id>" and a
// CRC-32 of that, in unpadded URL-safe base64 so that it can travel in a
// query string. The version (which differs between stores) lets the format
// change without misreading old cursors, and keeps one store's cursor from
// being taken by another. The checksum is not security (a cursor is only a
// position) but catches the usual mangling, a truncated copy and paste,
// which would otherwise often still decode to a valid, different position.
type Codec struct {
	Version string // e.g. "1."
	Store   string // names the store in errors, e.g. "sqlite"
}

var encoding = base64.RawURLEncoding.Strict()

// Encode is c's string form.
func (k Codec) Encode(c Cursor) string {
	payload := []byte(k.Version + strconv.FormatInt(c.CreatedAt, 10) + "." + c.ID)
	return encoding.EncodeToString(binary.BigEndian.AppendUint32(payload, crc32.ChecksumIEEE(payload)))
}

// Decode accepts exactly the strings Encode produces, so that a cursor
// that decodes is one this store handed out (or an exact forgery of one,
// which is harmless: it is only a position). Its errors wrap
// record.ErrInvalidCursor.
func (k Codec) Decode(s string) (Cursor, error) {
	invalid := func(why string) (Cursor, error) {
		return Cursor{}, fmt.Errorf("%s: list: %w (%s)", k.Store, record.ErrInvalidCursor, why)
	}
	if s == "" {
		return invalid("empty")
	}
	raw, err := encoding.DecodeString(s)
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
	rest, ok := strings.CutPrefix(string(payload), k.Version)
	if !ok {
		return invalid("unknown version")
	}
	num, id, ok := strings.Cut(rest, ".")
	if !ok || id == "" {
		return invalid("no id")
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || strconv.FormatInt(n, 10) != num {
		return invalid("bad timestamp")
	}
	c := Cursor{CreatedAt: n, ID: id}
	// The decoder skips newlines, which would make two strings one cursor.
	if k.Encode(c) != s {
		return invalid("not canonical")
	}
	return c, nil
}
