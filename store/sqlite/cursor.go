package sqlite

import (
	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/store/internal/keyset"
)

// ErrInvalidCursor is record.ErrInvalidCursor, wrapped by ListSessions' and
// ListRuns' error for a cursor they did not hand out.
var ErrInvalidCursor = record.ErrInvalidCursor

// cursor is the keyset position after the last session (or run) of a
// page (store/internal/keyset).
type cursor = keyset.Cursor

var cursors = keyset.Codec{Version: "1.", Store: "sqlite"}

func encodeCursor(c cursor) string          { return cursors.Encode(c) }
func decodeCursor(s string) (cursor, error) { return cursors.Decode(s) }
