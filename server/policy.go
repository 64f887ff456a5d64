package server

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/session"
)

// The safety layer's endpoints: permission postures (server-wide and per
// session), plugin hook trust and the audit trail.

func (s *Server) handleGetServerPermissions(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"permissions": s.rt.ServerPermissions()})
}

func (s *Server) handlePutServerPermissions(w http.ResponseWriter, r *http.Request) {
	p, ok := decodePermissions(w, r)
	if !ok {
		return
	}
	if err := s.rt.SetServerPermissions(r.Context(), p); err != nil {
		s.writePolicyError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"permissions": s.rt.ServerPermissions()})
}

func (s *Server) handleGetSessionPermissions(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	p, err := s.rt.SessionPermissions(r.Context(), id)
	if err != nil {
		s.writePolicyError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"session_id": id, "permissions": p, "server": s.rt.ServerPermissions()})
}

func (s *Server) handlePutSessionPermissions(w http.ResponseWriter, r *http.Request) {
	p, ok := decodePermissions(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	if err := s.rt.SetSessionPermissions(r.Context(), id, p); err != nil {
		s.writePolicyError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"session_id": id, "permissions": p})
}

// decodePermissions accepts the permissions object itself or wrapped as
// {"permissions": {...}} (the shape of a settings file).
func decodePermissions(w http.ResponseWriter, r *http.Request) (session.Permissions, bool) {
	var q struct {
		session.Permissions
		Wrapped *session.Permissions `json:"permissions"`
	}
	if !decodeBody(w, r, &q) {
		return session.Permissions{}, false
	}
	if q.Wrapped != nil {
		return *q.Wrapped, true
	}
	return q.Permissions, true
}

func (s *Server) writePolicyError(w http.ResponseWriter, r *http.Request, err error) {
	var inv *record.InvalidError
	switch {
	case errors.As(err, &inv):
		writeError(w, http.StatusBadRequest, errInvalidRequest, err.Error())
	case errors.Is(err, session.ErrForbidden):
		writeError(w, http.StatusForbidden, errPermission, err.Error())
	default:
		s.writeRuntimeError(w, r, err)
	}
}

func (s *Server) handleListPlugins(w http.ResponseWriter, r *http.Request) {
	ps := s.rt.Plugins()
	if ps == nil {
		ps = []session.PluginInfo{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"plugins": ps, "count": len(ps)})
}

func (s *Server) handleTrustPlugin(w http.ResponseWriter, r *http.Request) {
	trust := r.Method == http.MethodPost
	id := r.PathValue("id")
	if err := s.rt.TrustPlugin(id, trust); err != nil {
		if errors.Is(err, session.ErrNotFound) {
			writeError(w, http.StatusNotFound, errNotFound, "plugin "+quote(id)+" has no hooks here")
			return
		}
		s.writeRuntimeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "trusted": trust})
}

// handleAudit reads the audit trail: ?session_id=, ?since= (RFC 3339 or
// unix seconds), ?limit=, ?after_id= to page.
func (s *Server) handleAudit(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	q := record.AuditQuery{SessionID: v.Get("session_id")}
	if since := v.Get("since"); since != "" {
		t, err := time.Parse(time.RFC3339Nano, since)
		if err != nil {
			secs, nerr := strconv.ParseInt(since, 10, 64)
			if nerr != nil {
				writeError(w, http.StatusBadRequest, errInvalidRequest, "since must be an RFC 3339 time or unix seconds, got "+quote(since))
				return
			}
			t = time.Unix(secs, 0)
		}
		q.Since = t
	}
	for name, dst := range map[string]*int64{"after_id": &q.AfterID} {
		if s := v.Get(name); s != "" {
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil || n < 0 {
				writeError(w, http.StatusBadRequest, errInvalidRequest, name+" must be a non-negative integer")
				return
			}
			*dst = n
		}
	}
	if l := v.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 1000 {
			writeError(w, http.StatusBadRequest, errInvalidRequest, "limit must be between 1 and 1000")
			return
		}
		q.Limit = n
	}
	entries, err := s.rt.Audit(r.Context(), q)
	if err != nil {
		s.writeRuntimeError(w, r, err)
		return
	}
	if entries == nil {
		entries = []record.AuditEntry{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"entries": entries, "count": len(entries)})
}
