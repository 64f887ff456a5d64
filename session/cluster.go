package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/event"
	"github.com/weft-run/weft/eventlog"
	"github.com/weft-run/weft/internal/lease"
	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/tool/mcp"
)

// Several nodes (issue 20). When the store is shared by several `weft
// serve` nodes (store/postgres: Config.Commands and Config.Notifier are
// set), any node serves any session, and one node at a time runs a
// session's turns: the one holding the lease "session:<id>"
// (Config.Leases).
//
//   - A message, permission answer, cancel, budget or elicitation answer
//     reaching a node that holds the session's lease is handled there as
//     on one node. Elsewhere the node first tries to take the lease (no
//     node holds it when the session is idle: the owner hands it back once
//     nothing runs or waits); failing that, it stores a command
//     (store.Commands: durable before the client is answered, announced
//     to every node) and waits for its result, which the owner writes
//     when it consumes the command, in id order, exactly once.
//   - A node taking the lease first makes its event log number after the
//     store's last seq (eventlog.Reseed), reloads what another node may
//     have changed (the conversation, the session's permissions, the tool
//     state), ends a turn a dead owner left open (error and done,
//     stop_reason "interrupted", the message kept, as a restart does) and
//     queues the messages that owner accepted and never ran: on a
//     cluster, another node is alive to run them.
//   - A node whose lease is lost (it could not renew it in time) stops
//     the turn and writes nothing more; the next holder ends it.
//   - Every node sweeps, every TTL/2 jittered, for sessions with work (an
//     open turn, a message not answered, a command not done) and no live
//     lease, and takes them over: that is how a dead node's sessions go
//     on, and how start-up recovery avoids touching a session another
//     node is running.
//   - Every node's readers follow the store: each commit is announced
//     (store.Notifier), and the event log of a session written elsewhere
//     wakes its readers, who read the new events from the store
//     (eventlog.Observe).

// Command kinds (store.Command.Kind).
const (
	cmdMessage     = "message"
	cmdAnswer      = "answer"
	cmdBudget      = "budget"
	cmdElicitation = "elicitation"
	cmdCancel      = "cancel"
)

// LeasePrefix names a session's lease: LeasePrefix + the session's id.
const LeasePrefix = "session:"

const leasePrefix = LeasePrefix

// commandWait bounds how long a node waits for another node to consume a
// command it stored (a message, an answer): long enough for a takeover
// after the owner's death (the lease's TTL and a sweep).
const commandWait = 2 * time.Minute

// commandKeep is how long a done command stays in the store: well past
// commandWait, so that its sender has read its result.
const commandKeep = 10 * commandWait

// ownerPoll is how often an owner looks for commands without being told.
const ownerPoll = time.Second

// errFenced: the session's lease was lost; this node writes nothing more
// of it.
var errFenced = errors.New("session: the session's lease was lost; another node runs it now")

// cluster is the session service's state for several nodes.
type cluster struct {
	keeper   *lease.Keeper
	cmds     store.Commands
	notifier store.Notifier

	mu      sync.Mutex
	waiters map[int64]chan struct{} // commands this node waits for, woken by their results
}

// messageData is a user_message event's payload in cluster mode: the
// command it came from (so that a takeover never runs a command twice)
// and the turn's options (so that the node taking over runs it as asked).
type messageData struct {
	Text    string       `json:"text"`
	Command int64        `json:"command,omitempty"`
	Options *TurnOptions `json:"options,omitempty"`
}

// commandResult is a command's result: its error as a code (see
// resultErr), a message's seq, a cancel's "was running".
type commandResult struct {
	Error   string `json:"error,omitempty"`
	Seq     int64  `json:"seq,omitempty"`
	Running bool   `json:"running,omitempty"`
}

func resultOf(err error) commandResult {
	var inv *record.InvalidError
	switch {
	case err == nil:
		return commandResult{}
	case errors.Is(err, ErrNotFound):
		return commandResult{Error: "not_found"}
	case errors.Is(err, ErrAnswered):
		return commandResult{Error: "answered"}
	case errors.Is(err, ErrNotBudget):
		return commandResult{Error: "not_budget"}
	case errors.As(err, &inv):
		return commandResult{Error: "invalid:" + inv.Err.Error()}
	default:
		return commandResult{Error: "error:" + err.Error()}
	}
}

