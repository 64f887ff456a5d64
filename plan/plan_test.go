package plan

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/weft-run/weft/tool"
)

func TestRefJSON(t *testing.T) {
	t.Parallel()
	var s Step
	if err := json.Unmarshal([]byte(`{"id": "x", "tool": "t", "dependsOn": [0, "a", "12", 3.5, -1]}`), &s); err != nil {
		t.Fatal(err)
	}
	want := []Ref{"0", "a", "12", "3.5", "-1"}
	if !reflect.DeepEqual(s.DependsOn, want) {
		t.Fatalf("dependsOn = %q, want %q", s.DependsOn, want)
	}
	out, err := json.Marshal(s.DependsOn)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != `[0,"a",12,"3.5","-1"]` {
		t.Errorf("marshalled %s", out)
	}
	for _, bad := range []string{`[true]`, `[null]`, `[{}]`, `[[1]]`} {
		var r []Ref
		if err := json.Unmarshal([]byte(bad), &r); err == nil {
			t.Errorf("accepted dependsOn %s", bad)
		}
	}
}

func TestPlanIDsAndIndex(t *testing.T) {
	t.Parallel()
	p := steps("a", "", "c")
	if got := []string{p.ID(0), p.ID(1), p.ID(2)}; !reflect.DeepEqual(got, []string{"a", "step-2", "c"}) {
		t.Errorf("ids %v", got)
	}
	n := p.Normalize()
	if n.Steps[1].ID != "step-2" || p.Steps[1].ID != "" {
		t.Errorf("Normalize: %q (original %q)", n.Steps[1].ID, p.Steps[1].ID)
	}
	for ref, want := range map[Ref]int{"0": 0, "2": 2, "c": 2, "step-2": 1} {
		if got, ok := p.Index(ref); !ok || got != want {
			t.Errorf("Index(%q) = %d, %v; want %d", ref, got, ok, want)
		}
	}
	for _, ref := range []Ref{"3", "zz", ""} {
		if _, ok := p.Index(ref); ok {
			t.Errorf("Index(%q) resolved", ref)
		}
	}
}

func TestReadOnly(t *testing.T) {
	t.Parallel()
	tools := testTools()
	lookup := func(n string) (tool.Spec, bool) { s, ok := tools[n]; return s, ok }
	p := Plan{Steps: []Step{{ID: "r", Tool: "Read"}, {ID: "f", Tool: "Fetch"}}}
	if ok, off := p.ReadOnly(lookup); !ok || off != nil {
		t.Errorf("read-only plan refused: %v", off)
	}
	p.Steps = append(p.Steps, Step{ID: "w", Tool: "Write"}, Step{Tool: "Nuke"})
	ok, off := p.ReadOnly(lookup)
	if ok || len(off) != 2 || !strings.Contains(off[0], `step 2 ("w"): tool "Write" is not read-only`) ||
		!strings.Contains(off[1], `step 3 ("step-4"): unknown tool "Nuke"`) {
		t.Errorf("ReadOnly = %v, %q", ok, off)
	}
	if ok, _ := p.ReadOnly(nil); ok {
		t.Error("ReadOnly with no tools accepted the plan")
	}
}
