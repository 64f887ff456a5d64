package llmtest

import (
	"context"

	"iter"
	"sync"
	"time"

	"github.com/weft-run/weft/llm"
)

// Scripted is an in-process llm.Provider that answers from scripts, for fast
// tests of code above the model layer. It honours the same Script fields as
// the wire fakes (HTTP errors become the matching *llm.Error, CutAfter
// becomes a dropped connection after that many deltas, Delay paces deltas)
// and records every request it gets.
type Scripted struct {
	name string

	mu      sync.Mutex
	scripts []Script
	reqs    []llm.Request
}

// NewScripted returns a provider named name answering with scripts in order.
func NewScripted(name string, scripts ...Script) *Scripted {
	return &Scripted{name: name, scripts: scripts}
}

// Push queues more scripts.
func (p *Scripted) Push(scripts ...Script) {
	p.mu.Lock()
	p.scripts = append(p.scripts, scripts...)
	p.mu.Unlock()
}

// Requests returns the requests received so far.
func (p *Scripted) Requests() []llm.Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]llm.Request(nil), p.reqs...)
}

func (p *Scripted) Name() string { return p.name }

func (p *Scripted) Stream(ctx context.Context, req *llm.Request) iter.Seq[llm.Event] {
	return func(yield func(llm.Event) bool) {
		f := llm.NewFramer(yield)
		p.mu.Lock()
		p.reqs = append(p.reqs, *req)
		var sc Script
		ok := len(p.scripts) > 0
		if ok {
			sc, p.scripts = p.scripts[0], p.scripts[1:]
		}
		p.mu.Unlock()
		if !ok {
			f.Fail(p.name, &llm.Error{Category: llm.CategoryBadRequest, Message: "llmtest: no script queued"})
			return
		}
		if sc.Status >= 400 {
			msg := sc.ErrorMessage
			if msg == "" {
				msg = "scripted error"
			}
			e := &llm.Error{Provider: p.name, Category: llm.CategoryForStatus(sc.Status, sc.ErrorType, msg),
				StatusCode: sc.Status, Type: sc.ErrorType, Message: msg, RetryAfter: sc.RetryAfter}
			e.Hint = llm.HintFor(e.Category)
			f.Fail(p.name, e)
			return
		}
		deltas := 0
		pace := func() error {
			deltas++
			if sc.CutAfter > 0 && deltas > sc.CutAfter {
				return &llm.Error{Category: llm.CategoryNetwork, Message: "scripted connection drop"}
			}
			if sc.Delay > 0 {
				t := time.NewTimer(sc.Delay)
				defer t.Stop()
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-t.C:
				}
			}
			return ctx.Err()
		}
		for _, b := range sc.Blocks {
			start := llm.Block{Type: b.Type, ToolUseID: b.ID, ToolName: b.Name}
			i, ok := f.Start(start)
			if !ok {
				return
			}
			for _, c := range b.Chunks {
				if err := pace(); err != nil {
					f.Fail(p.name, err)
					return
				}
				if !f.Delta(i, c) {
					return
				}
			}
			if b.Signature != "" {
				f.SetMeta(i, "scripted.signature", b.Signature)
			}
			if !f.Stop(i) {
				return
			}
		}
		if err := ctx.Err(); err != nil {
			f.Fail(p.name, err)
			return
		}
		f.SetUsage(sc.Usage)
		f.Finish(llm.Outcome{Status: llm.StatusCompleted, StopReason: sc.Stop(), StopSequence: sc.StopSequence})
	}
}

var _ llm.Provider = (*Scripted)(nil)