func (r commandResult) err() error {
	switch {
	case r.Error == "":
		return nil
	case r.Error == "not_found":
		return ErrNotFound
	case r.Error == "answered":
		return ErrAnswered
	case r.Error == "not_budget":
		return ErrNotBudget
	case strings.HasPrefix(r.Error, "invalid:"):
		return &record.InvalidError{Err: errors.New(strings.TrimPrefix(r.Error, "invalid:"))}
	default:
		return errors.New(strings.TrimPrefix(r.Error, "error:"))
	}
}

// startCluster starts following the store's announcements and sweeping
// for sessions to take over. The first sweep runs at once: it is this
// node's start-up recovery, which leaves alone every session another node
// holds.
func (rt *Service) startCluster() error {
	ch, err := rt.cl.notifier.Notifications(rt.shutdown)
	if err != nil {
		return fmt.Errorf("session: following the store's announcements: %w", err)
	}
	rt.background.Add(2)
	go func() {
		defer rt.background.Done()
		rt.listen(ch)
	}()
	go func() {
		defer rt.background.Done()
		rt.sweepLoop()
	}()
	return nil
}

// listen dispatches the store's announcements.
func (rt *Service) listen(ch <-chan store.Notification) {
	for n := range ch {
		switch {
		case n.Resync:
			if err := rt.elog.Resync(rt.shutdown); err != nil && rt.shutdown.Err() == nil {
				rt.log.Warn("re-reading followed sessions after missed announcements failed", "error", err)
			}
			rt.mu.Lock()
			for _, l := range rt.live {
				l.wakeOwner()
			}
			rt.mu.Unlock()
			rt.wakeWaiters("", 1<<62)
		case n.Kind == "session":
			rt.elog.Observe(n.ID, n.Seq)
		case n.Kind == "command":
			rt.mu.Lock()
			l := rt.live[n.ID]
			rt.mu.Unlock()
			if l != nil {
				l.wakeOwner()
			}
		case n.Kind == "result":
			rt.wakeWaiters(n.ID, n.Seq)
		}
	}
}

func (l *live) wakeOwner() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// wakeWaiters wakes the waiters of commands up to id (announcements of
// one session's results are merged into the latest); they check the
// store.
func (rt *Service) wakeWaiters(_ string, upTo int64) {
	rt.cl.mu.Lock()
	defer rt.cl.mu.Unlock()
	for id, ch := range rt.cl.waiters {
		if id <= upTo {
			close(ch)
			delete(rt.cl.waiters, id)
		}
	}
}

// sweepLoop takes over orphaned sessions every TTL/2, jittered so that
// nodes started together do not sweep together.
func (rt *Service) sweepLoop() {
	every := rt.cl.keeper.TTL() / 2
	wait := time.Duration(0)
	for {
		select {
		case <-rt.shutdown.Done():
			return
		case <-time.After(wait):
		}
		rt.sweep(rt.shutdown)
		if _, err := rt.cl.cmds.PruneCommands(rt.shutdown, time.Now().Add(-commandKeep)); err != nil && rt.shutdown.Err() == nil {
			rt.log.Warn("deleting old session commands failed", "error", err)
		}
		wait = every/2 + rand.N(every)
	}
}

// sweep takes over the sessions with work and no live lease.
func (rt *Service) sweep(ctx context.Context) {
	ids, err := rt.cl.cmds.OrphanSessions(ctx, leasePrefix, 100)
	if err != nil {
		if ctx.Err() == nil {
			rt.log.Warn("looking for sessions to take over failed", "error", err)
		}
		return
	}
	for _, id := range ids {
		if l, owned, err := rt.own(ctx, id); err != nil {
			if ctx.Err() == nil && !errors.Is(err, ErrNotFound) {
				rt.log.Warn("taking over a session failed", "session", id, "error", err)
			}
		} else {
			if owned {
				rt.log.Info("took over a session", "session", id, "node", rt.cl.keeper.Holder())
			}
			rt.release(l)
		}
	}
}

// holds says whether this node holds l's lease (and has not lost it).
// The caller holds l.mu.
func (l *live) holdsLocked() bool {
	if l.held == nil || l.fenced.Load() {
		return false
	}
	select {
	case <-l.held.Lost():
		return false
	default:
		return true
	}
}

