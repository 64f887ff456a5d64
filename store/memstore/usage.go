package memstore

import (
	"context"

	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/store"
)

// AppendUsage implements store.Usage: all records or none.
func (s *Store) AppendUsage(ctx context.Context, recs ...record.UsageRecord) error {
	if len(recs) == 0 {
		return nil
	}
	in := make([]record.UsageRecord, len(recs))
	t := now()
	for i, r := range recs {
		if err := r.Validate(); err != nil {
			return err
		}
		if r.Time.IsZero() {
			r.Time = t
		}
		var err error
		if r.Time, err = stamp("usage time", r.Time); err != nil {
			return err
		}
		in[i] = r
	}
	unlock, err := s.begin(ctx, true)
	if err != nil {
		return err
	}
	defer unlock()
	s.usage = append(s.usage, in...)
	return nil
}

// QueryUsage implements store.Usage.
func (s *Store) QueryUsage(ctx context.Context, q record.UsageQuery) ([]record.UsageGroup, error) {
	unlock, err := s.begin(ctx, false)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return record.GroupUsage(s.usage, q)
}

var _ store.Usage = (*Store)(nil)
