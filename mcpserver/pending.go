package mcpserver

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sync"
	"time"
)

// Bounds of the questions waiting for a client's answer.
const (
	pendingTTL = 10 * time.Minute
	pendingMax = 1024
)

// pendingQuestions are the request states handed out with input requests:
// each is random, names the tool and the arguments it was asked for, is
// good for one retry and expires. An answer that comes with an unknown,
// used, expired or mismatched state is ignored, so the question is asked
// again.
type pendingQuestions struct {
	mu    sync.Mutex
	byKey map[string]pendingQuestion
	order []string // oldest first, for the bound
	now   func() time.Time
}

type pendingQuestion struct {
	call    [32]byte
	expires time.Time
}

func callDigest(tool string, args json.RawMessage) [32]byte {
	h := sha256.New()
	h.Write([]byte(tool))
	h.Write([]byte{0})
	h.Write(args)
	var d [32]byte
	h.Sum(d[:0])
	return d
}

func (p *pendingQuestions) clock() time.Time {
	if p.now != nil {
		return p.now()
	}
	return time.Now()
}

func (p *pendingQuestions) put(tool string, args json.RawMessage) string {
	var b [18]byte
	_, _ = rand.Read(b[:])
	key := hex.EncodeToString(b[:])
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.byKey == nil {
		p.byKey = map[string]pendingQuestion{}
	}
	now := p.clock()
	for len(p.order) > 0 {
		q, ok := p.byKey[p.order[0]]
		if ok && len(p.order) < pendingMax && now.Before(q.expires) {
			break
		}
		delete(p.byKey, p.order[0])
		p.order = p.order[1:]
	}
	p.byKey[key] = pendingQuestion{call: callDigest(tool, args), expires: now.Add(pendingTTL)}
	p.order = append(p.order, key)
	return key
}

// take reports whether key is a live request state for this call, and
// uses it up.
func (p *pendingQuestions) take(key, tool string, args json.RawMessage) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	q, ok := p.byKey[key]
	if !ok {
		return false
	}
	delete(p.byKey, key)
	return p.clock().Before(q.expires) && q.call == callDigest(tool, args)
}
