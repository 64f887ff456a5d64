package main

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/weft-run/weft/internal/lease"
)

// TestServeNodeFlags: --node-id and --lease-ttl come from the command
// line, WEFT_NODE_ID / WEFT_LEASE_TTL or the config file, and the config
// file compose.yaml mounts (deploy/weft.conf) is one weft serve accepts.
func TestServeNodeFlags(t *testing.T) {
	t.Parallel()
	deployConf, err := filepath.Abs("../../deploy/weft.conf")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		env  map[string]string
		id   string
		ttl  time.Duration
	}{
		{name: "defaults", ttl: lease.DefaultTTL},
		{name: "flags", args: []string{"--node-id", "n1", "--lease-ttl", "5s"}, id: "n1", ttl: 5 * time.Second},
		{name: "env", env: map[string]string{"WEFT_NODE_ID": "n2", "WEFT_LEASE_TTL": "20s"}, id: "n2", ttl: 20 * time.Second},
		{name: "compose's config and env", args: []string{"--config", deployConf}, env: map[string]string{"WEFT_NODE_ID": "weft1"},
			id: "weft1", ttl: 15 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var f serveFlags
			fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
			f.register(fs)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			if err := f.load(fs, func(k string) string { return tc.env[k] }); err != nil {
				t.Fatal(err)
			}
			if f.nodeID != tc.id || f.leaseTTL != tc.ttl {
				t.Errorf("node %q ttl %v, want %q %v", f.nodeID, f.leaseTTL, tc.id, tc.ttl)
			}
		})
	}
}
