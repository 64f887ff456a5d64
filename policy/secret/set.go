package secret

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// MinValueLen is the shortest secret value a [Set] accepts: shorter values
// would redact ordinary words and numbers everywhere.
const MinValueLen = 8

// Errors [Set.Set] and [Set.With] wrap, for callers that branch on them
// (e.g. an HTTP API answering 400).
var (
	ErrInvalidName   = errors.New("invalid secret name")
	ErrValueTooShort = errors.New("secret value too short")
)

// setError carries the exact user-facing message while matching a sentinel
// with errors.Is.
type setError struct {
	msg  string
	kind error
}

func (e *setError) Error() string { return e.msg }
func (e *setError) Unwrap() error { return e.kind }

// Set holds named secret values; safe for concurrent use. Create one with
// [NewSet] (a zero Set works too, as an empty set). A nil *Set holds no
// secrets: its redacting methods return their input unchanged.
type Set struct {
	mu     sync.Mutex
	values map[string]string
	// withheld names the values registered with Withhold: redacted like
	// the others, never handed to a process.
	withheld map[string]bool
	// m is an immutable snapshot rebuilt on every change, so redaction (on
	// every tool result, event and log line) never takes the lock.
	m atomic.Pointer[matcher]
}

// NewSet returns an empty set.
func NewSet() *Set {
	s := &Set{values: map[string]string{}}
	s.m.Store(newMatcher(nil, nil))
	return s
}

// Set registers value under name, replacing any earlier value of that name.
// Names are environment-variable names ([A-Za-z_][A-Za-z0-9_]*); values must
// be at least [MinValueLen] bytes.
func (s *Set) Set(name, value string) error {
	if err := validate(name, value); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.values == nil {
		s.values = map[string]string{}
	}
	s.values[name] = value
	delete(s.withheld, name)
	s.m.Store(newMatcher(s.values, s.withheld))
	return nil
}

// Withhold registers value under name like Set, for a credential weft
// itself uses (a provider key, the server's bearer token): it is redacted
// wherever it appears, but unlike a secret registered with Set it is never
// given to a process weft starts ([Set.Env] leaves it out, and [ToolEnv]
// drops any variable whose value holds it). A later Set of the same name
// passes it through after all.
func (s *Set) Withhold(name, value string) error {
	if err := validate(name, value); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.values == nil {
		s.values = map[string]string{}
	}
	if s.withheld == nil {
		s.withheld = map[string]bool{}
	}
	s.values[name] = value
	s.withheld[name] = true
	s.m.Store(newMatcher(s.values, s.withheld))
	return nil
}

// Delete removes the secret called name, if any.
func (s *Set) Delete(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.values[name]; !ok {
		return
	}
	delete(s.values, name)
	delete(s.withheld, name)
	s.m.Store(newMatcher(s.values, s.withheld))
}

// With returns a copy of s with one more secret, for secrets that belong to
// one run: s itself is unchanged. The copy is independent: later changes to
// s are not seen by it.
func (s *Set) With(name, value string) (*Set, error) {
	if err := validate(name, value); err != nil {
		return nil, err
	}
	c := &Set{}
	if s != nil {
		s.mu.Lock()
		c.values = maps.Clone(s.values)
		c.withheld = maps.Clone(s.withheld)
		s.mu.Unlock()
	}
	if c.values == nil {
		c.values = map[string]string{}
	}
	c.values[name] = value
	delete(c.withheld, name)
	c.m.Store(newMatcher(c.values, c.withheld))
	return c, nil
}

var emptyMatcher = newMatcher(nil, nil)

// load returns the current snapshot; nil and zero sets have none.
func (s *Set) load() *matcher {
	if s == nil {
		return emptyMatcher
	}
	if m := s.m.Load(); m != nil {
		return m
	}
	return emptyMatcher
}

// Names returns the registered names, sorted, withheld ones included.
func (s *Set) Names() []string {
	if s == nil {
		return nil
	}
	m := s.load()
	return slices.Clone(m.names)
}

// Len returns the number of registered secrets.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.load().names)
}

// Env returns "NAME=value" for every secret registered with Set (not the
// withheld ones), sorted by name, for the environment of subprocesses such
// as Bash commands. [ToolEnv] builds a whole environment around it.
func (s *Set) Env() []string {
	if s == nil {
		return nil
	}
	m := s.load()
	env := make([]string, 0, len(m.passNames))
	for _, n := range m.passNames {
		env = append(env, n+"="+m.byName[n])
	}
	return env
}

// Redact replaces every occurrence of a registered value in text by
// "[SECRET:NAME]". Text is scanned left to right; where several values
// start at the same place the longest wins, so a value that extends
// another is never half-redacted. Two names with the same value redact to
// the alphabetically first name. When nothing matches, text is returned
// as is, without allocating.
//
// A value containing "[" or "]" could in principle be spelled by a
// replacement marker next to ordinary text; such values are redacted where
// they occur but cannot be excluded from appearing that way.
func (s *Set) Redact(text string) string {
	if s == nil {
		return text
	}
	out, _ := s.load().scan(text, true)
	return out
}

func validate(name, value string) error {
	if !validName(name) {
		return &setError{
			msg:  fmt.Sprintf("secret name %q is invalid: use letters, digits and underscores, not starting with a digit", name),
			kind: ErrInvalidName,
		}
	}
	if len(value) < MinValueLen {
		return &setError{
			msg:  fmt.Sprintf("secret %q value too short (min %d bytes): got %d", name, MinValueLen, len(value)),
			kind: ErrValueTooShort,
		}
	}
	return nil
}

