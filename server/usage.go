package server

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/weft-run/weft/record"
)

// The cost history over HTTP: GET /v1/usage sums the usage and cost of
// the model calls of the server's sessions and runs.
//
//	GET /v1/usage?since=24h&group_by=model
//	{"since": "...", "group_by": "model", "groups": [{"key": "claude-sonnet-4-5", "calls": 3, ..., "cost_usd": 0.027}]}
//
// since and until take an RFC 3339 time, unix seconds, or a duration
// back from now ("24h", "168h"); group_by is model, session or day (UTC),
// or absent for one total; session_id keeps one session's calls.

// UsageResponse is the body of GET /v1/usage.
type UsageResponse struct {
	Since   *time.Time          `json:"since,omitempty"`
	Until   *time.Time          `json:"until,omitempty"`
	GroupBy string              `json:"group_by,omitempty"`
	Groups  []record.UsageGroup `json:"groups"`
}

// UsageSource answers usage queries: the store's cost history
// (store.Usage; *sqlite.DB and *memstore.Store are one). The server sees
// only this and the record types, never the store.
type UsageSource interface {
	QueryUsage(ctx context.Context, q record.UsageQuery) ([]record.UsageGroup, error)
}

// UsageHandler serves GET /v1/usage from src; nil answers 503. It is a
// plain handler so that a program can mount it on its own mux; the
// Server mounts it behind its authentication (Config.Usage).
func UsageHandler(src UsageSource) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if src == nil {
			writeError(w, http.StatusServiceUnavailable, errInternal, "this server keeps no cost history")
			return
		}
		now := time.Now()
		v := r.URL.Query()
		q := record.UsageQuery{SessionID: v.Get("session_id"), GroupBy: v.Get("group_by")}
		switch q.GroupBy {
		case record.UsageTotal, record.UsageByModel, record.UsageBySession, record.UsageByDay:
		default:
			writeError(w, http.StatusBadRequest, errInvalidRequest, "group_by must be model, session or day, got "+quote(q.GroupBy))
			return
		}
		for _, p := range []struct {
			name string
			dst  *time.Time
		}{{"since", &q.Since}, {"until", &q.Until}} {
			if s := v.Get(p.name); s != "" {
				t, err := parseUsageTime(s, now)
				if err != nil {
					writeError(w, http.StatusBadRequest, errInvalidRequest, p.name+" "+err.Error()+", got "+quote(s))
					return
				}
				*p.dst = t
			}
		}
		groups, err := src.QueryUsage(r.Context(), q)
		if err != nil {
			if r.Context().Err() != nil {
				return // the client left
			}
			writeError(w, http.StatusInternalServerError, errInternal, "querying the cost history failed")
			return
		}
		if groups == nil {
			groups = []record.UsageGroup{}
		}
		resp := UsageResponse{GroupBy: q.GroupBy, Groups: groups}
		if !q.Since.IsZero() {
			resp.Since = &q.Since
		}
		if !q.Until.IsZero() {
			resp.Until = &q.Until
		}
		writeJSON(w, http.StatusOK, resp)
	})
}

// maxUsageLookback bounds a duration parameter: beyond it a time is
// meant, and a duration that overflows would silently mean "the future".
const maxUsageLookback = 100 * 365 * 24 * time.Hour

// parseUsageTime reads an RFC 3339 time, unix seconds, or a duration back
// from now.
func parseUsageTime(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), nil
	}
	if secs, err := strconv.ParseInt(s, 10, 64); err == nil {
		if secs < 0 || secs > 1<<40 {
			return time.Time{}, errors.New("is out of range")
		}
		return time.Unix(secs, 0).UTC(), nil
	}
	if d, err := time.ParseDuration(strings.TrimSpace(s)); err == nil {
		if d < 0 || d > maxUsageLookback {
			return time.Time{}, errors.New("must be a positive duration back from now, at most 100 years")
		}
		return now.Add(-d).UTC(), nil
	}
	return time.Time{}, errors.New("must be an RFC 3339 time, unix seconds or a duration such as 24h")
}
