// Package turnend is the turn-end pipeline (seed 004 §9): after every
// turn, in background goroutines that never crash the process (a panic
// is recovered and logged), it extracts memory from the conversation,
// checks whether memory is due for consolidation ("dream"), and asks a
// cheap model for follow-up prompts. The session service and weft chat
// call TurnEnded when a turn is over; neither waits for the pipeline.
package turnend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/event"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/memory"
	"github.com/weft-run/weft/policy/audit"
	"github.com/weft-run/weft/tool"
)

// Defaults of Config.
const (
	DefaultSuggestTimeout = 5 * time.Second
	// DefaultTranscriptBytes bounds the conversation an extraction agent
	// is shown (the newest part is kept).
	DefaultTranscriptBytes = 60 << 10
	// extractTimeout and dreamTimeout bound one agent run.
	extractTimeout = 5 * time.Minute
	dreamTimeout   = 15 * time.Minute
	// DreamMaxTurns bounds the consolidation agent's model calls (seed
	// 004 §6.3: at most 30 iterations).
	DreamMaxTurns = 30
	// maxSessions bounds the per-session extraction state kept.
	maxSessions = 4096
	// MaxSuggestions is how many follow-up prompts an event carries.
	MaxSuggestions   = 3
	maxSuggestionLen = 200
)

// Config configures a Pipeline. Each step is off unless turned on;
// extraction and consolidation also need Memory.
type Config struct {
	// Memory is the file memory the extraction and consolidation agents
	// work on; nil turns both off.
	Memory *memory.FileStore
	// Extract, Dream and Suggest turn the three steps on.
	Extract, Dream, Suggest bool
	// Extractor decides when to extract; nil means
	// &memory.DefaultCodeExtractor{}.
	Extractor memory.MemoryExtractor
	// Provider and Model run the three steps (a cheaper model, say); nil
	// means the turn's own.
	Provider llm.Provider
	Model    string
	// Audit receives the memory agents' refused calls (a write outside
	// memory); nil means they are only logged.
	Audit audit.Sink
	// SuggestTimeout bounds the suggestions call; 0 means 5 s.
	SuggestTimeout time.Duration
	// DreamConfig gates consolidation (memory.DreamConfig).
	DreamConfig memory.DreamConfig
	// TranscriptBytes bounds what the extraction agent is shown; 0
	// means DefaultTranscriptBytes.
	TranscriptBytes int
	// Logger; nil means slog.Default().
	Logger *slog.Logger
}

// Turn is a finished turn.
type Turn struct {
	// Session names the conversation (extraction state, the dream's
	// session count).
	Session string
	// Messages is the whole conversation after the turn; the pipeline
	// only reads it.
	Messages []llm.Message
	// Provider and Model are the turn's (used when Config has none).
	Provider llm.Provider
	Model    string
	// StopReason is the turn's; only a turn that finished (end_turn,
	// stop_sequence) gets suggestions.
	StopReason string
	// Suggest is called once when the suggestions step ends, with up to
	// MaxSuggestions prompts, or none when the model gave none, failed or
	// was slower than SuggestTimeout; nil (or a turn that did not
	// finish) skips the step.
	Suggest func(event.SuggestionsData)
}

// Pipeline runs the steps. Safe for concurrent use; Close it to stop
// its background work.
type Pipeline struct {
	cfg    Config
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	closed   bool
	sessions map[string]*extractState
	dreamers map[string]*memory.Dreamer
}

// extractState is a session's extraction bookkeeping: single-flight, a
// newer request replacing a pending one.
type extractState struct {
	turns    int // turns seen
	lastTurn int // turn of the last extraction (or skip)
	lastMsg  int // messages covered by it
	running  bool
	pending  *job
}

type job struct {
	turn      Turn
	turnCount int
}

// New returns a Pipeline.
func New(cfg Config) *Pipeline {
	if cfg.Extractor == nil {
		cfg.Extractor = &memory.DefaultCodeExtractor{}
	}
	if cfg.SuggestTimeout <= 0 {
		cfg.SuggestTimeout = DefaultSuggestTimeout
	}
	if cfg.TranscriptBytes <= 0 {
		cfg.TranscriptBytes = DefaultTranscriptBytes
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Pipeline{cfg: cfg, log: log, ctx: ctx, cancel: cancel,
		sessions: map[string]*extractState{}, dreamers: map[string]*memory.Dreamer{}}
}

// Enabled reports whether any step is on.
func (p *Pipeline) Enabled() bool {
	return p != nil && (p.cfg.Suggest || (p.cfg.Memory != nil && (p.cfg.Extract || p.cfg.Dream)))
}

// Suggests reports whether the suggestions step is on.
func (p *Pipeline) Suggests() bool { return p != nil && p.cfg.Suggest }

// Wait waits for the background work started so far.
func (p *Pipeline) Wait() { p.wg.Wait() }

// Drain waits for the background work started so far until ctx ends,
// then closes the pipeline: a one-shot command's extraction gets to finish
// before the process exits, within a bound.
func (p *Pipeline) Drain(ctx context.Context) {
	if p == nil {
		return
	}
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	p.Close()
}

// Close cancels the background work, waits for it, and ignores later
// turns.
func (p *Pipeline) Close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.cancel()
	p.wg.Wait()
}

