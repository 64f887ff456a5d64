package store

import (
	"context"

	"github.com/weft-run/weft/record"
)

// Usage stores the cost history: one record per model call. It is
// append-only and, like the audit trail, independent of sessions:
// deleting a session keeps what it cost.
type Usage interface {
	// AppendUsage stores records in one transaction; each must pass
	// record.UsageRecord.Validate (an invalid one fails the batch).
	AppendUsage(ctx context.Context, recs ...record.UsageRecord) error
	// QueryUsage sums the matching records by q.GroupBy, one UsageGroup
	// per key, ordered by key (days chronologically). With record.UsageTotal it
	// returns one group even when nothing matched. An unknown GroupBy is
	// record.ErrInvalidUsage.
	QueryUsage(ctx context.Context, q record.UsageQuery) ([]record.UsageGroup, error)
}
