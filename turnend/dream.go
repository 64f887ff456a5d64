package turnend

import (
	"context"

	"github.com/weft-run/weft/memory"
)

const dreamSystem = `You are weft's memory consolidation agent ("dream"), a background sub-agent. You tidy one memory directory: merge entries that say the same thing, remove duplicates, delete entries that are obsolete or contradicted by newer ones, and sharpen vague descriptions. Keep every fact that is still useful; never invent facts; never store secrets. Your tools read and write only the memory directory; writing anywhere else is refused.`

// dream notes the turn's session and consolidates each memory directory
// whose gates are open (memory.Dreamer: 24 h, a 10-minute scan throttle,
// 3 sessions; one process at a time).
func (p *Pipeline) dream(t Turn) {
	for _, d := range p.dirs() {
		dr := p.dreamer(d)
		if err := dr.NoteSession(t.Session); err != nil {
			p.log.Warn("memory consolidation: recording the session failed", "dir", d.Path(), "error", err)
			continue
		}
		ran, err := dr.MaybeRun(p.ctx, func(ctx context.Context, d *memory.Dir) error {
			ctx, cancel := context.WithTimeout(ctx, dreamTimeout)
			defer cancel()
			prompt := "Consolidate the memory directory " + d.Path() + ". List its files with Glob, read them, then merge, dedupe and prune with Write, Edit and Delete. The index (MEMORY.md) is rebuilt for you. Finish with one line saying what you changed."
			return p.runAgent(ctx, t, "dream", nil, []*memory.Dir{d}, dreamSystem, prompt, DreamMaxTurns)
		})
		if err != nil {
			p.log.Warn("memory consolidation failed", "dir", d.Path(), "error", err)
		} else if ran {
			p.log.Info("memory consolidated", "dir", d.Path())
		}
	}
}

func (p *Pipeline) dreamer(d *memory.Dir) *memory.Dreamer {
	p.mu.Lock()
	defer p.mu.Unlock()
	dr := p.dreamers[d.Path()]
	if dr == nil {
		dr = memory.NewDreamer(d, p.cfg.DreamConfig)
		p.dreamers[d.Path()] = dr
	}
	return dr
}