// safe runs fn, logging a panic instead of passing it on: a step of the
// pipeline must never take the process down.
func (p *Pipeline) safe(step string, fn func()) {
	defer func() {
		if r := recover(); r != nil {
			p.log.Error("turn-end pipeline: a step panicked", "step", step, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	fn()
}

// spawn runs fn in a goroutine under safe.
func (p *Pipeline) spawn(step string, fn func()) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.safe(step, fn)
	}()
}

// TurnEnded starts the pipeline for t and returns at once.
func (p *Pipeline) TurnEnded(t Turn) {
	if !p.Enabled() {
		return
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	// Added under mu: Close's Wait must see it.
	p.wg.Add(1)
	p.mu.Unlock()
	defer p.wg.Done()
	if p.cfg.Memory != nil && p.cfg.Extract {
		// Decided here, in order: a newer turn's request must replace an
		// older one, never the other way round.
		p.safe("extract", func() { p.requestExtraction(t) })
	}
	if p.cfg.Memory != nil && p.cfg.Dream {
		p.spawn("dream", func() { p.dream(t) })
	}
	if p.cfg.Suggest && t.Suggest != nil && (t.StopReason == agent.StopEndTurn || t.StopReason == agent.StopSequence) {
		p.spawn("suggest", func() { p.suggest(t) })
	}
}

func (p *Pipeline) model(t Turn) (llm.Provider, string) {
	if p.cfg.Provider != nil && p.cfg.Model != "" {
		return p.cfg.Provider, p.cfg.Model
	}
	return t.Provider, t.Model
}

// dirs are the memory directories, project first (where a relative path
// lands and where extraction writes by default).
func (p *Pipeline) dirs() []*memory.Dir {
	var out []*memory.Dir
	if d := p.cfg.Memory.Dir(memory.ScopeProject); d != nil {
		out = append(out, d)
	}
	return append(out, p.cfg.Memory.Dir(memory.ScopeUser))
}

// runAgent runs a memory agent confined to dirs with the given tools and
// returns an error unless it finished normally.
func (p *Pipeline) runAgent(ctx context.Context, t Turn, role string, tools []string, dirs []*memory.Dir, system, prompt string, maxTurns int) error {
	conf, err := memory.NewConfinement(tools, dirs...)
	if err != nil {
		return err
	}
	reg, err := tool.NewRegistry(conf.Tools()...)
	if err != nil {
		return err
	}
	pol, err := conf.Policy(p.cfg.Audit, t.Session)
	if err != nil {
		return err
	}
	prov, model := p.model(t)
	if prov == nil || model == "" {
		return errors.New("no model for the memory agent")
	}
	a, err := agent.New(agent.Config{
		Provider: prov, Model: model, System: system, Tools: reg, MaxTurns: maxTurns,
		Policy: pol, Logger: p.log.With("memory_agent", role),
		// Background work: one retry, not five with backoff; what fails
		// is tried again at a later turn.
		Retry: agent.RetryPolicy{MaxAttempts: 2},
	})
	if err != nil {
		return err
	}
	var done agent.DoneData
	var runErr error
	for ev, err := range a.NewSession().Run(ctx, prompt) {
		if err != nil {
			runErr = err
		}
		switch ev.Type {
		case agent.EventDone:
			done, _ = ev.Data.(agent.DoneData)
		case agent.EventError:
			if d, ok := ev.Data.(agent.ErrorData); ok && runErr == nil {
				runErr = errors.New(d.Error)
			}
		}
	}
	switch {
	case runErr != nil:
		return runErr
	case done.StopReason == agent.StopEndTurn || done.StopReason == agent.StopSequence:
		return nil
	default:
		return fmt.Errorf("the %s agent stopped: %s", role, nonEmpty(done.StopReason, "no done event"))
	}
}

func nonEmpty(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// cleanSuggestions turns the model's answer into at most MaxSuggestions
// one-line prompts: list markers and quotes dropped, duplicates and
// empty or overlong lines left out.
func cleanSuggestions(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		// Control characters (terminal escapes) never reach a screen.
		s := strings.TrimSpace(strings.Map(func(r rune) rune {
			if unicode.IsControl(r) {
				return -1
			}
			return r
		}, line))
		s = strings.TrimLeft(s, "-*•0123456789.) ")
		s = strings.Trim(strings.TrimSpace(s), "\"'`")
		s = strings.TrimSpace(s)
		if s == "" || len(s) > maxSuggestionLen {
			continue
		}
		dup := false
		for _, o := range out {
			if strings.EqualFold(o, s) {
				dup = true
			}
		}
		if !dup {
			out = append(out, s)
		}
		if len(out) == MaxSuggestions {
			break
		}
	}
	return out
}
