package tool

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
)

// TestRegistrySubset: a subset holds the kept tools in the original's
// order, validates their input as the original does (the compiled schema
// is shared, not lost), and is independent of it afterwards.
func TestRegistrySubset(t *testing.T) {
	t.Parallel()
	a, b, c := newTool("A", Meta{}, nil), newTool("B", Meta{}, nil), newTool("C", Meta{}, nil)
	b.spec.InputSchema = json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)
	r := mustRegistry(t, a, b, c)
	sub := r.Subset(func(_ Tool, s Spec) bool { return s.Name != "A" })
	if got := specNames(sub.Specs()); !slices.Equal(got, []string{"B", "C"}) {
		t.Fatalf("subset = %v", got)
	}
	if res := sub.Execute(context.Background(), &Call{Name: "B", Input: json.RawMessage(`{"n":"x"}`)}); !res.IsError {
		t.Fatalf("the subset took input its schema forbids: %+v", res)
	}
	if res := sub.Execute(context.Background(), &Call{Name: "B", Input: json.RawMessage(`{"n":1}`)}); res.IsError {
		t.Fatalf("valid input refused: %+v", res)
	}
	sub.Remove("C")
	if err := sub.Add(newTool("D", Meta{}, nil)); err != nil {
		t.Fatal(err)
	}
	if got := specNames(r.Specs()); !slices.Equal(got, []string{"A", "B", "C"}) {
		t.Fatalf("changing the subset changed the original: %v", got)
	}
}
