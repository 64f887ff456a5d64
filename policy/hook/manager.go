package hook

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Options configure a Manager. The zero value works: slog.Default(), a
// private http.Client, and Input.Cwd as the project root.
type Options struct {
	Logger      *slog.Logger
	HTTPClient  *http.Client
	ProjectRoot string // PROJECT_ROOT and CLAUDE_PROJECT_DIR of command hooks
	// MaxBackground bounds the hook work running in the background at
	// once: async hooks and the runs started with Go. Work beyond it is
	// dropped with a warning rather than queued, so a burst of events
	// cannot pile up processes or memory. Zero means
	// DefaultMaxBackground.
	MaxBackground int
}

// DefaultMaxBackground is Options.MaxBackground's default.
const DefaultMaxBackground = 32

// PluginInfo describes one plugin's hooks for the trust endpoints.
type PluginInfo struct {
	ID      string `json:"id"`
	Trusted bool   `json:"trusted"`
	Hooks   int    `json:"hooks"`
}

// Manager holds the registered hooks and runs them. It is safe for
// concurrent use.
type Manager struct {
	log         *slog.Logger
	client      *http.Client
	projectRoot string

	mu      sync.RWMutex
	sources []*bucket // [0] is the global source ""; plugins follow in first-registration order
	trusted map[string]bool

	bg background
}

// bucket is one source's hooks in registration order.
type bucket struct {
	source  string
	entries []*entry
	seq     int // names generated so far, so generated names stay unique
}

// entry is a validated Def with its compiled matcher.
type entry struct {
	def   Def
	match matcher
}

// NewManager returns a Manager with no hooks.
func NewManager(opt Options) *Manager {
	m := &Manager{
		log:         opt.Logger,
		client:      opt.HTTPClient,
		projectRoot: opt.ProjectRoot,
		sources:     []*bucket{{source: ""}},
		trusted:     map[string]bool{},
	}
	m.bg.limit = opt.MaxBackground
	if m.bg.limit <= 0 {
		m.bg.limit = DefaultMaxBackground
	}
	m.bg.stop, m.bg.kill = context.WithCancel(context.Background())
	if m.log == nil {
		m.log = slog.Default()
	}
	if m.client == nil {
		m.client = &http.Client{}
	}
	return m
}

// compile validates defs and prepares their entries; nothing is registered
// unless every def is valid.
func compile(defs []Def) ([]*entry, error) {
	out := make([]*entry, 0, len(defs))
	for i, d := range defs {
		if err := d.validate(); err != nil {
			name := d.Name
			if name == "" {
				name = fmt.Sprintf("#%d", i)
			}
			return nil, fmt.Errorf("hook %s: %w", name, err)
		}
		mt, _ := compileMatcher(d.Matcher) // validate compiled it already
		d.Env = slices.Clone(d.Env)
		d.Headers = maps.Clone(d.Headers)
		d.HeaderEnv = slices.Clone(d.HeaderEnv)
		out = append(out, &entry{def: d, match: mt})
	}
	return out, nil
}

// bucketLocked returns the bucket of source, creating it if asked.
func (m *Manager) bucketLocked(source string, create bool) *bucket {
	for _, b := range m.sources {
		if b.source == source {
			return b
		}
	}
	if !create {
		return nil
	}
	b := &bucket{source: source}
	m.sources = append(m.sources, b)
	return b
}

func (b *bucket) add(e *entry) {
	b.seq++
	if e.def.Name == "" {
		prefix := "global"
		if b.source != "" {
			prefix = "plugin/" + b.source
		}
		e.def.Name = fmt.Sprintf("%s/%s[%d]", prefix, e.def.Event, b.seq-1)
	}
	b.entries = append(b.entries, e)
}

// Register adds hooks after those already registered for their source. It
// validates every def first (a known event, exactly one handler, a matcher
// that compiles, an absolute http(s) URL) and registers none if one is
// invalid.
func (m *Manager) Register(defs ...Def) error {
	entries, err := compile(defs)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range entries {
		m.bucketLocked(e.def.Source, true).add(e)
	}
	return nil
}

