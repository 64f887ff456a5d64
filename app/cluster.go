package app

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/weft-run/weft/internal/lease"
	"github.com/weft-run/weft/policy/secret"
	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/schedule"
	"github.com/weft-run/weft/server"
	"github.com/weft-run/weft/store"
	"github.com/weft-run/weft/store/memstore"
	"github.com/weft-run/weft/store/sqlite"
)

// cluster is this node among those sharing the store: it heartbeats the
// node registry (store.Nodes, PostgreSQL) every third of the lease TTL,
// answers GET /v1/nodes and the node fields of GET /v1/health
// (server.Cluster), and at shutdown hands back what the node still holds
// and leaves the registry, so other nodes take its work over at once
// rather than after the TTL.
type cluster struct {
	keeper *lease.Keeper
	nodes  store.Nodes // nil: the store is this node's alone
	kind   string
	raw    store.Store // the store as opened, before redaction
	log    *slog.Logger

	mu   sync.Mutex
	self store.Node

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

var _ server.Cluster = (*cluster)(nil)

// storeKind names st's kind for GET /v1/health.
func storeKind(st store.Store) string {
	switch st.(type) {
	case *sqlite.DB:
		return "sqlite"
	case *memstore.Store:
		return "memory"
	}
	if isPostgres(st) {
		return "postgres"
	}
	return "other"
}

// newCluster registers this node (a first heartbeat, so that New fails
// when the registry cannot be written) and starts heartbeating.
func newCluster(ctx context.Context, st store.Store, k *lease.Keeper, addr, version string, log *slog.Logger) (*cluster, error) {
	c := &cluster{keeper: k, kind: storeKind(st), raw: st, log: log, self: store.Node{ID: k.Holder(), Addr: addr, Version: version},
		stop: make(chan struct{}), done: make(chan struct{})}
	if ns, ok := st.(store.Nodes); ok {
		c.nodes = ns
		n, err := ns.Heartbeat(ctx, c.self, true)
		if err != nil {
			return nil, err
		}
		c.self = n
		go c.heartbeat()
	} else {
		c.self.StartedAt = time.Now().UTC()
		close(c.done)
	}
	return c, nil
}

func (c *cluster) heartbeat() {
	defer close(c.done)
	every := c.keeper.TTL() / 3
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		c.mu.Lock()
		self := c.self
		c.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), every)
		n, err := c.nodes.Heartbeat(ctx, self, false)
		cancel()
		if err != nil {
			// The next beat may make it; the node only looks dead to
			// GET /v1/nodes meanwhile (its leases are renewed apart).
			c.log.Warn("node heartbeat failed", "node", self.ID, "error", err)
			continue
		}
		c.mu.Lock()
		c.self = n
		c.mu.Unlock()
	}
}

// setAddr records the address the node serves on (known at Serve).
func (c *cluster) setAddr(addr string) {
	c.mu.Lock()
	c.self.Addr = addr
	c.mu.Unlock()
}

// NodeID implements server.Cluster.
func (c *cluster) NodeID() string { return c.keeper.Holder() }

// StoreKind implements server.Cluster.
func (c *cluster) StoreKind() string { return c.kind }

// Nodes implements server.Cluster: the alive nodes (heartbeat within the
// lease TTL), each with the live leases it holds.
func (c *cluster) Nodes(ctx context.Context) ([]server.NodeInfo, error) {
	leases, err := c.keeper.Leases().ListLeases(ctx)
	if err != nil {
		return nil, err
	}
	byHolder := map[string][]record.Lease{}
	for _, l := range leases {
		byHolder[l.Holder] = append(byHolder[l.Holder], l)
	}
	var nodes []store.Node
	if c.nodes != nil {
		if nodes, err = c.nodes.ListNodes(ctx, c.keeper.TTL()); err != nil {
			return nil, err
		}
	} else {
		c.mu.Lock()
		nodes = []store.Node{c.self}
		c.mu.Unlock()
	}
	out := make([]server.NodeInfo, 0, len(nodes))
	for _, n := range nodes {
		out = append(out, server.NodeInfo{ID: n.ID, Addr: n.Addr, Version: n.Version, Self: n.ID == c.NodeID(),
			StartedAt: n.StartedAt, HeartbeatAt: n.HeartbeatAt, Leases: byHolder[n.ID]})
	}
	return out, nil
}

// leave stops the heartbeat, gives back the leases this node still holds
// (the services released theirs as they stopped; this catches any left)
// and removes the node from the registry. Idempotent.
func (c *cluster) leave(ctx context.Context) error {
	var err error
	c.once.Do(func() {
		select {
		case <-c.done:
		default:
			close(c.stop)
			<-c.done
		}
		leases, lerr := c.keeper.Leases().ListLeases(ctx)
		if lerr != nil {
			err = lerr
			return
		}
		for _, l := range leases {
			if l.Holder != c.NodeID() {
				continue
			}
			if _, rerr := c.keeper.Leases().ReleaseLease(ctx, l); rerr != nil {
				err = errors.Join(err, rerr)
			}
		}
		if c.nodes != nil {
			err = errors.Join(err, c.nodes.LeaveNode(ctx, c.NodeID()))
		}
	})
	return err
}

// swapper is the store's compare and swap of schedules when several
// nodes share it (nil otherwise), redacting secrets as the store every
// service gets does.
func (c *cluster) swapper(secrets *secret.Set) schedule.Swapper {
	sw, ok := c.raw.(schedule.Swapper)
	if !ok || c.nodes == nil {
		return nil
	}
	if secrets == nil {
		return sw
	}
	return redactingSwapper{sw, secrets}
}

type redactingSwapper struct {
	schedule.Swapper
	set *secret.Set
}

func (r redactingSwapper) SwapSchedule(ctx context.Context, s record.Schedule, prevNextRunAt time.Time, prevActive bool) (bool, error) {
	return r.Swapper.SwapSchedule(ctx, secret.Redacted(r.set, s), prevNextRunAt, prevActive)
}

// poll bounds the scheduler's sleep when other nodes share the store:
// schedules they create are seen within it.
func (c *cluster) poll() time.Duration {
	if c.nodes == nil {
		return 0
	}
	return c.keeper.TTL() / 3
}