func (l *live) holds() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.holdsLocked()
}

// own returns the session's state, pinned, and whether this node holds
// its lease, taking it when it is free: then the takeover is done (the
// event log reseeded, an interrupted turn ended, accepted messages
// queued) before own returns, and the owner loop runs.
func (rt *Service) own(ctx context.Context, id string) (*live, bool, error) {
	for {
		l := rt.known(id)
		if l == nil {
			if _, err := rt.cfg.Store.GetSession(ctx, id); err != nil {
				return nil, false, err
			}
			var err error
			if l, err = rt.session(id); err != nil {
				return nil, false, err
			}
		}
		owned, stale, err := rt.ownLive(ctx, l)
		if stale {
			rt.release(l)
			continue // the state was dropped (its lease lost): a fresh one
		}
		if err != nil {
			rt.release(l)
			return nil, false, err
		}
		return l, owned, nil
	}
}

func (rt *Service) ownLive(ctx context.Context, l *live) (owned, stale bool, err error) {
	l.ownMu.Lock()
	defer l.ownMu.Unlock()
	if l.fenced.Load() {
		return false, true, nil
	}
	if l.holds() {
		return true, false, nil
	}
	held, err := rt.cl.keeper.Hold(ctx, leasePrefix+l.id)
	var he *lease.HeldError
	if errors.As(err, &he) {
		return false, false, nil
	}
	if err != nil {
		return false, false, err
	}
	if err := rt.takeOver(ctx, l); err != nil {
		_ = held.Release(context.WithoutCancel(ctx))
		return false, false, err
	}
	l.mu.Lock()
	l.held = held
	l.mu.Unlock()
	rt.mu.Lock()
	l.pins++ // the owner loop's
	rt.mu.Unlock()
	rt.background.Add(1)
	go rt.ownerLoop(l, held)
	return true, false, nil
}

// takeOver prepares a state whose lease this node has just taken. If the
// store has events this node did not write, another node ran the session
// meanwhile: what this node kept in memory is stale, and that node may
// have died with a turn open and messages accepted.
func (rt *Service) takeOver(ctx context.Context, l *live) error {
	l.sendMu.Lock()
	defer l.sendMu.Unlock()
	if _, err := rt.elog.Reseed(ctx, l.id); err != nil {
		return err
	}
	if l.consumed != nil && rt.elog.LastSeq(l.id) == l.ownedTo {
		// This node was the last to write the session, and handed it
		// back idle: what it keeps in memory is current, but for the
		// session's permissions, which any node may have set meanwhile.
		l.mu.Lock()
		l.override = nil
		l.mu.Unlock()
		return nil
	}
	l.mu.Lock()
	l.loaded, l.history, l.tools, l.override = false, nil, nil, nil
	l.consumed = map[int64]int64{}
	l.mu.Unlock()
	open, err := rt.cfg.Store.ListOpenTurns(ctx)
	if err != nil {
		return err
	}
	for _, ot := range open {
		if ot.SessionID != l.id {
			continue
		}
		queued, consumed, err := rt.endInterrupted(ctx, l, ot, false)
		if err != nil {
			return err
		}
		l.mu.Lock()
		for cmd, seq := range consumed {
			l.consumed[cmd] = seq
		}
		l.mu.Unlock()
		for _, q := range queued {
			rt.queueTurn(l, q)
		}
	}
	return nil
}

// queueTurn queues a message whose user_message is stored and starts the
// session's turns if none runs. The caller holds l.sendMu.
func (rt *Service) queueTurn(l *live, q queued) {
	l.mu.Lock()
	l.queue = append(l.queue, q)
	start := !l.running
	if start {
		l.running = true
		l.idle = make(chan struct{})
	}
	l.mu.Unlock()
	if start {
		rt.turns.Add(1)
		go rt.drain(l)
	}
}

