package task

import (
	"context"
	"encoding/json"
	"testing"
)

// TestTasksNameTheirNode: a registry given a node id stamps it on every
// task, as listed and as got; without one, none.
func TestTasksNameTheirNode(t *testing.T) {
	for _, tc := range []struct{ node string }{{"node-2"}, {""}} {
		r := NewRegistry(nil, Options{Node: tc.node})
		tk, err := r.Submit(context.Background(), "custom", "d", func(context.Context) (json.RawMessage, error) {
			return json.RawMessage(`1`), nil
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.Get(tk.ID)
		if err != nil {
			t.Fatal(err)
		}
		list := r.List()
		if tk.Node != tc.node || got.Node != tc.node || len(list) != 1 || list[0].Node != tc.node {
			t.Errorf("node %q: submitted %q, got %q, listed %+v", tc.node, tk.Node, got.Node, list)
		}
		b, _ := json.Marshal(got)
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		if _, has := m["node"]; has != (tc.node != "") {
			t.Errorf("node %q: JSON %s", tc.node, b)
		}
		_ = r.Close(context.Background())
	}
}
