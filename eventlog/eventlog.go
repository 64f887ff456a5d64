// Package eventlog is weft's one event log: every observable event of a
// session is appended here, and live streams, history, resume after a
// disconnect or a restart, audit and UI replay all read it back through a
// Reader.
//
// Durable before visible. The Log assigns each session's seqs itself
// (continuing from the store's last seq when it first meets the session)
// and puts the events in the session's ring of recent events; a background
// persister writes them to the store, and only once the store has
// committed them does the session's durable seq (its watermark) move and
// its readers wake. A reader never receives an event above the watermark,
// as a Kafka consumer never reads past the high watermark, so a crash
// takes back nothing a client saw, and after a restart seqs continue from
// the store's last one without reissuing a seq anyone was shown.
//
// The persister commits in rounds (natural group commit, as PostgreSQL and
// etcd do): a round starts as soon as events are waiting and the previous
// round has committed, and takes every session with events waiting, in one
// store call when the store implements store.BatchEvents (store/sqlite: one
// transaction). An idle Log has no goroutine and a lone event is committed
// at once; under load, whatever arrives while a round commits shares the
// next one, so the added latency is about two commits and the cost per
// event falls as the load grows.
//
// The ring never drops an event the store does not have yet, so a reader
// that falls behind the ring and reads the store still finds every event.
// A reader holds only a position (plus at most one batch read from the
// store while it is behind the ring): there is no per-reader queue, so a
// slow or idle reader costs nothing and never delays the appender or other
// readers.
//
// Durability for writers. Publish returns once the events are numbered;
// Append also waits until they are in the store; Flush and FlushAll wait
// for what was published. CloseSession flushes the session it closes. If
// the store refuses an append, the session's persistence has failed: the
// error is logged, returned by the Append, Flush and FlushAll calls
// waiting for those events, and by every later Publish or Append of the
// session, until the session's in-memory state is dropped (CloseSession,
// or idle eviction). The refused events were never visible; a new state
// numbers after what the store has, so their seqs may be assigned again,
// to events that will be the first anyone sees with those seqs.
//
// One Log must be the only writer of a store's events: it numbers events
// before the store sees them, and checks that the store agrees.
package eventlog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/weft-run/weft/store"
)

// Errors returned by Reader.Next (errors.Is).
var (
	// ErrClosed: the reader was closed.
	ErrClosed = errors.New("eventlog: reader closed")
	// ErrSessionClosed: the session was closed (for example deleted) and the
	// reader has drained every event that existed; or, from a Writer, the
	// incarnation it appends to was closed.
	ErrSessionClosed = errors.New("eventlog: session closed")
	// ErrWriterClosed: an append through a Writer after its Close.
	ErrWriterClosed = errors.New("eventlog: writer closed")
)

// Store is what the Log needs from storage: the events, and a session's
// header, whose LastSeq tells where a session's seqs continue after a
// restart. store.Store satisfies it.
type Store interface {
	store.Events
	GetSession(ctx context.Context, id string) (store.Session, error)
}

// Options tune the memory/latency trade-off. The zero value is usable.
type Options struct {
	// Window is how many of a session's most recent events are kept in
	// memory for live readers. 0 means 1024. Events not yet persisted are
	// kept beyond it.
	Window int
	// ReadBatch is how many events a reader fetches per store read while it
	// is behind the window. 0 means 256.
	ReadBatch int
	// IdleEvict drops a session's in-memory window once it has had no
	// appends and no reads for this long. 0 means 5 minutes.
	IdleEvict time.Duration
	// PersistDelay is an extra pause before each persist round, to gather
	// more events per commit (PostgreSQL's commit_delay). Every event
	// waits for it before any reader sees it, so it adds to the latency of
	// delivery. 0, the default, means none: rounds follow each other as
	// commits allow (natural group commit). A caller waiting for
	// durability (Append, Flush) rides the next round when the store
	// batches and PersistDelay is at most 100ms, and otherwise appends its
	// session's events itself.
	PersistDelay time.Duration
	// MaxUnpersisted bounds a session's events waiting for the store;
	// Publish waits when it is reached, slowing the producer to the
	// store's pace instead of growing without bound. 0 means 1024.
	MaxUnpersisted int
	// Logger receives persistence failures. nil means slog.Default().
	Logger *slog.Logger
	// Redact, when set, rewrites every event's data before the event gets
	// its seq, so that readers and the store see the same redacted bytes
	// (weft passes its secrets' RedactJSON). It must return valid JSON for
	// valid JSON, and may return its argument.
	Redact func(data []byte) []byte
}

