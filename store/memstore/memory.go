package memstore

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"maps"
	"slices"

	"github.com/weft-run/weft/record"
)

type memory struct {
	m   record.Memory
	seq int64 // insertion order, newest-first tie-break
}

func copyMemory(m record.Memory) record.Memory {
	if len(m.Tags) == 0 {
		m.Tags = nil
	} else {
		m.Tags = slices.Clone(m.Tags)
	}
	return m
}

// AddMemory implements store.Memories. An assigned ID is random
// (crypto/rand.Text), as in store/sqlite.
func (s *Store) AddMemory(ctx context.Context, m record.Memory) (record.Memory, error) {
	if m.Text == "" {
		return record.Memory{}, errors.New("memstore: add memory: empty text")
	}
	if m.ID == "" {
		m.ID = rand.Text()
	}
	if m.CreatedAt.IsZero() {
		m.CreatedAt = now()
	}
	var err error
	if m.CreatedAt, err = stamp("memory created_at", m.CreatedAt); err != nil {
		return record.Memory{}, err
	}
	m = copyMemory(m)
	unlock, err := s.begin(ctx, true)
	if err != nil {
		return record.Memory{}, err
	}
	defer unlock()
	if _, ok := s.memories[m.ID]; ok {
		return record.Memory{}, exists("memory", m.ID)
	}
	s.memorySeq++
	s.memories[m.ID] = &memory{m: m, seq: s.memorySeq}
	return copyMemory(m), nil
}

// ListMemories implements store.Memories: the user's memories, newest
// first.
func (s *Store) ListMemories(ctx context.Context, userID string) ([]record.Memory, error) {
	unlock, err := s.begin(ctx, false)
	if err != nil {
		return nil, err
	}
	defer unlock()
	var mine []*memory
	for _, x := range s.memories {
		if x.m.UserID == userID {
			mine = append(mine, x)
		}
	}
	slices.SortFunc(mine, func(a, b *memory) int {
		return cmp.Or(b.m.CreatedAt.Compare(a.m.CreatedAt), cmp.Compare(b.seq, a.seq))
	})
	out := make([]record.Memory, 0, len(mine))
	for _, x := range mine {
		out = append(out, copyMemory(x.m))
	}
	return out, nil
}

// DeleteMemory implements store.Memories: another user's memory is not
// found either.
func (s *Store) DeleteMemory(ctx context.Context, userID, id string) error {
	unlock, err := s.begin(ctx, true)
	if err != nil {
		return err
	}
	defer unlock()
	x, ok := s.memories[id]
	if !ok || x.m.UserID != userID {
		return notFound("memory", id)
	}
	delete(s.memories, id)
	return nil
}

func copyAudit(e record.AuditEntry) record.AuditEntry {
	if len(e.Extra) == 0 {
		e.Extra = nil
	} else {
		e.Extra = maps.Clone(e.Extra)
	}
	return e
}

// AppendAudit implements store.Audits: all entries or none, ids assigned
// in order.
func (s *Store) AppendAudit(ctx context.Context, entries ...record.AuditEntry) error {
	if len(entries) == 0 {
		return nil
	}
	in := make([]record.AuditEntry, len(entries))
	t := now()
	for i, e := range entries {
		if e.Timestamp.IsZero() {
			e.Timestamp = t
		}
		var err error
		if e.Timestamp, err = stamp("audit timestamp", e.Timestamp); err != nil {
			return err
		}
		in[i] = copyAudit(e)
	}
	unlock, err := s.begin(ctx, true)
	if err != nil {
		return err
	}
	defer unlock()
	for _, e := range in {
		s.auditSeq++
		e.ID = s.auditSeq
		s.audit = append(s.audit, e)
	}
	return nil
}

// ListAudit implements store.Audits: matching entries, oldest (lowest ID)
// first.
func (s *Store) ListAudit(ctx context.Context, q record.AuditQuery) ([]record.AuditEntry, error) {
	limit := clampLimit(q.Limit, defaultAuditLimit, maxAuditLimit)
	unlock, err := s.begin(ctx, false)
	if err != nil {
		return nil, err
	}
	defer unlock()
	// The trail is in id order: start after AfterID.
	start, found := slices.BinarySearchFunc(s.audit, q.AfterID, func(e record.AuditEntry, id int64) int { return cmp.Compare(e.ID, id) })
	if found {
		start++
	}
	out := []record.AuditEntry{}
	for _, e := range s.audit[start:] {
		if len(out) == limit {
			break
		}
		if q.SessionID != "" && e.SessionID != q.SessionID || !q.Since.IsZero() && e.Timestamp.Before(q.Since) {
			continue
		}
		out = append(out, copyAudit(e))
	}
	return out, nil
}
