// Package memory is weft's cross-session memory, in two forms.
//
// File memory (FileStore, Dir; seed 004 §6 and seed 000) is what weft run,
// chat and serve use: Markdown entries in ~/.weft/memory/ and
// ~/.weft/projects/<hash>/memory/ with a MEMORY.md index, written by the
// memory tools through the secret guard and the caps, shown in the system
// prompt of later sessions with freshness notes, and optionally synced
// (SyncAdapter, GitSyncAdapter). See docs/memory.md.
//
// Service is the per-user store of weft serve --memory (seed 001,
// "跨会话记忆"): long-term facts kept per user in the database, found again
// by keyword overlap weighted by recency, and handed to the planner. It is
// experimental and off unless a setting turns it on, because a memory can
// be wrong.
package memory

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/weft-run/weft/record"
)

// Defaults and limits.
const (
	// DefaultHalfLife is the age at which a memory's weight halves.
	DefaultHalfLife = 7 * 24 * time.Hour
	// DefaultUser is the user of a context that names none.
	DefaultUser = "default"
	// DefaultSearchLimit is Search's limit when it is given as 0.
	DefaultSearchLimit = 10
	// MaxSearchLimit caps Search's limit.
	MaxSearchLimit = 100
	// MaxTextRunes bounds a memory's text: a memory is a fact, not a
	// document.
	MaxTextRunes = 2000
	// MaxTags bounds a memory's tags; each is at most MaxTagRunes long.
	MaxTags     = 20
	MaxTagRunes = 64
	// DefaultRelevant is Relevant's n when it is given as 0.
	DefaultRelevant = 5
)

// ErrInvalid: a memory or query is malformed (empty text, too long, too
// many tags); the message says how. Unknown memories are record.ErrNotFound.
var ErrInvalid = errors.New("invalid memory")

// Options configure a Service. The zero value means the defaults.
type Options struct {
	// Now stamps new memories and ages them for ranking; nil means
	// time.Now.
	Now func() time.Time
	// HalfLife is the recency half-life. Zero means DefaultHalfLife.
	HalfLife time.Duration
}

// Service keeps memories in a store and ranks them. It is safe for
// concurrent use.
type Service struct {
	store Store
	opt   Options
}

// Scored is a memory found by Search with how it ranked: Score = Overlap *
// Recency.
type Scored struct {
	record.Memory
	Score float64 `json:"score"`
	// Overlap is the share of the query's words the memory holds (0..1].
	Overlap float64 `json:"overlap"`
	// Recency is 0.5^(age/half-life), 1 for a memory made now.
	Recency float64 `json:"recency"`
}

// New returns a service over st.
func New(st Store, opt Options) *Service {
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.HalfLife <= 0 {
		opt.HalfLife = DefaultHalfLife
	}
	return &Service{store: st, opt: opt}
}

type userKey struct{}

// WithUser returns ctx naming the user whose memories the tools use.
func WithUser(ctx context.Context, userID string) context.Context {
	return context.WithValue(ctx, userKey{}, userID)
}

// UserFrom returns the user WithUser put in ctx, or DefaultUser.
func UserFrom(ctx context.Context) string {
	if u, ok := ctx.Value(userKey{}).(string); ok && u != "" {
		return u
	}
	return DefaultUser
}

// newID is "mem_" and 12 hex digits: short enough for a model to quote.
func newID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "mem_" + hex.EncodeToString(b[:])
}

// Remember stores text (trimmed) with tags (trimmed, empty and repeated
// ones dropped) for the user.
func (s *Service) Remember(ctx context.Context, user, text string, tags []string) (record.Memory, error) {
	text = strings.TrimSpace(text)
	switch n := utf8.RuneCountInString(text); {
	case n == 0:
		return record.Memory{}, fmt.Errorf("%w: text is empty", ErrInvalid)
	case n > MaxTextRunes:
		return record.Memory{}, fmt.Errorf("%w: text has %d characters; keep a memory under %d (one fact per memory)", ErrInvalid, n, MaxTextRunes)
	}
	var clean []string
	for _, t := range tags {
		t = strings.TrimSpace(t)
		if t == "" || slices.Contains(clean, t) {
			continue
		}
		if utf8.RuneCountInString(t) > MaxTagRunes {
			return record.Memory{}, fmt.Errorf("%w: tag %.20q… is longer than %d characters", ErrInvalid, t, MaxTagRunes)
		}
		clean = append(clean, t)
	}
	if len(clean) > MaxTags {
		return record.Memory{}, fmt.Errorf("%w: %d tags; at most %d", ErrInvalid, len(clean), MaxTags)
	}
	m, err := s.store.AddMemory(ctx, record.Memory{ID: newID(), UserID: user, Text: text, Tags: clean, CreatedAt: s.opt.Now()})
	if err != nil {
		return record.Memory{}, fmt.Errorf("remember: %w", err)
	}
	return m, nil
}

