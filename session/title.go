package session

import (
	"context"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/weft-run/weft/record"
)

// MaxTitleRunes bounds a session's title.
const MaxTitleRunes = 200

// SetTitle renames a session: title is trimmed; "" clears it. A title
// with control characters (it is shown in lists and logs) or longer than
// MaxTitleRunes is a *record.InvalidError. It returns the session as
// stored.
func (rt *Service) SetTitle(ctx context.Context, id, title string) (record.Session, error) {
	title = strings.TrimSpace(title)
	if !utf8.ValidString(title) {
		return record.Session{}, &record.InvalidError{Err: fmt.Errorf("title must be UTF-8 text")}
	}
	if n := utf8.RuneCountInString(title); n > MaxTitleRunes {
		return record.Session{}, &record.InvalidError{Err: fmt.Errorf("title is %d characters; at most %d", n, MaxTitleRunes)}
	}
	if strings.IndexFunc(title, unicode.IsControl) >= 0 {
		return record.Session{}, &record.InvalidError{Err: fmt.Errorf("title must not contain control characters (newlines, tabs)")}
	}
	// UpdateSession replaces the title and the metadata together: a rename
	// racing a permissions change must not write back the metadata it read
	// before the other one's.
	rt.metaMu.Lock()
	defer rt.metaMu.Unlock()
	s, err := rt.cfg.Store.GetSession(ctx, id)
	if err != nil {
		return record.Session{}, err
	}
	s.Title = title
	if err := rt.cfg.Store.UpdateSession(ctx, s); err != nil {
		return record.Session{}, err
	}
	return rt.GetSession(ctx, id)
}
