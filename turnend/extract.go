package turnend

import (
	"context"
	"fmt"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/memory"
)

const extractSystem = `You are weft's memory extraction agent, a background sub-agent. You read a conversation and keep the memory directory up to date with what is worth remembering in later sessions. Your tools read and write only the memory directory; writing anywhere else is refused. Be brief: most conversations hold little or nothing worth keeping.`

// requestExtraction asks the extractor whether this turn calls for an
// extraction and, when it does, runs one or leaves it pending behind
// the one running: single-flight per session, the newest request
// replacing a pending one rather than queueing behind it.
func (p *Pipeline) requestExtraction(t Turn) {
	p.mu.Lock()
	st := p.sessions[t.Session]
	if st == nil {
		p.evictLocked()
		st = &extractState{}
		p.sessions[t.Session] = st
	}
	st.turns++
	turnCount, last, from := st.turns, st.lastTurn, spanStart(st.lastMsg, t.Messages)
	p.mu.Unlock()

	ex := p.cfg.Extractor
	should := ex.ShouldExtract(turnCount, last)
	if !should {
		if se, ok := ex.(memory.SpanExtractor); ok {
			should = se.ShouldExtractSpan(t.Messages[from:])
		}
	}
	if !should {
		return
	}
	j := job{turn: t, turnCount: turnCount}
	p.mu.Lock()
	if st.running {
		if st.pending == nil || st.pending.turnCount < j.turnCount {
			st.pending = &j
		}
		p.mu.Unlock()
		return
	}
	st.running = true
	p.mu.Unlock()
	p.spawn("extract", func() { p.extractLoop(st, j) })
}

// evictLocked forgets idle sessions' state when there are too many: the
// worst case is an extraction that covers a few messages twice.
func (p *Pipeline) evictLocked() {
	if len(p.sessions) < maxSessions {
		return
	}
	for id, st := range p.sessions {
		if !st.running {
			delete(p.sessions, id)
		}
		if len(p.sessions) < maxSessions/2 {
			return
		}
	}
}

// extractLoop runs j, then whatever request became pending meanwhile.
func (p *Pipeline) extractLoop(st *extractState, j job) {
	for {
		p.safe("extract", func() { p.extract(st, j) })
		p.mu.Lock()
		if st.pending == nil || p.closed {
			st.running, st.pending = false, nil
			p.mu.Unlock()
			return
		}
		j = *st.pending
		st.pending = nil
		p.mu.Unlock()
	}
}

// extract runs one extraction over the messages since the last one.
func (p *Pipeline) extract(st *extractState, j job) {
	p.mu.Lock()
	from := spanStart(st.lastMsg, j.turn.Messages)
	p.mu.Unlock()
	msgs := j.turn.Messages
	span := msgs[from:]
	advance := func(covered bool) {
		p.mu.Lock()
		st.lastTurn = j.turnCount
		if covered {
			st.lastMsg = len(msgs)
		}
		p.mu.Unlock()
	}
	if len(span) == 0 {
		return
	}
	dirs := p.dirs()
	if memory.WroteMemory(span, dirs...) {
		p.log.Debug("memory extraction skipped: the agent wrote memory itself", "session", j.turn.Session)
		advance(true)
		return
	}
	var existing []*memory.Entry
	for _, d := range dirs {
		entries, _, err := d.List()
		if err != nil {
			p.log.Warn("memory extraction: listing memory failed", "dir", d.Path(), "error", err)
			continue
		}
		for i := range entries {
			existing = append(existing, &entries[i])
		}
	}
	prompt := p.cfg.Extractor.BuildPrompt(existing, len(span)) +
		fmt.Sprintf("\nMemory directory: %s (write new files here).\n\n<conversation>\n%s</conversation>\n",
			dirs[0].Path(), memory.Transcript(span, p.cfg.TranscriptBytes))
	ctx, cancel := context.WithTimeout(p.ctx, extractTimeout)
	defer cancel()
	err := p.runAgent(ctx, j.turn, "extract", p.cfg.Extractor.AllowedTools(), dirs, extractSystem, prompt, p.cfg.Extractor.MaxTurns())
	if err != nil {
		// The messages stay uncovered: the next extraction (an interval
		// later) takes them again.
		p.log.Warn("memory extraction failed", "session", j.turn.Session, "extractor", p.cfg.Extractor.Name(), "error", err)
		advance(false)
		return
	}
	p.log.Debug("memory extracted", "session", j.turn.Session, "messages", len(span))
	advance(true)
}

// spanStart is where the messages since the last extraction begin. A
// conversation shorter than what was covered was rewound or compacted
// since: all of it is new then.
func spanStart(covered int, msgs []llm.Message) int {
	if covered > len(msgs) {
		return 0
	}
	return covered
}
