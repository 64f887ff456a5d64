package policy

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzCanonicalJSON: for valid JSON, the canonical form is valid JSON
// with the same meaning, and the same whatever the spacing; for anything
// else the input itself is used.
func FuzzCanonicalJSON(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[true,null,{"d":"x","c":-1.5e3}]}`, `{}`, `[]`, `"s"`, `0`, `{"a":{"a":{"a":{}}}}`,
		`{"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k17":17}`,
		`{"a":"\u00e9\"\\"}`, `{"a" 1}`, `{"a":01}`, `[1,]`, `{"a":1}x`, `nul`} {
		f.Add([]byte(s))
	}
	decode := func(b []byte) (any, bool) {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) != nil || len(trimSpace(b[dec.InputOffset():])) > 0 {
			return nil, false
		}
		return v, true
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out := appendCanonicalJSON(nil, in)
		want, valid := decode(in)
		if !valid {
			if len(trimSpace(in)) > 0 && !bytes.Equal(out, trimSpace(in)) {
				t.Fatalf("invalid input %q became %q", in, out)
			}
			return
		}
		got, ok := decode(out)
		if !ok || !reflect.DeepEqual(got, want) {
			t.Fatalf("%q -> %q changes its meaning", in, out)
		}
		var ind bytes.Buffer
		if json.Indent(&ind, in, "", "  ") == nil {
			if spaced := appendCanonicalJSON(nil, ind.Bytes()); !bytes.Equal(spaced, out) {
				t.Fatalf("spacing changed the form: %q vs %q", spaced, out)
			}
		}
	})
}