// ReplaceSource atomically swaps all hooks of source for defs (a settings
// reload with source "", a plugin sync with its id); every def's Source is
// set to source. Runs already in progress finish with the old hooks. On a
// validation error nothing changes. Source "" holds every global hook,
// including Go callbacks registered directly, so a settings reload passes
// those again.
func (m *Manager) ReplaceSource(source string, defs []Def) error {
	defs = slices.Clone(defs)
	for i := range defs {
		defs[i].Source = source
	}
	entries, err := compile(defs)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	b := m.bucketLocked(source, true)
	b.entries, b.seq = nil, 0
	for _, e := range entries {
		b.add(e)
	}
	return nil
}

// UnregisterSource removes every hook of source. A plugin keeps its trust,
// so reinstalling it does not silently need trusting again.
func (m *Manager) UnregisterSource(source string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if source == "" {
		m.sources[0].entries, m.sources[0].seq = nil, 0
		return
	}
	m.sources = slices.DeleteFunc(m.sources, func(b *bucket) bool { return b.source == source })
}

// Trust lets the hooks of plugin pluginID run, from the next Run on.
func (m *Manager) Trust(pluginID string) {
	if pluginID == "" {
		return
	}
	m.mu.Lock()
	m.trusted[pluginID] = true
	m.mu.Unlock()
}

// Untrust stops the hooks of plugin pluginID, from the next Run on.
func (m *Manager) Untrust(pluginID string) {
	m.mu.Lock()
	delete(m.trusted, pluginID)
	m.mu.Unlock()
}

// Trusted reports whether plugin pluginID's hooks may run. Global hooks
// ("") are always trusted.
func (m *Manager) Trusted(pluginID string) bool {
	if pluginID == "" {
		return true
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.trusted[pluginID]
}

// Plugins lists the plugins that registered hooks, in registration order,
// then trusted plugins that have none registered, by id.
func (m *Manager) Plugins() []PluginInfo {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []PluginInfo
	seen := map[string]bool{}
	for _, b := range m.sources[1:] {
		seen[b.source] = true
		out = append(out, PluginInfo{ID: b.source, Trusted: m.trusted[b.source], Hooks: len(b.entries)})
	}
	var rest []string
	for id := range m.trusted {
		if !seen[id] {
			rest = append(rest, id)
		}
	}
	sort.Strings(rest)
	for _, id := range rest {
		out = append(out, PluginInfo{ID: id, Trusted: true})
	}
	return out
}

// Defs returns a snapshot of every registered hook (global first, then
// plugins), trusted or not.
func (m *Manager) Defs() []Def {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []Def
	for _, b := range m.sources {
		for _, e := range b.entries {
			d := e.def
			d.Env = slices.Clone(d.Env)
			d.Headers = maps.Clone(d.Headers)
			d.HeaderEnv = slices.Clone(d.HeaderEnv)
			out = append(out, d)
		}
	}
	return out
}

// Has reports whether any hook that may run (global, or from a trusted
// plugin) listens to e, so callers can skip building an Input.
func (m *Manager) Has(e Event) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for _, b := range m.sources {
		if b.source != "" && !m.trusted[b.source] {
			continue
		}
		for _, en := range b.entries {
			if en.def.Event == e {
				return true
			}
		}
	}
	return false
}

// matching returns, in run order, the hooks that apply to in.
func (m *Manager) matching(in Input) []*entry {
	subject, applies := matchSubject(in)
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []*entry
	for _, b := range m.sources {
		if b.source != "" && !m.trusted[b.source] {
			continue
		}
		for _, e := range b.entries {
			if e.def.Event != in.Event {
				continue
			}
			if applies && !e.match.match(subject) {
				continue
			}
			out = append(out, e)
		}
	}
	return out
}