func (o Options) withDefaults() Options {
	if o.Window <= 0 {
		o.Window = 1024
	}
	if o.ReadBatch <= 0 {
		o.ReadBatch = 256
	}
	if o.IdleEvict <= 0 {
		o.IdleEvict = 5 * time.Minute
	}
	if o.PersistDelay < 0 {
		o.PersistDelay = 0
	}
	if o.MaxUnpersisted <= 0 {
		o.MaxUnpersisted = 1024
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

const (
	// persistBatch bounds the events of one store append.
	persistBatch = 256
	// persistWorkers is how many store appends one persist round keeps in
	// flight: enough for a store that commits concurrent appends together
	// (store/sqlite groups up to 64 per transaction) to fill its groups.
	persistWorkers = 64
	// joinRoundMax is the longest PersistDelay for which a durable wait
	// joins the persister's next round (see advance).
	joinRoundMax = 100 * time.Millisecond
)

// Log is the event log over a store. It is safe for concurrent use.
type Log struct {
	events Store
	batch  store.BatchEvents // events, when it appends many sessions at once
	opt    Options
	now    func() time.Time // replaced by tests to drive eviction

	mu        sync.RWMutex
	sessions  map[string]*session
	lastSweep atomic.Int64 // unix nanos of the last idle sweep

	// The persister: one goroutine, running only while some session has
	// events to persist. dirty lists those sessions (each at most once,
	// see session.queued).
	pmu        sync.Mutex
	dirty      []*session
	persisting bool
	writing    bool // a round is being written
}

// session is the in-memory state of one active session.
type session struct {
	id string
	// sem serialises publishing for the session (seq assignment and ring
	// push together), so the ring receives seqs in order and without gaps.
	// It is a channel rather than a mutex so a waiting Publish honours its
	// ctx.
	sem chan struct{}

	// readers counts open Readers, writers open Writers; pending counts
	// Publishes in flight. All are raised under Log.mu, so the sweep
	// (which holds Log.mu exclusively) never evicts a session someone is
	// about to use.
	readers atomic.Int32
	writers atomic.Int32
	pending atomic.Int32
	// touched records reads since the last sweep without a clock call on the
	// read path.
	touched atomic.Bool
	// waited records that a reader took notify since the last broadcast, so
	// appends nobody waits for allocate no channel. Set under mu.RLock.
	waited atomic.Bool

	mu sync.RWMutex
	// ring holds seqs first..first+n-1 in order, ring[start] the oldest;
	// len(ring) is its capacity. It holds at most Window events, plus any
	// the store does not have yet.
	ring  []store.Event
	start int
	n     int
	first int64
	// last is the highest seq of the session, 0 when none is known. It
	// survives dropping the ring, so caught-up readers keep waiting in
	// memory instead of polling the store.
	last int64
	// seeded: last was read from the store, so seqs can be assigned.
	seeded bool
	// durable is the highest seq the store has: the watermark readers
	// follow. durable+1..last are in the ring, invisible until stored.
	durable int64
	// queued: the session is in the persister's dirty list. inflight: a
	// store append of its events is in progress (at most one is, so they
	// reach the store in seq order).
	queued   bool
	inflight bool
	// failed is the store's refusal of an append: sticky for this state.
	failed error
	// persisted is closed when durable moves or failed is set, if
	// durWaited says someone waits on it.
	persisted chan struct{}
	durWaited bool

	notify     chan struct{}
	closed     bool
	lastActive time.Time
}

// New returns a Log over events.
func New(events Store, opt Options) *Log {
	b, _ := events.(store.BatchEvents)
	return &Log{
		events:   events,
		batch:    b,
		opt:      opt.withDefaults(),
		now:      time.Now,
		sessions: make(map[string]*session),
	}
}

// Publish appends events to the session, returning them with Seq,
// SessionID and CreatedAt set (a zero CreatedAt becomes now). It does not
// wait for the store: the persister writes the events in its next round,
// and readers see them once they are stored (see Flush). Concurrent
// Publishes and Appends to one session are serialised; different sessions
// are independent. It waits (honouring ctx) only to learn a session's last
// seq from the store the first time, or while the session has
// MaxUnpersisted events waiting for the store.
//
// Publish takes ownership of the events' Data, and the returned events are
// shared with readers: treat them as immutable.
func (l *Log) Publish(ctx context.Context, sessionID string, events ...store.Event) ([]store.Event, error) {
	out, _, err := l.publish(ctx, sessionID, events)
	return out, err
}

// Append is Publish followed by waiting until the events are in the store
// (and so visible to readers). Once the events are published, the wait no
// longer honours ctx (it ends when the store has answered), so that an
// error means the store does not have them all. A persistence failure is returned wrapped (errors.Is sees the
// store's error).
func (l *Log) Append(ctx context.Context, sessionID string, events ...store.Event) ([]store.Event, error) {
	out, s, err := l.publish(ctx, sessionID, events)
	if err != nil || len(out) == 0 {
		return out, err
	}
	if err := l.waitDurable(context.WithoutCancel(ctx), s, out[len(out)-1].Seq); err != nil {
		return nil, err
	}
	return out, nil
}

func (l *Log) publish(ctx context.Context, sessionID string, events []store.Event) ([]store.Event, *session, error) {
	if len(events) == 0 {
		return nil, nil, nil
	}
	events, err := l.prepare(ctx, sessionID, events)
	if err != nil {
		return nil, nil, err
	}
	for {
		s := l.acquire(sessionID)
		out, err := l.publishTo(ctx, s, events)
		s.pending.Add(-1)
		if errors.Is(err, errDetached) {
			// CloseSession detached this state after we found it; appends
			// from now on belong to whatever Subscribe or Append creates
			// next, so retry against the current one.
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		return out, s, nil
	}
}

// errDetached: the state a publish found was closed meanwhile.
var errDetached = errors.New("eventlog: session state detached")

// prepare redacts events (Options.Redact) and checks them before they
// get seqs; the caller's slice is left alone.
func (l *Log) prepare(ctx context.Context, sessionID string, events []store.Event) ([]store.Event, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	events = l.redact(events)
	for i, e := range events {
		// The store would refuse it, failing the session: refuse it here
		// instead.
		if e.Data != nil && !json.Valid(e.Data) {
			return nil, fmt.Errorf("eventlog: append to session %s: event %d (%s): data is not valid JSON", sessionID, i, e.Type)
		}
	}
	return events, nil
}

// publishTo publishes to the state s, which the caller keeps from
// eviction. It returns errDetached when s was closed.
func (l *Log) publishTo(ctx context.Context, s *session, events []store.Event) ([]store.Event, error) {
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-s.sem }()
	s.mu.RLock()
	closed := s.closed
	s.mu.RUnlock()
	if closed {
		return nil, errDetached
	}
	out, err := l.publishLocked(ctx, s, events)
	if err != nil {
		return nil, fmt.Errorf("eventlog: append to session %s: %w", s.id, err)
	}
	return out, nil
}

// publishLocked numbers events and pushes them; the caller holds s.sem.
func (l *Log) publishLocked(ctx context.Context, s *session, events []store.Event) ([]store.Event, error) {
	if err := l.seedLocked(ctx, s); err != nil {
		return nil, err
	}
	if err := l.waitRoom(ctx, s); err != nil {
		return nil, err
	}
	now := l.now()
	created := time.Unix(0, now.UnixNano()).UTC() // as a store returns it
	s.mu.Lock()
	if s.failed != nil {
		err := s.failed
		s.mu.Unlock()
		return nil, err
	}
	out := make([]store.Event, len(events))
	for i, e := range events {
		e.SessionID = s.id
		e.Seq = s.last + 1 + int64(i)
		if e.CreatedAt.IsZero() {
			e.CreatedAt = created
		}
		out[i] = e
	}
	s.push(out, l.opt.Window, now)
	enqueue := !s.queued
	s.queued = true
	s.mu.Unlock()
	if enqueue {
		l.enqueue(s)
	}
	return out, nil
}

// seedLocked learns the session's last seq from the store the first time
// the state publishes. The caller holds s.sem, so nobody assigns seqs
// meanwhile.
func (l *Log) seedLocked(ctx context.Context, s *session) error {
	s.mu.RLock()
	seeded := s.seeded
	s.mu.RUnlock()
	if seeded {
		return nil
	}
	sess, err := l.events.GetSession(ctx, s.id)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.last, s.durable, s.seeded = sess.LastSeq, sess.LastSeq, true
	s.mu.Unlock()
	return nil
}

// waitRoom waits while the session has MaxUnpersisted events waiting for
// the store. The caller holds s.sem.
func (l *Log) waitRoom(ctx context.Context, s *session) error {
	for {
		s.mu.Lock()
		if s.failed != nil || s.last-s.durable < int64(l.opt.MaxUnpersisted) {
			s.mu.Unlock()
			return nil // a failure is reported by the caller
		}
		ch := s.persistedChan()
		queued := s.queued
		s.mu.Unlock()
		if err := l.advance(ctx, s, ch, queued); err != nil {
			return err
		}
	}
}

// Flush waits until every event published to the session before the call
// is in the store, or ctx ends. It returns the session's persistence
// failure, if any.
func (l *Log) Flush(ctx context.Context, sessionID string) error {
	l.mu.RLock()
	s := l.sessions[sessionID]
	l.mu.RUnlock()
	if s == nil {
		return nil // no state: nothing waits for the store
	}
	s.mu.RLock()
	last := s.last
	s.mu.RUnlock()
	return l.waitDurable(ctx, s, last)
}

// FlushAll waits until every event published before the call, to any
// session, is in the store, or ctx ends. Call it before closing the store.
// It returns the sessions' persistence failures, joined.
func (l *Log) FlushAll(ctx context.Context) error {
	l.mu.RLock()
	var all []*session
	for _, s := range l.sessions {
		s.mu.RLock()
		if s.durable < s.last {
			all = append(all, s)
		}
		s.mu.RUnlock()
	}
	l.mu.RUnlock()
	errs := make([]error, len(all))
	// Sessions flush in parallel, so a store that commits concurrent
	// appends together gets full groups.
	parallel(len(all), func(i int) {
		s := all[i]
		s.mu.RLock()
		last := s.last
		s.mu.RUnlock()
		errs[i] = l.waitDurable(ctx, s, last)
	})
	if err := ctx.Err(); err != nil {
		return err
	}
	return errors.Join(errs...)
}

// waitDurable waits until the store has seq (or the session failed); see
// advance for how it gets there. ctx is checked between store appends;
// one in progress is not abandoned.
func (l *Log) waitDurable(ctx context.Context, s *session, seq int64) error {
	for {
		s.mu.Lock()
		if s.durable >= seq {
			s.mu.Unlock()
			return nil
		}
		if s.failed != nil {
			err := s.failed
			s.mu.Unlock()
			return fmt.Errorf("eventlog: session %s: seq %d not persisted: %w", s.id, seq, err)
		}
		if err := ctx.Err(); err != nil {
			s.mu.Unlock()
			return err
		}
		ch := s.persistedChan()
		queued := s.queued
		s.mu.Unlock()
		if err := l.advance(ctx, s, ch, queued); err != nil {
			return err
		}
	}
}

// advance moves s's persistence on, then waits for ch, which the caller
// took from s.persistedChan (queued is s.queued then). When the store
// batches and s is in the persister's next round, it rides that round: the
// round starts as soon as the one in flight has committed (at most
// PersistDelay later, and only when that is at most joinRoundMax), and
// under load a durable append riding it costs a share of one transaction
// instead of a transaction of its own, which is most of what a turn's own
// writes cost. Otherwise, when no append of s is in flight, it makes one
// itself, so that with a store that appends session by session a caller
// waiting for durability waits for one store append, however long the
// persister's backlog of other sessions.
func (l *Log) advance(ctx context.Context, s *session, ch chan struct{}, queued bool) error {
	join := queued && l.batch != nil && l.opt.PersistDelay <= joinRoundMax
	if !join && l.persistOne(s, false) {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// persistedChan returns the channel closed on the next durable move or
// failure. The caller holds s.mu.
func (s *session) persistedChan() chan struct{} {
	if s.persisted == nil {
		s.persisted = make(chan struct{})
	}
	s.durWaited = true
	return s.persisted
}

// wakeDurable wakes durability waiters. The caller holds s.mu.
func (s *session) wakeDurable() {
	if s.durWaited {
		close(s.persisted)
		s.persisted, s.durWaited = nil, false
	}
}

// LastSeq is the session's watermark as this Log knows it, without I/O:
// the highest seq stored through it or learnt from the store (0 when the
// Log holds no state for the session). Readers see events up to it; the
// store may already have more, never less.
func (l *Log) LastSeq(sessionID string) int64 {
	l.mu.RLock()
	s := l.sessions[sessionID]
	l.mu.RUnlock()
	if s == nil {
		return 0
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.durable
}

// Subscribe returns a reader positioned after seq after (0 reads from the
// beginning). It does no I/O: the first Next replays from the store if the
// position is older than the in-memory window. Close the reader when done;
// a reader that is garbage-collected unclosed is released too.
func (l *Log) Subscribe(sessionID string, after int64) *Reader {
	if after < 0 {
		after = 0
	}
	l.maybeSweep()
	l.mu.RLock()
	s := l.sessions[sessionID]
	if s != nil {
		s.readers.Add(1)
	}
	l.mu.RUnlock()
	if s == nil {
		l.mu.Lock()
		s = l.getOrCreateLocked(sessionID)
		s.readers.Add(1)
		l.mu.Unlock()
	}
	s.touched.Store(true)
	return newReader(l, sessionID, s, after)
}

// CloseSession ends the session's current readers (for example because the
// session was deleted): each one drains the events that exist and then gets
// ErrSessionClosed. It first waits for a Publish in flight and for the
// session's events to reach the store (or fail to), so that "what exists"
// is well defined and a store deletion that follows removes everything.
// Later Subscribe and Append calls start afresh.
func (l *Log) CloseSession(sessionID string) {
	for {
		l.mu.RLock()
		s := l.sessions[sessionID]
		l.mu.RUnlock()
		if s == nil {
			// No state means no open readers (Readers keep their session
			// alive) and nothing waiting for the store.
			return
		}
		s.sem <- struct{}{}
		s.mu.RLock()
		last := s.last
		s.mu.RUnlock()
		// Errors were logged by the persister and belong to the session
		// being closed.
		_ = l.waitDurable(context.Background(), s, last)
		l.mu.Lock()
		current := l.sessions[sessionID] == s
		if current {
			delete(l.sessions, sessionID)
		}
		l.mu.Unlock()
		s.mu.Lock()
		if !s.closed {
			s.closed = true
			close(s.notify)
		}
		s.mu.Unlock()
		<-s.sem
		if current {
			return
		}
		// The idle sweep forgot s meanwhile (it had no readers); close
		// whatever state replaced it.
	}
}

// acquire returns the session's state with pending raised.
func (l *Log) acquire(id string) *session {
	l.maybeSweep()
	l.mu.RLock()
	s := l.sessions[id]
	if s != nil {
		s.pending.Add(1)
	}
	l.mu.RUnlock()
	if s != nil {
		return s
	}
	l.mu.Lock()
	s = l.getOrCreateLocked(id)
	s.pending.Add(1)
	l.mu.Unlock()
	return s
}

func (l *Log) getOrCreateLocked(id string) *session {
	s := l.sessions[id]
	if s == nil {
		s = &session{
			id:         id,
			sem:        make(chan struct{}, 1),
			notify:     make(chan struct{}),
			lastActive: l.now(),
		}
		l.sessions[id] = s
	}
	return s
}

// maybeSweep runs the idle sweep at most every IdleEvict/2, piggybacking on
// calls that already happen, so eviction needs no background goroutine.
func (l *Log) maybeSweep() {
	now := l.now()
	last := l.lastSweep.Load()
	if now.UnixNano()-last < int64(l.opt.IdleEvict/2) {
		return
	}
	if !l.lastSweep.CompareAndSwap(last, now.UnixNano()) {
		return // another caller is sweeping
	}
	l.sweep(now)
}

// sweep drops idle state: a session idle for IdleEvict with no open readers
// or Writers is forgotten entirely; one that still has (idle) readers or
// Writers keeps only its small header, since those readers may wait on its
// notify channel and a Writer is bound to it, and loses its ring. Readers fall back to the store either way. Events the
// store does not have yet keep their session in memory, unless its
// persistence failed (they will never be stored).
func (l *Log) sweep(now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for id, s := range l.sessions {
		if s.pending.Load() > 0 {
			continue
		}
		s.mu.Lock()
		if s.touched.Swap(false) {
			s.lastActive = now
		}
		unpersisted := s.durable < s.last && s.failed == nil
		if !unpersisted && now.Sub(s.lastActive) >= l.opt.IdleEvict {
			switch {
			case s.readers.Load() == 0 && s.writers.Load() == 0:
				delete(l.sessions, id)
			case s.failed == nil:
				s.dropRing()
			}
		}
		s.mu.Unlock()
	}
}

// push adds freshly numbered events to the ring. Readers see them once the
// persister has stored them (see settle). Callers hold s.sem and s.mu, so
// pushes are in seq order.
func (s *session) push(evs []store.Event, window int, now time.Time) {
	s.lastActive = now
	for _, e := range evs {
		if s.n == 0 {
			s.first = e.Seq
		}
		if s.n == len(s.ring) {
			if s.n >= window && s.ring[s.start].Seq <= s.durable {
				// Full, and the oldest is in the store: slide.
				s.ring[s.start] = e
				s.start = (s.start + 1) % len(s.ring)
				s.first++
				continue
			}
			s.grow(window)
		}
		s.ring[(s.start+s.n)%len(s.ring)] = e
		s.n++
	}
	s.last = evs[len(evs)-1].Seq
}

// wakeReaders wakes the readers waiting for the watermark to move. The
// caller holds s.mu.
func (s *session) wakeReaders() {
	if s.waited.Load() {
		close(s.notify)
		s.notify = make(chan struct{})
		s.waited.Store(false)
	}
}

// grow doubles the ring's capacity: up to window while it fills, and
// beyond it while the store lags. It starts at 64, about one short turn.
func (s *session) grow(window int) {
	c := max(64, 2*len(s.ring))
	if s.n < window {
		c = min(c, window)
	}
	s.resize(c)
}

// resize moves the ring's events, in order, to a ring of capacity c >= n.
func (s *session) resize(c int) {
	r := make([]store.Event, c)
	for i := range s.n {
		r[i] = s.ring[(s.start+i)%len(s.ring)]
	}
	s.ring, s.start = r, 0
}

// trim drops the oldest events beyond window that the store has, and gives
// back a ring that grew while the store lagged. The caller holds s.mu.
func (s *session) trim(window int) {
	for s.n > window && s.ring[s.start].Seq <= s.durable {
		s.ring[s.start] = store.Event{} // let its payload be collected
		s.start = (s.start + 1) % len(s.ring)
		s.first++
		s.n--
	}
	if len(s.ring) > window && s.n <= window/2 {
		s.resize(window)
	}
}

// dropRing forgets the ring (every event in it is in the store).
func (s *session) dropRing() {
	s.ring, s.start, s.n, s.first = nil, 0, 0, 0
}

// at returns the event with seq q; the caller holds s.mu and has checked
// first <= q < first+n.
func (s *session) at(q int64) store.Event {
	return s.ring[(s.start+int(q-s.first))%len(s.ring)]
}

// has reports whether the ring holds seq q; the caller holds s.mu.
func (s *session) has(q int64) bool {
	return s.n > 0 && q >= s.first && q < s.first+int64(s.n)
}