// accept is Send on a session this node owns: the message's user_message
// is stored (with its command, if it came as one, and its options, for a
// node that takes over) and the message queued. The caller holds
// l.sendMu and has checked that this node holds the lease.
func (rt *Service) accept(ctx context.Context, l *live, text string, opt TurnOptions, cmd int64) (int64, error) {
	d := messageData{Text: rt.redact(text), Command: cmd}
	if opt.Model != "" || opt.SystemPrompt != "" || opt.MaxTurns != 0 || len(opt.StopSequences) > 0 || opt.Thinking != "" ||
		opt.Bundle != "" || opt.MaxBudgetUSD != nil || opt.MaxTokensTotal != nil {
		d.Options = &opt
	}
	evs, err := rt.appendTo(ctx, l, event.UserMessage, d)
	if err != nil {
		if errors.Is(err, eventlog.ErrSessionClosed) {
			return 0, ErrNotFound
		}
		return 0, err
	}
	if l.gone.Load() {
		return 0, ErrNotFound
	}
	rt.queueTurn(l, queued{seq: evs[0].Seq, text: text, opt: opt})
	return evs[0].Seq, nil
}

// clusterSend is Send on several nodes.
func (rt *Service) clusterSend(ctx context.Context, id, text string, opt TurnOptions) (int64, error) {
	l, owned, err := rt.own(ctx, id)
	if err != nil {
		return 0, err
	}
	if owned {
		l.sendMu.Lock()
		if l.holds() {
			seq, err := rt.accept(ctx, l, text, opt, 0)
			l.sendMu.Unlock()
			rt.release(l)
			return seq, err
		}
		l.sendMu.Unlock()
	}
	rt.release(l)
	data, err := json.Marshal(struct {
		Text    string      `json:"text"`
		Options TurnOptions `json:"options"`
	}{rt.redact(text), opt}) // the store holds no secret (the event log's rule)
	if err != nil {
		return 0, err
	}
	res, err := rt.command(ctx, id, cmdMessage, data)
	if err != nil {
		return 0, err
	}
	return res.Seq, res.err()
}

// command stores a command for the session's owner, makes sure some node
// owns the session (this one, if the lease is free), and waits for the
// command's result.
func (rt *Service) command(ctx context.Context, id, kind string, data json.RawMessage) (commandResult, error) {
	cid, err := rt.cl.cmds.AddCommand(ctx, id, kind, data)
	if err != nil {
		return commandResult{}, err
	}
	// The owner may have handed the lease back since: take it then.
	if l, _, err := rt.own(ctx, id); err == nil {
		rt.release(l)
	}
	ctx, cancel := context.WithTimeout(ctx, commandWait)
	defer cancel()
	for {
		ch := make(chan struct{})
		rt.cl.mu.Lock()
		rt.cl.waiters[cid] = ch
		rt.cl.mu.Unlock()
		c, err := rt.cl.cmds.GetCommand(ctx, cid)
		if err == nil && c.Done {
			rt.cl.mu.Lock()
			if rt.cl.waiters[cid] == ch {
				delete(rt.cl.waiters, cid)
			}
			rt.cl.mu.Unlock()
			var res commandResult
			if err := json.Unmarshal(c.Result, &res); err != nil {
				return commandResult{}, fmt.Errorf("session: command %d: result %q: %w", cid, c.Result, err)
			}
			return res, nil
		}
		if errors.Is(err, record.ErrNotFound) {
			return commandResult{}, ErrNotFound // the session was deleted
		}
		select {
		case <-ch:
		case <-time.After(250 * time.Millisecond):
			// An announcement may be lost; the owner may be gone: try to
			// take over (the sweep would, later).
			if l, _, err := rt.own(ctx, id); err == nil {
				rt.release(l)
			}
		case <-ctx.Done():
			rt.cl.mu.Lock()
			if rt.cl.waiters[cid] == ch {
				delete(rt.cl.waiters, cid)
			}
			rt.cl.mu.Unlock()
			return commandResult{}, fmt.Errorf("session %s: waiting for the node running it: %w", id, ctx.Err())
		}
	}
}

// remote runs a command on the session's owner, for the answers and
// cancel (which have no context of their own).
func (rt *Service) remote(id, kind string, v any) (commandResult, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return commandResult{}, err
	}
	return rt.command(rt.shutdown, id, kind, data)
}

// answerAt delivers an answer to the session's open question where its
// turn runs: as a command to the owner on another node, or to the state
// here (answer); ErrNotFound when the session has no state here.
func (rt *Service) answerAt(sessionID, kind string, cmd answerCmd, answer func(*live) error) error {
	if rt.cl != nil && rt.ownedLocally(sessionID) == nil {
		res, err := rt.remote(sessionID, kind, cmd)
		if err != nil {
			return err
		}
		return res.err()
	}
	rt.mu.Lock()
	l := rt.live[sessionID]
	rt.mu.Unlock()
	if l == nil {
		return ErrNotFound
	}
	return answer(l)
}