// Run runs the hooks for in.Event that match in: global hooks in
// registration order, then those of trusted plugins. Synchronous hooks run
// one after another; a hook's updatedInput replaces in.ToolInput for the
// hooks after it. The first deny ends the run (its reason and hook are
// reported); otherwise any ask makes the verdict ask, else any explicit
// allow makes it allow, else it is NoOpinion. Async hooks are started in
// their turn and never waited for by Run (Close waits for them; beyond
// Options.MaxBackground they are dropped).
//
// Run never fails: hooks that fail are logged and ignored (fail open).
// When ctx is done Run stops starting hooks, kills the running one and
// returns what it has; the caller, whose context it is, is expected to
// abandon the action.
func (m *Manager) Run(ctx context.Context, in Input) Outcome {
	var out Outcome
	var ask, allow *Outcome
	var contexts []string
	denied := false
	for _, e := range m.matching(in) {
		if ctx.Err() != nil {
			break
		}
		if e.def.Async {
			m.startAsync(ctx, e, in)
			continue
		}
		if denied {
			continue
		}
		o, ok := m.runOne(ctx, e, in)
		if !ok {
			continue
		}
		if o.AdditionalContext != "" {
			contexts = append(contexts, o.AdditionalContext)
		}
		if o.Stop {
			out.Stop = true
			if out.StopReason == "" {
				out.StopReason = o.StopReason
			}
		}
		switch o.Verdict {
		case Deny:
			out.Verdict, out.Reason, out.Hook = Deny, o.Reason, o.Hook
			denied = true
			continue
		case Ask:
			if ask == nil {
				ask = &o
			}
		case Allow:
			if allow == nil {
				allow = &o
			}
		}
		if len(o.UpdatedInput) > 0 {
			in.ToolInput = o.UpdatedInput
			out.UpdatedInput = o.UpdatedInput
		}
	}
	if !denied {
		switch {
		case ask != nil:
			out.Verdict, out.Reason, out.Hook = Ask, ask.Reason, ask.Hook
		case allow != nil:
			out.Verdict, out.Reason, out.Hook = Allow, allow.Reason, allow.Hook
		}
	}
	out.AdditionalContext = strings.Join(contexts, "\n")
	return out
}

// runOne runs one synchronous hook under its timeout. ok is false when the
// hook failed open or was cancelled; the failure has been logged.
func (m *Manager) runOne(ctx context.Context, e *entry, in Input) (Outcome, bool) {
	hctx, cancel := context.WithTimeout(ctx, e.def.timeout())
	defer cancel()
	o, err := m.invoke(hctx, &e.def, in)
	if err != nil {
		if ctx.Err() != nil {
			m.log.Debug("hook cancelled", "hook", e.def.Name, "event", in.Event, "cause", ctx.Err())
		} else {
			m.log.Warn("hook failed; continuing (fail open)", "hook", e.def.Name, "event", in.Event, "cause", err)
		}
		return Outcome{}, false
	}
	o.Hook = e.def.Name
	if o.Verdict == Deny && o.Reason == "" {
		o.Reason = "blocked by hook " + e.def.Name
	}
	return o, true
}

// startAsync runs an async hook in the background under its own timeout:
// the caller's cancellation does not reach it, since the caller has long
// moved on by design. Close waits for it.
func (m *Manager) startAsync(ctx context.Context, e *entry, in Input) {
	m.background(ctx, e.def.Name, in.Event, func(ctx context.Context) {
		hctx, cancel := context.WithTimeout(ctx, e.def.timeout())
		defer cancel()
		o, err := m.invoke(hctx, &e.def, in)
		if err != nil {
			m.log.Warn("async hook failed", "hook", e.def.Name, "event", in.Event, "cause", err)
			return
		}
		m.log.Debug("async hook finished; outcome ignored", "hook", e.def.Name, "event", in.Event, "verdict", string(o.Verdict))
	})
}

