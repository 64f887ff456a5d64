package secret

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
)

func mustSet(t testing.TB, kv ...string) *Set {
	t.Helper()
	s := NewSet()
	for i := 0; i+1 < len(kv); i += 2 {
		if err := s.Set(kv[i], kv[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func TestSetErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, value string
		want        string // "" = no error
		is          error
	}{
		{"SHORT", "abc", `secret "SHORT" value too short (min 8 bytes): got 3`, ErrValueTooShort},
		{"EMPTY", "", `secret "EMPTY" value too short (min 8 bytes): got 0`, ErrValueTooShort},
		{"SEVEN", "1234567", `secret "SEVEN" value too short (min 8 bytes): got 7`, ErrValueTooShort},
		{"EIGHT", "12345678", "", nil},
		{"_under_1", "12345678", "", nil},
		{"lower_case", "12345678", "", nil},
		{"", "12345678", `secret name "" is invalid: use letters, digits and underscores, not starting with a digit`, ErrInvalidName},
		{"1ABC", "12345678", `secret name "1ABC" is invalid: use letters, digits and underscores, not starting with a digit`, ErrInvalidName},
		{"A-B", "12345678", `secret name "A-B" is invalid: use letters, digits and underscores, not starting with a digit`, ErrInvalidName},
		{"A B", "12345678", `secret name "A B" is invalid: use letters, digits and underscores, not starting with a digit`, ErrInvalidName},
		{"ÄPFEL", "12345678", `secret name "ÄPFEL" is invalid: use letters, digits and underscores, not starting with a digit`, ErrInvalidName},
	}
	for _, tt := range tests {
		t.Run(tt.name+"="+tt.value, func(t *testing.T) {
			t.Parallel()
			for _, op := range []string{"Set", "With"} {
				s := NewSet()
				var err error
				if op == "Set" {
					err = s.Set(tt.name, tt.value)
				} else {
					_, err = s.With(tt.name, tt.value)
				}
				if tt.want == "" {
					if err != nil {
						t.Fatalf("%s: %v", op, err)
					}
					continue
				}
				if err == nil || err.Error() != tt.want {
					t.Fatalf("%s: error %v, want %q", op, err, tt.want)
				}
				if !errors.Is(err, tt.is) {
					t.Fatalf("%s: errors.Is(%v, %v) is false", op, err, tt.is)
				}
				if s.Len() != 0 {
					t.Fatalf("%s: a rejected secret was stored", op)
				}
			}
		})
	}
}

func TestSetNamesEnvDelete(t *testing.T) {
	t.Parallel()
	s := mustSet(t, "ZED", "zzzzzzzz1", "ALPHA", "aaaaaaaa1", "MID", "mmmmmmmm1")
	if got, want := s.Names(), []string{"ALPHA", "MID", "ZED"}; !slices.Equal(got, want) {
		t.Fatalf("Names %v, want %v", got, want)
	}
	if got, want := s.Env(), []string{"ALPHA=aaaaaaaa1", "MID=mmmmmmmm1", "ZED=zzzzzzzz1"}; !slices.Equal(got, want) {
		t.Fatalf("Env %v, want %v", got, want)
	}
	must(t, s.Set("MID", "replaced-value"))
	if got := s.Redact("mmmmmmmm1 replaced-value"); got != "mmmmmmmm1 [SECRET:MID]" {
		t.Fatalf("after replace: %q", got)
	}
	s.Delete("MID")
	s.Delete("NOT_THERE")
	if s.Len() != 2 || slices.Contains(s.Names(), "MID") {
		t.Fatalf("after Delete: %v", s.Names())
	}
	if got := s.Redact("replaced-value"); got != "replaced-value" {
		t.Fatalf("deleted secret still redacted: %q", got)
	}
	names := s.Names()
	names[0] = "MUTATED"
	if s.Names()[0] != "ALPHA" {
		t.Fatal("Names returned the set's own slice")
	}
}

func TestSetWith(t *testing.T) {
	t.Parallel()
	parent := mustSet(t, "ENGINE", "engine-secret-1")
	child, err := parent.With("TENANT", "tenant-token-1")
	must(t, err)
	if parent.Len() != 1 || child.Len() != 2 {
		t.Fatalf("parent %v child %v", parent.Names(), child.Names())
	}
	text := "engine-secret-1 tenant-token-1"
	if got := child.Redact(text); got != "[SECRET:ENGINE] [SECRET:TENANT]" {
		t.Fatalf("child: %q", got)
	}
	if got := parent.Redact(text); got != "[SECRET:ENGINE] tenant-token-1" {
		t.Fatalf("parent: %q", got)
	}
	must(t, child.Set("ONLY_CHILD", "only-child-1"))
	if parent.Len() != 1 {
		t.Fatal("a Set on the child changed the parent")
	}
	var nilSet *Set
	c, err := nilSet.With("X", "12345678")
	must(t, err)
	if c.Redact("a 12345678") != "a [SECRET:X]" {
		t.Fatal("With on a nil set")
	}
}

func TestNilSet(t *testing.T) {
	t.Parallel()
	var s *Set
	if s.Redact("x") != "x" || string(s.RedactJSON([]byte(`"x"`))) != `"x"` || s.Len() != 0 || s.Names() != nil || s.Env() != nil {
		t.Fatal("nil set is not empty")
	}
	st := s.NewStream()
	if st.Write("ab") != "ab" || st.Flush() != "" {
		t.Fatal("nil set stream")
	}
	var zero Set
	if zero.Redact("12345678") != "12345678" || zero.Len() != 0 || zero.NewStream().Write("x") != "x" {
		t.Fatal("zero set is not empty")
	}
	zero.Delete("X")
	must(t, zero.Set("X", "12345678"))
	if zero.Redact("a 12345678") != "a [SECRET:X]" {
		t.Fatal("zero set unusable")
	}
}

func TestRedact(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		kv   []string
		in   string
		want string
	}{
		{"no secrets registered", nil, "hello", "hello"},
		{"nothing matches", []string{"A", "password1"}, "nothing to see", "nothing to see"},
		{"empty text", []string{"A", "password1"}, "", ""},
		{"whole text", []string{"A", "password1"}, "password1", "[SECRET:A]"},
		{"many occurrences", []string{"A", "password1"}, "password1 xpassword1x password1password1", "[SECRET:A] x[SECRET:A]x [SECRET:A][SECRET:A]"},
		{"longest wins at a position", []string{"SHORT", "abcdefgh", "LONG", "abcdefgh1234"}, "abcdefgh1234 abcdefgh12", "[SECRET:LONG] [SECRET:SHORT]12"},
		{"longest wins whatever the names", []string{"Z_LONG", "abcdefgh1234", "A_SHORT", "abcdefgh"}, "abcdefgh1234", "[SECRET:Z_LONG]"},
		{"contained value", []string{"OUTER", "xxabcdefghxx", "INNER", "abcdefgh"}, "xxabcdefghxx abcdefgh", "[SECRET:OUTER] [SECRET:INNER]"},
		{"overlapping values, leftmost first", []string{"A", "12345678ab", "B", "78abcdefgh"}, "12345678abcdefgh", "[SECRET:A]cdefgh"},
		{"same value twice: first name", []string{"B_NAME", "samevalue", "A_NAME", "samevalue"}, "samevalue", "[SECRET:A_NAME]"},
		{"adjacent different values", []string{"A", "aaaaaaaa", "B", "bbbbbbbb"}, "aaaaaaaabbbbbbbbaaaaaaaa", "[SECRET:A][SECRET:B][SECRET:A]"},
		{"unicode value", []string{"U", "pässwörd€"}, "x pässwörd€ y", "x [SECRET:U] y"},
		{"value with newline", []string{"N", "line1\nline2"}, "a line1\nline2 b", "a [SECRET:N] b"},
		{"partial prefix at end", []string{"A", "password1"}, "xx passwor", "xx passwor"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := mustSet(t, tt.kv...)
			if got := s.Redact(tt.in); got != tt.want {
				t.Fatalf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestRedactNoAllocWithoutMatch(t *testing.T) {
	s := mustSet(t, "A", "password1", "B", "token-abcdef", "C", "pp-long-value")
	text := strings.Repeat("an ordinary line of tool output with p and t letters\n", 100)
	if got := s.Redact(text); got != text {
		t.Fatal("changed")
	}
	if n := testing.AllocsPerRun(100, func() { _ = s.Redact(text) }); n != 0 {
		t.Fatalf("Redact allocated %v times without a match", n)
	}
	if n := testing.AllocsPerRun(100, func() { _ = s.RedactJSON([]byte(`{"a":"plain text","n":12}`)) }); n > 1 {
		// The conversion of the literal is the one allocation.
		t.Fatalf("RedactJSON allocated %v times without a match", n)
	}
}

func TestSetConcurrent(t *testing.T) {
	t.Parallel()
	s := NewSet()
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for j := range 200 {
				name := "S" + string(rune('A'+i))
				_ = s.Set(name, strings.Repeat(string(rune('a'+i)), 8+j%4))
				_ = s.Redact("aaaaaaaa bbbbbbbbb cccccccccc")
				_ = s.RedactJSON([]byte(`"aaaaaaaaaa"`))
				st := s.NewStream()
				_ = st.Write("aaaa")
				_ = st.Flush()
				_, _ = s.With("W", "wwwwwwww")
				_ = s.Env()
				if j%50 == 0 {
					s.Delete(name)
				}
			}
		})
	}
	wg.Wait()
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
