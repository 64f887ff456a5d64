package secret

import (
	"encoding/json"
	"reflect"
)

// maxValueDepth bounds how deep Redacted follows nesting, so that a cyclic
// value cannot recurse forever. Weft's own values are a few levels deep.
const maxValueDepth = 64

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// Redacted returns v with every registered value replaced by
// "[SECRET:NAME]" in every string it holds, at any depth: strings (and
// string-based types), json.RawMessage (with [Set.RedactJSON]), other
// byte slices (as text), and the exported fields, elements, keys and
// values of structs, slices, arrays, maps, pointers and interfaces. It is
// what lets one call redact a whole row, message or event payload whatever
// fields it has or gains later.
//
// v itself is never modified: whatever changes is copied, the rest is
// shared with v. Unexported fields are copied as they are (they are not
// written out by encoding/json either). When nothing matches, v is
// returned as is.
func Redacted[T any](s *Set, v T) T {
	m := s.load()
	if len(m.entries) == 0 {
		return v
	}
	return redacted(m, v)
}

// redacted is Redacted's walk, in a function of its own because taking
// v's address for reflect moves v to the heap on entry: in Redacted that
// was an allocation for every event of every run, secrets or none.
func redacted[T any](m *matcher, v T) T {
	out, changed := m.value(reflect.ValueOf(&v).Elem(), 0)
	if !changed {
		return v
	}
	return out.Interface().(T)
}

// value returns v redacted and whether anything changed; an unchanged
// value is returned as it is.
func (m *matcher) value(v reflect.Value, depth int) (reflect.Value, bool) {
	if depth > maxValueDepth {
		return v, false
	}
	switch v.Kind() {
	case reflect.String:
		s := v.String()
		red, _ := m.scan(s, true)
		if red == s {
			return v, false
		}
		out := reflect.New(v.Type()).Elem()
		out.SetString(red)
		return out, true

	case reflect.Slice:
		if v.IsNil() {
			return v, false
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return m.bytes(v)
		}
		var out reflect.Value
		for i := range v.Len() {
			e, changed := m.value(v.Index(i), depth+1)
			if !changed {
				continue
			}
			if !out.IsValid() {
				out = reflect.MakeSlice(v.Type(), v.Len(), v.Len())
				reflect.Copy(out, v)
			}
			out.Index(i).Set(e)
		}
		return orig(v, out)

	case reflect.Array:
		var out reflect.Value
		for i := range v.Len() {
			e, changed := m.value(v.Index(i), depth+1)
			if !changed {
				continue
			}
			if !out.IsValid() {
				out = reflect.New(v.Type()).Elem()
				out.Set(v)
			}
			out.Index(i).Set(e)
		}
		return orig(v, out)

	case reflect.Map:
		if v.IsNil() {
			return v, false
		}
		type kv struct{ k, v reflect.Value }
		var all []kv
		changed := false
		for it := v.MapRange(); it.Next(); {
			k, kc := m.value(it.Key(), depth+1)
			e, ec := m.value(it.Value(), depth+1)
			changed = changed || kc || ec
			all = append(all, kv{k, e})
		}
		if !changed {
			return v, false
		}
		out := reflect.MakeMapWithSize(v.Type(), len(all))
		for _, p := range all {
			out.SetMapIndex(p.k, p.v)
		}
		return out, true

	case reflect.Struct:
		var out reflect.Value
		t := v.Type()
		for i := range v.NumField() {
			if !t.Field(i).IsExported() {
				continue
			}
			f, changed := m.value(v.Field(i), depth+1)
			if !changed {
				continue
			}
			if !out.IsValid() {
				out = reflect.New(t).Elem()
				out.Set(v)
			}
			out.Field(i).Set(f)
		}
		return orig(v, out)

	case reflect.Pointer:
		if v.IsNil() {
			return v, false
		}
		e, changed := m.value(v.Elem(), depth+1)
		if !changed {
			return v, false
		}
		out := reflect.New(v.Type().Elem())
		out.Elem().Set(e)
		return out, true

	case reflect.Interface:
		if v.IsNil() {
			return v, false
		}
		e, changed := m.value(v.Elem(), depth+1)
		if !changed {
			return v, false
		}
		out := reflect.New(v.Type()).Elem()
		out.Set(e)
		return out, true
	}
	return v, false
}

// bytes redacts a byte slice: JSON when it is a json.RawMessage, text
// otherwise.
func (m *matcher) bytes(v reflect.Value) (reflect.Value, bool) {
	b := v.Bytes()
	var red []byte
	if v.Type() == rawMessageType {
		red = m.redactJSON(b)
		if len(red) == len(b) && (len(b) == 0 || &red[0] == &b[0]) {
			return v, false
		}
	} else {
		if !m.containsBytes(b) {
			return v, false
		}
		s, _ := m.scan(string(b), true)
		red = []byte(s)
	}
	out := reflect.New(v.Type()).Elem()
	out.SetBytes(red)
	return out, true
}

func orig(v, out reflect.Value) (reflect.Value, bool) {
	if out.IsValid() {
		return out, true
	}
	return v, false
}