// Go runs the hooks for in in the background, for events nobody waits on
// (post_sampling, run_complete, the server's own observers): ctx's values
// reach the hooks but not its cancellation, each hook keeps its timeout,
// and Close waits for the run. It reports false when the run was dropped
// because MaxBackground runs are in flight or the manager is closed (a
// warning is logged).
func (m *Manager) Go(ctx context.Context, in Input) bool {
	if !m.Has(in.Event) {
		return true
	}
	return m.background(ctx, "", in.Event, func(ctx context.Context) { m.Run(ctx, in) })
}

// background starts f on its own goroutine if the bound allows, with a
// context that ignores ctx's cancellation but ends when Close gives up
// waiting.
func (m *Manager) background(ctx context.Context, hook string, ev Event, f func(context.Context)) bool {
	if reason := m.bg.acquire(); reason != "" {
		m.log.Warn("background hook dropped: "+reason, "hook", hook, "event", ev, "limit", m.bg.limit)
		return false
	}
	go func() {
		defer m.bg.release()
		bctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		defer cancel()
		defer context.AfterFunc(m.bg.stop, cancel)()
		f(bctx)
	}()
	return true
}

// Wait blocks until every background hook started so far has finished (in
// tests; at shutdown use Close, which also bounds the wait).
func (m *Manager) Wait() { m.bg.wait(nil) }

// closeGrace is how long Close waits, once its context is done, for the
// hooks it cancelled to return (their processes are killed).
const closeGrace = 5 * time.Second

// Close stops accepting background work (later async hooks and Go runs
// are dropped with a warning) and waits for the work in flight. When ctx
// ends first it cancels what is still running, which kills hook
// processes, waits up to a few seconds for it to return, and returns an
// error saying how many were cut off. Synchronous Runs are unaffected.
// Close may be called more than once.
func (m *Manager) Close(ctx context.Context) error {
	m.bg.close()
	if m.bg.wait(ctx.Done()) {
		return nil
	}
	n := m.bg.running()
	m.bg.kill()
	grace, cancel := context.WithTimeout(context.Background(), closeGrace)
	defer cancel()
	m.bg.wait(grace.Done())
	return fmt.Errorf("hook: %d background hooks still running at shutdown were cancelled: %w", n, context.Cause(ctx))
}

// invoke dispatches to the handler kind and validates what it returned.
func (m *Manager) invoke(ctx context.Context, d *Def, in Input) (Outcome, error) {
	var o Outcome
	var err error
	switch {
	case d.Func != nil:
		o, err = runFunc(ctx, d, in)
	case d.URL != "":
		o, err = m.runHTTP(ctx, d, in)
	default:
		o, err = m.runCommand(ctx, d, in)
	}
	if err != nil {
		return Outcome{}, err
	}
	switch o.Verdict {
	case NoOpinion, Allow, Deny, Ask:
	default:
		return Outcome{}, fmt.Errorf("unknown verdict %q", o.Verdict)
	}
	return o, nil
}

// background counts the hook work running in the background, bounds it,
// and lets Close wait for it. (A WaitGroup forbids Add at zero during
// Wait, and new work may arrive while someone waits.)
type background struct {
	limit int
	stop  context.Context // done when Close gives up waiting
	kill  context.CancelFunc

	mu     sync.Mutex
	n      int
	closed bool
	idle   chan struct{} // closed when n drops to zero; nil while n is zero
}

// acquire takes a slot; it returns why it cannot ("" when it did).
func (b *background) acquire() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.closed:
		return "the hook manager is closed (shutting down)"
	case b.n >= b.limit:
		return "too many background hooks running"
	}
	if b.n == 0 {
		b.idle = make(chan struct{})
	}
	b.n++
	return ""
}

func (b *background) release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.n--
	if b.n == 0 {
		close(b.idle)
		b.idle = nil
	}
}

func (b *background) running() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n
}

func (b *background) close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
}

// wait blocks until nothing runs (true) or give-up is ready (false).
func (b *background) wait(giveUp <-chan struct{}) bool {
	for {
		b.mu.Lock()
		ch := b.idle
		b.mu.Unlock()
		if ch == nil {
			return true
		}
		select {
		case <-ch:
		case <-giveUp:
			return false
		}
	}
}
