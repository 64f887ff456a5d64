package record

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
)

// UsageRecord is one model call's token usage and cost: the numbers of
// its turn_end event, with who made it and when.
type UsageRecord struct {
	// Time is when the call ended, UTC; zero becomes the time of the
	// append.
	Time      time.Time `json:"time"`
	SessionID string    `json:"session_id,omitempty"`
	RunID     string    `json:"run_id,omitempty"`
	Provider  string    `json:"provider,omitempty"`
	Model     string    `json:"model"`

	InputTokens      int64   `json:"input_tokens"`
	OutputTokens     int64   `json:"output_tokens"`
	CacheReadTokens  int64   `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int64   `json:"cache_write_tokens,omitempty"`
	CostUSD          float64 `json:"cost_usd"`
}

// Groupings of a UsageQuery.
const (
	UsageTotal     = ""        // one group, Key ""
	UsageByModel   = "model"   // Key: the model
	UsageBySession = "session" // Key: the session id ("" for calls of no session)
	UsageByDay     = "day"     // Key: the UTC day, "2006-01-02"
)

// ErrInvalidUsage: a record or query the usage store refuses (negative
// tokens, a cost that is not a number, an unknown grouping).
var ErrInvalidUsage = errors.New("invalid usage")

// UsageQuery selects and groups usage records.
type UsageQuery struct {
	// Since keeps records whose Time is not before it; zero keeps all.
	Since time.Time
	// Until keeps records whose Time is before it; zero keeps all.
	Until time.Time
	// SessionID keeps one session's records; "" keeps all.
	SessionID string
	// GroupBy is UsageTotal, UsageByModel, UsageBySession or UsageByDay.
	GroupBy string
}

// UsageGroup sums the records of one group.
type UsageGroup struct {
	Key              string  `json:"key"`
	Calls            int64   `json:"calls"`
	InputTokens      int64   `json:"input_tokens"`
	OutputTokens     int64   `json:"output_tokens"`
	CacheReadTokens  int64   `json:"cache_read_tokens"`
	CacheWriteTokens int64   `json:"cache_write_tokens"`
	CostUSD          float64 `json:"cost_usd"`
}

// Validate reports a record no store keeps (wrapping ErrInvalidUsage).
func (r UsageRecord) Validate() error {
	switch {
	case r.Model == "":
		return fmt.Errorf("%w: a usage record needs a model", ErrInvalidUsage)
	case r.InputTokens < 0 || r.OutputTokens < 0 || r.CacheReadTokens < 0 || r.CacheWriteTokens < 0:
		return fmt.Errorf("%w: negative token count", ErrInvalidUsage)
	case r.CostUSD < 0 || math.IsNaN(r.CostUSD) || math.IsInf(r.CostUSD, 0):
		return fmt.Errorf("%w: cost %v", ErrInvalidUsage, r.CostUSD)
	}
	return nil
}

// ValidGroupBy reports whether g is one of the groupings.
func ValidGroupBy(g string) bool {
	return g == UsageTotal || g == UsageByModel || g == UsageBySession || g == UsageByDay
}

// UsageDay is the UsageByDay key of t.
func UsageDay(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// Matches reports whether q selects r.
func (q UsageQuery) Matches(r UsageRecord) bool {
	if !q.Since.IsZero() && r.Time.Before(q.Since) {
		return false
	}
	if !q.Until.IsZero() && !r.Time.Before(q.Until) {
		return false
	}
	return q.SessionID == "" || r.SessionID == q.SessionID
}

// key is r's group under g.
func (q UsageQuery) key(r UsageRecord) string {
	switch q.GroupBy {
	case UsageByModel:
		return r.Model
	case UsageBySession:
		return r.SessionID
	case UsageByDay:
		return UsageDay(r.Time)
	}
	return ""
}

// GroupUsage is QueryUsage over records in memory, for stores and ledgers
// that keep them as a list (store/memstore, the CLI's ledger).
func GroupUsage(recs []UsageRecord, q UsageQuery) ([]UsageGroup, error) {
	if !ValidGroupBy(q.GroupBy) {
		return nil, fmt.Errorf("%w: group_by %q: want model, session or day", ErrInvalidUsage, q.GroupBy)
	}
	groups := map[string]*UsageGroup{}
	for _, r := range recs {
		if !q.Matches(r) {
			continue
		}
		k := q.key(r)
		g := groups[k]
		if g == nil {
			g = &UsageGroup{Key: k}
			groups[k] = g
		}
		g.Add(r)
	}
	if q.GroupBy == UsageTotal && len(groups) == 0 {
		return []UsageGroup{{}}, nil
	}
	out := make([]UsageGroup, 0, len(groups))
	for _, g := range groups {
		out = append(out, *g)
	}
	slices.SortFunc(out, func(a, b UsageGroup) int { return cmp.Compare(a.Key, b.Key) })
	return out, nil
}

// Add counts r in g.
func (g *UsageGroup) Add(r UsageRecord) {
	g.Calls++
	g.InputTokens += r.InputTokens
	g.OutputTokens += r.OutputTokens
	g.CacheReadTokens += r.CacheReadTokens
	g.CacheWriteTokens += r.CacheWriteTokens
	g.CostUSD += r.CostUSD
}
