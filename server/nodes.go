package server

import (
	"context"
	"net/http"
	"time"

	"github.com/weft-run/weft/record"
)

// The nodes over HTTP (issue 20, item 4): several `weft serve` nodes may
// share one PostgreSQL store behind a load balancer; GET /v1/nodes shows
// the ones alive and the leases (claimed work) each holds, and
// GET /v1/health names the node that answered and its store.
//
//	GET /v1/nodes
//	{"self": "node-1", "store": "postgres", "nodes": [
//	   {"id": "node-1", "addr": "10.0.0.1:8080", "version": "v0.9.0", "self": true,
//	    "started_at": "...", "heartbeat_at": "...",
//	    "leases": [{"name": "scheduler", "holder": "node-1", "epoch": 3, "acquired_at": "...", "expires_at": "..."}]}]}

// Cluster is what GET /v1/nodes and the node fields of GET /v1/health
// read; the app supplies it (server never reads the store for it).
type Cluster interface {
	// NodeID is this node's id.
	NodeID() string
	// StoreKind is the store's kind: sqlite, postgres or memory.
	StoreKind() string
	// Nodes returns the nodes alive, by id, each with the leases it holds.
	// With a store of one node it is this node alone.
	Nodes(ctx context.Context) ([]NodeInfo, error)
}

// NodeInfo is one node of GET /v1/nodes.
type NodeInfo struct {
	ID          string         `json:"id"`
	Addr        string         `json:"addr,omitempty"`
	Version     string         `json:"version,omitempty"`
	Self        bool           `json:"self,omitempty"`
	StartedAt   time.Time      `json:"started_at,omitzero"`
	HeartbeatAt time.Time      `json:"heartbeat_at,omitzero"`
	Leases      []record.Lease `json:"leases"`
}

// NodesResponse is the body of GET /v1/nodes.
type NodesResponse struct {
	Self  string     `json:"self"`
	Store string     `json:"store"`
	Nodes []NodeInfo `json:"nodes"`
}

// NodesHandler serves GET /v1/nodes from c; nil answers 503. The Server
// mounts it behind its authentication (Config.Cluster): lease names carry
// session and run ids.
func NodesHandler(c Cluster) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c == nil {
			writeError(w, http.StatusServiceUnavailable, errInternal, "this server does not report its nodes")
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), healthTimeout)
		defer cancel()
		nodes, err := c.Nodes(ctx)
		if err != nil {
			writeError(w, http.StatusServiceUnavailable, errInternal, "the store is unavailable")
			return
		}
		if nodes == nil {
			nodes = []NodeInfo{}
		}
		for i := range nodes {
			if nodes[i].Leases == nil {
				nodes[i].Leases = []record.Lease{}
			}
		}
		writeJSON(w, http.StatusOK, NodesResponse{Self: c.NodeID(), Store: c.StoreKind(), Nodes: nodes})
	})
}

// healthStore is the "store" object of GET /v1/health.
type healthStore struct {
	Kind string `json:"kind"`
	OK   bool   `json:"ok"`
}

// addNodeFields adds the node and store fields to a health body when the
// server knows its cluster.
func (s *Server) addNodeFields(body map[string]any, ok bool) {
	if s.cfg.Cluster == nil {
		return
	}
	body["node"] = s.cfg.Cluster.NodeID()
	body["store"] = healthStore{Kind: s.cfg.Cluster.StoreKind(), OK: ok}
}