// ownedLocally returns the session's state when this node holds its
// lease, nil otherwise.
func (rt *Service) ownedLocally(id string) *live {
	rt.mu.Lock()
	l := rt.live[id]
	rt.mu.Unlock()
	if l == nil || !l.holds() {
		return nil
	}
	return l
}

type answerCmd struct {
	RequestID string                `json:"request_id"`
	Allow     bool                  `json:"allow,omitempty"`
	Reason    string                `json:"reason,omitempty"`
	Budget    *agent.BudgetDecision `json:"budget,omitempty"`
	Elicit    *mcp.ElicitResponse   `json:"elicit,omitempty"`
}

// ownerLoop runs while this node holds l's lease: it consumes the
// session's commands, and hands the lease back once nothing runs, waits
// or is pending, or stops everything when the lease is lost.
func (rt *Service) ownerLoop(l *live, held *lease.Held) {
	defer rt.background.Done()
	defer rt.release(l)
	for {
		rt.consume(l)
		l.mu.Lock()
		running, idle := l.running, l.idle
		l.mu.Unlock()
		if !running && rt.handBack(l, held) {
			return
		}
		var idleCh <-chan struct{}
		if running {
			idleCh = idle
		}
		select {
		case <-l.wake:
		case <-time.After(ownerPoll):
			// An announcement may have been lost on a connection that
			// did not drop (no Resync): look for commands anyway.
		case <-idleCh:
		case <-held.Lost():
			rt.lost(l)
			return
		case <-rt.shutdown.Done():
			// Shutdown cancels the turns; their end is this loop's too.
			if idleCh != nil {
				select {
				case <-idleCh:
				case <-held.Lost():
				}
			}
			l.mu.Lock()
			l.held = nil
			l.mu.Unlock()
			_ = l.w.Flush(context.Background())
			_ = held.Release(context.Background())
			return
		}
	}
}

// handBack gives the lease back when the session is idle (no turn, no
// queued message, no pending command), so that whichever node the next
// message reaches runs it. A command stored after the last check is
// either seen by the check after the release or by the next holder.
func (rt *Service) handBack(l *live, held *lease.Held) bool {
	l.sendMu.Lock()
	defer l.sendMu.Unlock()
	l.mu.Lock()
	busy := l.running || len(l.queue) > 0
	l.mu.Unlock()
	if busy {
		return false
	}
	ctx := rt.shutdown
	if pending, err := rt.cl.cmds.PendingCommands(ctx, l.id); err != nil || len(pending) > 0 {
		if err != nil {
			rt.log.Warn("reading a session's commands failed", "session", l.id, "error", err)
		}
		return false
	}
	// Everything written is stored before another node may write.
	if err := l.w.Flush(ctx); err != nil {
		rt.log.Warn("flushing a session's events before handing its lease back failed", "session", l.id, "error", err)
	}
	l.mu.Lock()
	l.held = nil
	l.ownedTo = rt.elog.LastSeq(l.id)
	l.mu.Unlock()
	if err := held.Release(context.WithoutCancel(ctx)); err != nil {
		rt.log.Warn("handing a session's lease back failed; it expires", "session", l.id, "error", err)
	}
	if pending, err := rt.cl.cmds.PendingCommands(ctx, l.id); err == nil && len(pending) > 0 {
		go func() {
			if l2, _, err := rt.own(ctx, l.id); err == nil {
				rt.release(l2)
			}
		}()
	}
	return true
}

// lost stops a session whose lease this node lost: the running turn is
// cancelled and writes nothing more (fenced), queued messages are left to
// the next holder (they are stored), and the state is dropped, so that
// the next use starts from the store.
func (rt *Service) lost(l *live) {
	rt.log.Warn("a session's lease was lost; its turn stops here and another node ends it", "session", l.id)
	l.fenced.Store(true)
	l.mu.Lock()
	l.queue = nil
	if l.cancel != nil {
		l.cancel()
	}
	running, idle := l.running, l.idle
	l.held = nil
	l.mu.Unlock()
	if running {
		<-idle
	}
	rt.mu.Lock()
	if rt.live[l.id] == l {
		delete(rt.live, l.id)
		l.w.Close()
		rt.approvals.Forget(l.scope)
	}
	rt.mu.Unlock()
}