// List returns the user's memories, newest first.
func (s *Service) List(ctx context.Context, user string) ([]record.Memory, error) {
	ms, err := s.store.ListMemories(ctx, user)
	if err != nil {
		return nil, fmt.Errorf("list memories: %w", err)
	}
	return ms, nil
}

// Forget deletes the user's memory id; an error wrapping
// record.ErrNotFound when the user has no such memory.
func (s *Service) Forget(ctx context.Context, user, id string) error {
	if err := s.store.DeleteMemory(ctx, user, id); err != nil {
		if errors.Is(err, record.ErrNotFound) {
			return fmt.Errorf("no memory %q: %w", id, record.ErrNotFound)
		}
		return fmt.Errorf("forget: %w", err)
	}
	return nil
}

// Search ranks the user's memories against query: the share of the
// query's words (lower-cased, stopwords dropped; tags count as words of
// the memory) that a memory holds, times 0.5^(age/half-life). Memories
// sharing no word are left out; equal scores go newest first. limit 0
// means DefaultSearchLimit; it is capped at MaxSearchLimit. A query with
// no searchable words finds nothing.
func (s *Service) Search(ctx context.Context, user, query string, limit int) ([]Scored, error) {
	if limit < 0 {
		return nil, fmt.Errorf("%w: negative limit", ErrInvalid)
	}
	if limit == 0 {
		limit = DefaultSearchLimit
	}
	limit = min(limit, MaxSearchLimit)
	q := words(query)
	if len(q) == 0 {
		return []Scored{}, nil
	}
	ms, err := s.List(ctx, user)
	if err != nil {
		return nil, err
	}
	now := s.opt.Now()
	out := []Scored{}
	for _, m := range ms {
		mw := words(m.Text + " " + strings.Join(m.Tags, " "))
		shared := 0
		for w := range q {
			if _, ok := mw[w]; ok {
				shared++
			}
		}
		if shared == 0 {
			continue
		}
		overlap := float64(shared) / float64(len(q))
		recency := s.recency(now.Sub(m.CreatedAt))
		out = append(out, Scored{Memory: m, Score: overlap * recency, Overlap: overlap, Recency: recency})
	}
	slices.SortStableFunc(out, func(a, b Scored) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// recency is 0.5^(age/half-life); a memory from the future (clock skew)
// counts as new.
func (s *Service) recency(age time.Duration) float64 {
	if age <= 0 {
		return 1
	}
	return math.Pow(0.5, float64(age)/float64(s.opt.HalfLife))
}

// Relevant returns the texts of the user's n (0: DefaultRelevant)
// memories most relevant to goal, best first, for the planner's context.
func (s *Service) Relevant(ctx context.Context, user, goal string, n int) ([]string, error) {
	if n <= 0 {
		n = DefaultRelevant
	}
	found, err := s.Search(ctx, user, goal, n)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(found))
	for i, f := range found {
		out[i] = f.Text
	}
	return out, nil
}

// stopwords are words too common to say what a memory is about. Chinese
// is split into characters, so its list holds particles and pronouns.
var stopwords = func() map[string]struct{} {
	m := map[string]struct{}{}
	for _, w := range strings.Fields(`a an and are as at be been but by can could did do does for from had has have he her his
		how i if in into is it its me my no not of on or our she so than that the their them then there these they this
		to us was we were what when where which who why will with would you your
		的 了 是 在 和 与 及 也 就 都 而 或 吗 呢 吧 啊 之 把 被 这 那 个 我 你 他 她 它 们`) {
		m[w] = struct{}{}
	}
	return m
}()

// isCJK reports whether r belongs to a script written without spaces;
// each such character is a word of its own.
func isCJK(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul)
}

// words returns the set of searchable words of s: maximal runs of letters
// and digits, lower-cased; each Chinese, Japanese or Korean character on
// its own; without stopwords and single Latin letters.
func words(s string) map[string]struct{} {
	out := map[string]struct{}{}
	add := func(w string) {
		if w == "" {
			return
		}
		if _, stop := stopwords[w]; stop {
			return
		}
		if r, size := utf8.DecodeRuneInString(w); size == len(w) && unicode.IsLetter(r) && !isCJK(r) {
			return
		}
		out[w] = struct{}{}
	}
	var word strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case isCJK(r):
			add(word.String())
			word.Reset()
			add(string(r))
		case unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			word.WriteRune(r)
		default:
			add(word.String())
			word.Reset()
		}
	}
	add(word.String())
	return out
}

// Store keeps the memories (store.Memories satisfies it).
type Store interface {
	AddMemory(ctx context.Context, m record.Memory) (record.Memory, error)
	ListMemories(ctx context.Context, userID string) ([]record.Memory, error)
	DeleteMemory(ctx context.Context, userID, id string) error
}
