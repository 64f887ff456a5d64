package secret

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

type innerRow struct {
	Text string
	Tags []string
}

type row struct {
	ID       string
	Note     string
	Raw      json.RawMessage
	Bytes    []byte
	Map      map[string]string
	Any      any
	Ptr      *innerRow
	Rows     []innerRow
	Arr      [2]string
	When     time.Time
	Count    int
	hidden   string
	Embedded innerRow
}

func TestRedacted(t *testing.T) {
	t.Parallel()
	const v = "zqKp2WmXv4Rt8LnB"
	s := mustSet(t, "TOKEN", v)
	when := time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)
	in := row{
		ID: "r1", Note: "note " + v, Raw: json.RawMessage(`{"a":"` + v + `","b":[1,"x\u0041` + v + `"]}`),
		Bytes: []byte("bytes " + v), Map: map[string]string{v: "key", "k": "val " + v, "plain": "p"},
		Any: map[string]any{"list": []any{v, 3, map[string]any{"deep": v}}}, Ptr: &innerRow{Text: v},
		Rows: []innerRow{{Text: "ok"}, {Tags: []string{"t", v}}}, Arr: [2]string{"a", v}, When: when, Count: 7,
		hidden: v, Embedded: innerRow{Text: v},
	}
	before, _ := json.Marshal(in)
	out := Redacted(s, in)
	got, _ := json.Marshal(out)
	if strings.Contains(string(got), v) {
		t.Fatalf("a value survived: %s", got)
	}
	want := `{"ID":"r1","Note":"note [SECRET:TOKEN]","Raw":{"a":"[SECRET:TOKEN]","b":[1,"xA[SECRET:TOKEN]"]},` +
		`"Bytes":"Ynl0ZXMgW1NFQ1JFVDpUT0tFTl0=","Map":{"[SECRET:TOKEN]":"key","k":"val [SECRET:TOKEN]","plain":"p"},` +
		`"Any":{"list":["[SECRET:TOKEN]",3,{"deep":"[SECRET:TOKEN]"}]},"Ptr":{"Text":"[SECRET:TOKEN]","Tags":null},` +
		`"Rows":[{"Text":"ok","Tags":null},{"Text":"","Tags":["t","[SECRET:TOKEN]"]}],"Arr":["a","[SECRET:TOKEN]"],` +
		`"When":"2025-01-02T03:04:05.000000006Z","Count":7,"Embedded":{"Text":"[SECRET:TOKEN]","Tags":null}}`
	if string(got) != want {
		t.Fatalf("Redacted =\n%s\nwant\n%s", got, want)
	}
	// The input is untouched, shared parts are shared, unexported fields
	// are copied as they were.
	if after, _ := json.Marshal(in); string(after) != string(before) || in.Ptr.Text != v || in.Rows[1].Tags[1] != v {
		t.Fatalf("the input changed: %s", after)
	}
	if out.hidden != v || !out.When.Equal(when) {
		t.Fatalf("unexported or opaque fields changed: %+v", out)
	}
	if &out.Rows[0] == &in.Rows[0] {
		t.Fatal("a changed slice was not copied")
	}

	// Nothing to redact: the very same value comes back.
	plain := row{Note: "nothing", Raw: json.RawMessage(`{"a":1}`), Rows: []innerRow{{Text: "x"}}, Map: map[string]string{"a": "b"}}
	same := Redacted(s, plain)
	if &same.Rows[0] != &plain.Rows[0] || &same.Raw[0] != &plain.Raw[0] || reflect.ValueOf(same.Map).Pointer() != reflect.ValueOf(plain.Map).Pointer() {
		t.Fatal("an unchanged value was copied")
	}
	// Any type, any shape, and no set at all.
	if got := Redacted(s, []any{v, nil, (*innerRow)(nil)}); got[0] != "[SECRET:TOKEN]" || got[1] != nil {
		t.Fatalf("slice of any: %#v", got)
	}
	if got := Redacted(s, v); got != "[SECRET:TOKEN]" {
		t.Fatalf("string: %q", got)
	}
	if got := Redacted[string](nil, v); got != v {
		t.Fatalf("nil set: %q", got)
	}
}

func TestRedactedCycle(t *testing.T) {
	t.Parallel()
	type node struct {
		Text string
		Next *node
	}
	s := mustSet(t, "TOKEN", "zqKp2WmXv4Rt8LnB")
	n := &node{Text: "zqKp2WmXv4Rt8LnB"}
	n.Next = n
	out := Redacted(s, n) // must return: the depth bound stops the walk
	if out.Text != "[SECRET:TOKEN]" {
		t.Fatalf("%q", out.Text)
	}
}

// TestRedactedNoSecretsAllocs: with no secret registered, Redacted hands
// the value back without allocating. The engine calls it on every event it
// emits (a text delta's among them), and it used to move the value to the
// heap on entry whatever the set held.
func TestRedactedNoSecretsAllocs(t *testing.T) {
	empty := mustSet(t)
	type delta struct{ Text string }
	var ev any = delta{Text: "a delta"}
	for _, s := range []*Set{nil, empty} {
		if n := testing.AllocsPerRun(100, func() { ev = Redacted(s, ev) }); n != 0 {
			t.Fatalf("set %v: %.0f allocations per call, want 0", s, n)
		}
	}
}