// consume applies the session's pending commands in id order, each once.
func (rt *Service) consume(l *live) {
	ctx := rt.shutdown
	cmds, err := rt.cl.cmds.PendingCommands(ctx, l.id)
	if err != nil {
		if ctx.Err() == nil {
			rt.log.Warn("reading a session's commands failed", "session", l.id, "error", err)
		}
		return
	}
	for _, c := range cmds {
		if !l.holds() {
			return // the next holder consumes the rest
		}
		res := rt.apply(ctx, l, c)
		b, _ := json.Marshal(res)
		if _, err := rt.cl.cmds.FinishCommand(ctx, c.ID, b); err != nil {
			// A message stays recorded in l.consumed: it is not appended
			// twice, and the finish is tried again at the next pass.
			rt.log.Warn("recording a command's result failed", "session", l.id, "command", c.ID, "error", err)
			return
		}
		rt.wakeWaiters(l.id, c.ID) // this node's own, without waiting for the announcement
	}
}

// apply runs one command on the session this node owns.
func (rt *Service) apply(ctx context.Context, l *live, c store.Command) commandResult {
	switch c.Kind {
	case cmdMessage:
		var m struct {
			Text    string      `json:"text"`
			Options TurnOptions `json:"options"`
		}
		if err := json.Unmarshal(c.Data, &m); err != nil {
			return resultOf(&record.InvalidError{Err: err})
		}
		l.sendMu.Lock()
		defer l.sendMu.Unlock()
		l.mu.Lock()
		seq, done := l.consumed[c.ID]
		l.mu.Unlock()
		if done {
			return commandResult{Seq: seq}
		}
		if !l.holds() {
			return resultOf(errFenced)
		}
		seq, err := rt.accept(ctx, l, m.Text, m.Options, c.ID)
		if err != nil {
			return resultOf(err)
		}
		l.mu.Lock()
		l.consumed[c.ID] = seq
		l.mu.Unlock()
		return commandResult{Seq: seq}
	case cmdAnswer, cmdBudget, cmdElicitation:
		var a answerCmd
		if err := json.Unmarshal(c.Data, &a); err != nil {
			return resultOf(&record.InvalidError{Err: err})
		}
		switch {
		case c.Kind == cmdAnswer:
			return resultOf(rt.answerLive(l, a.RequestID, a.Allow, a.Reason))
		case c.Kind == cmdBudget && a.Budget != nil:
			return resultOf(rt.answerBudgetLive(l, a.RequestID, *a.Budget))
		case c.Kind == cmdElicitation && a.Elicit != nil:
			return resultOf(rt.answerElicitationLive(l, a.RequestID, *a.Elicit))
		}
		return resultOf(ErrNotFound)
	case cmdCancel:
		return commandResult{Running: rt.cancelLive(l)}
	}
	return resultOf(fmt.Errorf("unknown command %q", c.Kind))
}

// exclusive returns the session's state, pinned, with l.sendMu held, for
// what rewrites the conversation (Rewind, Compact): on several nodes,
// only while this node holds the session's lease, taken if it is free
// (ErrBusy when another node runs the session). done undoes it all.
func (rt *Service) exclusive(ctx context.Context, id string) (*live, func(), error) {
	if rt.cl == nil {
		l, err := rt.session(id)
		if err != nil {
			return nil, nil, err
		}
		l.sendMu.Lock()
		return l, func() { l.sendMu.Unlock(); rt.release(l) }, nil
	}
	for range 5 {
		l, owned, err := rt.own(ctx, id)
		if err != nil {
			return nil, nil, err
		}
		if !owned {
			rt.release(l)
			return nil, nil, ErrBusy
		}
		l.sendMu.Lock()
		if l.holds() {
			return l, func() {
				l.sendMu.Unlock()
				l.wakeOwner() // to hand the lease back once idle
				rt.release(l)
			}, nil
		}
		// Handed back between own and the lock: again.
		l.sendMu.Unlock()
		rt.release(l)
	}
	return nil, nil, ErrBusy
}
