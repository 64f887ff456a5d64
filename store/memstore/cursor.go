package memstore

import "github.com/weft-run/weft/store/internal/keyset"

// cursor is the keyset position after the last session (or run) of a
// page (store/internal/keyset).
type cursor = keyset.Cursor

var cursors = keyset.Codec{Version: "m1.", Store: "memstore"}

func encodeCursor(c cursor) string          { return cursors.Encode(c) }
func decodeCursor(s string) (cursor, error) { return cursors.Decode(s) }
