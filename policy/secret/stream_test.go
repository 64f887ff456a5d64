package secret

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// streamValues share prefixes and overlap each other, so that random text
// over the same letters keeps streams undecided across chunk boundaries.
var streamValues = []string{
	"NESTED", "abcabcab",
	"LONGER", "abcabcabcab",
	"SHIFTED", "bcabcabc",
	"OTHER", "xyzzyxyz",
	"UNICODE", "äbcäbcä€",
}

// checkStream feeds text to a stream in the given chunks and checks that
// the pieces add up to Redact(text) and that no piece shows a value.
func checkStream(t testing.TB, s *Set, text string, cuts []int) {
	t.Helper()
	st := s.NewStream()
	var got strings.Builder
	emit := func(piece string) {
		for _, v := range s.m.Load().entries {
			if strings.Contains(piece, v.value) {
				t.Fatalf("piece %q shows %q (text %q, cuts %v)", piece, v.value, text, cuts)
			}
		}
		got.WriteString(piece)
	}
	prev := 0
	for _, c := range cuts {
		emit(st.Write(text[prev:c]))
		prev = c
	}
	emit(st.Write(text[prev:]))
	emit(st.Flush())
	if want := s.Redact(text); got.String() != want {
		t.Fatalf("stream gave %q, Redact gives %q (text %q, cuts %v)", got.String(), want, text, cuts)
	}
}

// randomCuts returns sorted cut points in [0, n], duplicates allowed (empty
// chunks).
func randomCuts(r *rand.Rand, n int) []int {
	k := r.IntN(n/2 + 2)
	cuts := make([]int, k)
	for i := range cuts {
		cuts[i] = r.IntN(n + 1)
	}
	for i := 1; i < len(cuts); i++ { // insertion sort: tiny slices
		for j := i; j > 0 && cuts[j] < cuts[j-1]; j-- {
			cuts[j], cuts[j-1] = cuts[j-1], cuts[j]
		}
	}
	return cuts
}

func randomText(r *rand.Rand) string {
	pieces := []string{"a", "b", "c", "ab", "abc", "bca", "x", "y", "z", " ", "\n", "ä", "€", "abcabcab", "abcabcabcab", "bcabcabc", "xyzzyxyz", "äbcäbcä€", "abcabca", "xyzzyx"}
	var b strings.Builder
	for range r.IntN(30) {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.String()
}

func TestStreamProperty(t *testing.T) {
	t.Parallel()
	s := mustSet(t, streamValues...)
	r := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		text := randomText(r)
		checkStream(t, s, text, randomCuts(r, len(text)))
	}
}

func TestStreamCases(t *testing.T) {
	t.Parallel()
	s := mustSet(t, "TOKEN", "s3cr3t-token", "PW", "hunter2hunter2")
	tests := []struct {
		name   string
		chunks []string
		pieces []string // what each Write and then Flush return
	}{
		{"split in two", []string{"auth: s3cr3t", "-token done"}, []string{"auth: ", "[SECRET:TOKEN] done", ""}},
		{"one byte at a time", []string{"s", "3", "c", "r", "3", "t", "-", "t", "o", "k", "e", "n", "!"}, []string{"", "", "", "", "", "", "", "", "", "", "", "[SECRET:TOKEN]", "!", ""}},
		{"false start released", []string{"s3cr3", "X and more"}, []string{"", "s3cr3X and more", ""}},
		{"tail held until flush", []string{"value: hunter2hun"}, []string{"value: ", "hunter2hun"}},
		{"empty chunks", []string{"", "plain", ""}, []string{"", "plain", "", ""}},
		{"two secrets across three chunks", []string{"hunter2h", "unter2s3cr3t-tok", "en"}, []string{"", "[SECRET:PW]", "[SECRET:TOKEN]", ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := s.NewStream()
			var got []string
			for _, c := range tt.chunks {
				got = append(got, st.Write(c))
			}
			got = append(got, st.Flush())
			if strings.Join(got, "|") != strings.Join(tt.pieces, "|") {
				t.Fatalf("pieces %q, want %q", got, tt.pieces)
			}
		})
	}
	// A stream is reusable after Flush.
	st := s.NewStream()
	st.Write("hunter2")
	st.Flush()
	if got := st.Write("hunter2hunter2 "); got != "[SECRET:PW] " {
		t.Fatalf("after Flush: %q", got)
	}
}

func TestStreamSeesLaterSecrets(t *testing.T) {
	t.Parallel()
	s := mustSet(t, "A", "aaaaaaaa")
	st := s.NewStream()
	if got := st.Write("bbbbbbbb "); got != "bbbbbbbb " {
		t.Fatal(got)
	}
	must(t, s.Set("B", "bbbbbbbb"))
	if got := st.Write("bbbbbbbb "); got != "[SECRET:B] " {
		t.Fatal(got)
	}
}

func FuzzStream(f *testing.F) {
	f.Add("plain text", []byte{3, 1})
	f.Add("abcabcabcabcab", []byte{1, 1, 1, 1, 1})
	f.Add("xyzzyxyzabcabcab bcabcabc", []byte{7, 0, 2})
	f.Add("äbcäbcä€äbcäbcä", []byte{2, 5})
	f.Fuzz(func(t *testing.T, text string, sizes []byte) {
		s := mustSet(t, streamValues...)
		var cuts []int
		at := 0
		for _, n := range sizes {
			at += int(n % 16)
			if at > len(text) {
				break
			}
			cuts = append(cuts, at)
		}
		checkStream(t, s, text, cuts)
	})
}