func validName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '_', 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// entry is one value to replace and its marker.
type entry struct {
	value, token string
	bvalue       []byte // value, for searching bytes without converting them
}

// matcher is an immutable snapshot of a Set's values.
type matcher struct {
	entries   []entry           // longest value first, then by name
	first     [256][]int32      // indexes into entries by the value's first byte, in entries order
	names     []string          // sorted
	passNames []string          // sorted, without the withheld ones
	byName    map[string]string // name -> value
	// withheldValues are the withheld values no pass-through secret shares:
	// a variable holding one never reaches a process.
	withheldValues []string
}

func newMatcher(values map[string]string, withheld map[string]bool) *matcher {
	m := &matcher{byName: maps.Clone(values)}
	m.names = slices.Sorted(maps.Keys(values))
	passed := map[string]bool{}
	for _, n := range m.names {
		if !withheld[n] {
			m.passNames = append(m.passNames, n)
			passed[values[n]] = true
		}
	}
	for _, n := range m.names {
		if v := values[n]; withheld[n] && !passed[v] && !slices.Contains(m.withheldValues, v) {
			m.withheldValues = append(m.withheldValues, v)
		}
	}
	type nv struct{ name, value string }
	all := make([]nv, 0, len(values))
	for _, n := range m.names {
		all = append(all, nv{n, values[n]})
	}
	slices.SortStableFunc(all, func(a, b nv) int {
		if c := cmp.Compare(len(b.value), len(a.value)); c != 0 {
			return c
		}
		return strings.Compare(a.name, b.name)
	})
	seen := map[string]bool{}
	for _, e := range all {
		if seen[e.value] {
			continue // the same value under a later name: the first name wins
		}
		seen[e.value] = true
		i := int32(len(m.entries))
		m.entries = append(m.entries, entry{value: e.value, bvalue: []byte(e.value), token: "[SECRET:" + e.name + "]"})
		m.first[e.value[0]] = append(m.first[e.value[0]], i)
	}
	return m
}

// Outcomes of a decision at one position of the text.
const (
	atNone      = iota // no value starts here
	atMatch            // entries[idx] starts here and nothing longer can
	atUndecided        // the text ends inside what may yet be a value
)

// at decides what starts at s[i]. Candidates are ordered longest first, so
// the first one that either matches in full or could still match once more
// text arrives decides: anything after it is shorter.
func (m *matcher) at(s string, i int, eof bool) (int, int) {
	rest := s[i:]
	for _, ci := range m.first[s[i]] {
		v := m.entries[ci].value
		if len(rest) >= len(v) {
			if rest[:len(v)] == v {
				return int(ci), atMatch
			}
		} else if !eof && v[:len(rest)] == rest {
			return -1, atUndecided
		}
	}
	return -1, atNone
}

// scan redacts s up to the first position where, without eof, more text
// could still change the outcome; it returns the redacted text and how many
// bytes of s it covers. It allocates only when something is replaced.
func (m *matcher) scan(s string, eof bool) (string, int) {
	if len(m.entries) == 0 {
		return s, len(s)
	}
	var b strings.Builder
	written := 0 // s[:written] is accounted for in b
	i := 0
scan:
	for i < len(s) {
		if len(m.first[s[i]]) == 0 {
			i++
			continue
		}
		ci, st := m.at(s, i, eof)
		switch st {
		case atNone:
			i++
		case atMatch:
			if written == 0 && b.Len() == 0 {
				b.Grow(len(s))
			}
			b.WriteString(s[written:i])
			b.WriteString(m.entries[ci].token)
			i += len(m.entries[ci].value)
			written = i
		case atUndecided:
			break scan
		}
	}
	if written == 0 && b.Len() == 0 {
		return s[:i], i
	}
	b.WriteString(s[written:i])
	return b.String(), i
}

// contains reports whether any value occurs in s.
func (m *matcher) contains(s string) bool {
	for _, e := range m.entries {
		if strings.Contains(s, e.value) {
			return true
		}
	}
	return false
}

// Stream redacts text that arrives in chunks (streamed model output, a
// command's output as it is produced), where a value may be split across
// chunks. It is not safe for concurrent use. The concatenation of every
// Write result and the final Flush equals [Set.Redact] of the whole text.
type Stream struct {
	s       *Set
	pending string
}

// NewStream returns a stream redacting with s's secrets; secrets added to
// s later apply from the next Write on.
func (s *Set) NewStream() *Stream { return &Stream{s: s} }

// Write adds chunk and returns the redacted text that is safe to emit now.
// It holds back the shortest tail that could still be the start of a
// secret value, to be released by a later Write or Flush.
func (st *Stream) Write(chunk string) string {
	if st.s == nil {
		return chunk
	}
	text := chunk
	if st.pending != "" {
		text = st.pending + chunk
	}
	out, n := st.s.load().scan(text, false)
	// Clone: the tail is short, the text it was cut from need not be.
	st.pending = strings.Clone(text[n:])
	return out
}

// Flush returns the held-back tail, redacted, and leaves the stream empty
// and reusable.
func (st *Stream) Flush() string {
	p := st.pending
	st.pending = ""
	if st.s == nil {
		return p
	}
	return st.s.Redact(p)
}
