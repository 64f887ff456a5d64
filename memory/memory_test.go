package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/weft-run/weft/record"
	"github.com/weft-run/weft/store/sqlite"
	"github.com/weft-run/weft/tool"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

const day = 24 * time.Hour

// fakeNow is a settable clock for Options.Now.
type fakeNow struct {
	mu sync.Mutex
	t  time.Time
}

func (f *fakeNow) now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t
}

func (f *fakeNow) set(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.t = t
}

func openStore(t *testing.T, path string) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

type mem struct {
	text string
	tags []string
	age  time.Duration
}

type hit struct {
	text  string
	score float64
}

func TestSearchRanking(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		mems  []mem
		query string
		limit int
		want  []hit
	}{
		{
			name: "recency beats a better but older match",
			mems: []mem{
				{text: "deploy staging with make deploy", age: 14 * day}, // overlap 1, recency 1/4
				{text: "staging is on port 8080", age: 0},                // overlap 1/2, recency 1
			},
			query: "deploy staging",
			want:  []hit{{"staging is on port 8080", 0.5}, {"deploy staging with make deploy", 0.25}},
		},
		{
			name: "equal scores: newest first",
			mems: []mem{
				{text: "alpha beta", age: 7 * day}, // 1 * 1/2
				{text: "alpha only", age: 0},       // 1/2 * 1
			},
			query: "alpha beta",
			want:  []hit{{"alpha only", 0.5}, {"alpha beta", 0.5}},
		},
		{
			name: "overlap wins at the same age; no shared word, no result",
			mems: []mem{
				{text: "Go tests run with -race", age: day},
				{text: "the race is on Sunday", age: day},
				{text: "coffee at nine", age: 0},
			},
			query: "run the tests with race",
			want: []hit{
				{"Go tests run with -race", math.Pow(0.5, 1.0/7)},
				{"the race is on Sunday", math.Pow(0.5, 1.0/7) / 3},
			},
		},
		{
			name:  "stopwords and case are ignored; tags are words",
			mems:  []mem{{text: "Prefers tabs", tags: []string{"Editor"}, age: 0}},
			query: "what is THE editor of the user",
			want:  []hit{{"Prefers tabs", 0.5}}, // editor, user
		},
		{
			name: "Chinese text is matched by characters",
			mems: []mem{
				{text: "项目的数据库是 PostgreSQL 16", age: 0},
				{text: "周末去爬山", age: 0},
			},
			query: "数据库",
			want:  []hit{{"项目的数据库是 PostgreSQL 16", 1}},
		},
		{
			name:  "a query of stopwords finds nothing",
			mems:  []mem{{text: "the and of", age: 0}},
			query: "the of",
			want:  nil,
		},
		{
			name: "limit",
			mems: []mem{
				{text: "cat one", age: 3 * day},
				{text: "cat two", age: 2 * day},
				{text: "cat three", age: day},
			},
			query: "cat",
			limit: 2,
			want:  []hit{{"cat three", math.Pow(0.5, 1.0/7)}, {"cat two", math.Pow(0.5, 2.0/7)}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clock := &fakeNow{}
			s := New(openStore(t, ":memory:"), Options{Now: clock.now})
			for _, m := range tt.mems {
				clock.set(t0.Add(-m.age))
				if _, err := s.Remember(context.Background(), "u", m.text, m.tags); err != nil {
					t.Fatal(err)
				}
			}
			clock.set(t0)
			found, err := s.Search(context.Background(), "u", tt.query, tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			if len(found) != len(tt.want) {
				t.Fatalf("found %d: %+v, want %v", len(found), found, tt.want)
			}
			for i, w := range tt.want {
				f := found[i]
				if f.Text != w.text || math.Abs(f.Score-w.score) > 1e-9 || math.Abs(f.Score-f.Overlap*f.Recency) > 1e-12 {
					t.Errorf("#%d = %q score %v (overlap %v recency %v), want %q score %v", i, f.Text, f.Score, f.Overlap, f.Recency, w.text, w.score)
				}
			}
		})
	}
}

func TestHalfLifeOption(t *testing.T) {
	t.Parallel()
	clock := &fakeNow{t: t0.Add(-day)}
	s := New(openStore(t, ":memory:"), Options{Now: clock.now, HalfLife: day})
	if _, err := s.Remember(context.Background(), "u", "old fact", nil); err != nil {
		t.Fatal(err)
	}
	clock.set(t0)
	found, err := s.Search(context.Background(), "u", "fact", 0)
	if err != nil || len(found) != 1 || math.Abs(found[0].Recency-0.5) > 1e-9 {
		t.Fatalf("found %+v, %v", found, err)
	}
	// A memory from the future (a clock set back) counts as new.
	clock.set(t0.Add(-2 * day))
	if found, _ := s.Search(context.Background(), "u", "fact", 0); found[0].Recency != 1 {
		t.Fatalf("recency of a future memory = %v", found[0].Recency)
	}
}

func TestRememberValidation(t *testing.T) {
	t.Parallel()
	s := New(openStore(t, ":memory:"), Options{})
	manyTags := make([]string, MaxTags+1)
	for i := range manyTags {
		manyTags[i] = fmt.Sprint("t", i)
	}
	tests := []struct {
		name string
		text string
		tags []string
		msg  string
	}{
		{"empty", "  \n", nil, "text is empty"},
		{"too long", strings.Repeat("é", MaxTextRunes+1), nil, "text has 2001 characters"},
		{"too many tags", "x marks", manyTags, "21 tags; at most 20"},
		{"long tag", "x marks", []string{strings.Repeat("t", MaxTagRunes+1)}, "longer than 64"},
	}
	for _, tt := range tests {
		if _, err := s.Remember(context.Background(), "u", tt.text, tt.tags); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%s: err = %v, want %q", tt.name, err, tt.msg)
		}
	}
	m, err := s.Remember(context.Background(), "u", "  uses vim  ", []string{" editor ", "", "editor", "tools"})
	if err != nil {
		t.Fatal(err)
	}
	if m.Text != "uses vim" || !slices.Equal(m.Tags, []string{"editor", "tools"}) || !strings.HasPrefix(m.ID, "mem_") || m.UserID != "u" {
		t.Fatalf("stored %+v", m)
	}
	if _, err := s.Search(context.Background(), "u", "vim", -1); !errors.Is(err, ErrInvalid) {
		t.Fatalf("negative limit: %v", err)
	}
}

func TestPerUserIsolation(t *testing.T) {
	t.Parallel()
	s := New(openStore(t, ":memory:"), Options{})
	ctx := context.Background()
	a, err := s.Remember(ctx, "alice", "alice likes green tea", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Remember(ctx, "bob", "bob likes black coffee", nil); err != nil {
		t.Fatal(err)
	}
	for user, want := range map[string]string{"alice": "alice likes green tea", "bob": "bob likes black coffee"} {
		ms, err := s.List(ctx, user)
		if err != nil || len(ms) != 1 || ms[0].Text != want {
			t.Fatalf("List(%s) = %+v, %v", user, ms, err)
		}
		found, err := s.Search(ctx, user, "likes tea coffee", 0)
		if err != nil || len(found) != 1 || found[0].Text != want {
			t.Fatalf("Search(%s) = %+v, %v", user, found, err)
		}
	}
	if err := s.Forget(ctx, "bob", a.ID); !errors.Is(err, record.ErrNotFound) {
		t.Fatalf("bob forgetting alice's memory: %v", err)
	}
	if err := s.Forget(ctx, "alice", a.ID); err != nil {
		t.Fatal(err)
	}
	if ms, _ := s.List(ctx, "alice"); len(ms) != 0 {
		t.Fatalf("after Forget: %+v", ms)
	}
}

func TestRelevant(t *testing.T) {
	t.Parallel()
	clock := &fakeNow{}
	s := New(openStore(t, ":memory:"), Options{Now: clock.now})
	for i, text := range []string{"release notes go in CHANGELOG.md", "releases are tagged vX.Y.Z", "lunch is at noon", "release branch is main"} {
		clock.set(t0.Add(time.Duration(i) * time.Hour))
		if _, err := s.Remember(context.Background(), "u", text, nil); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.Relevant(context.Background(), "u", "cut a release and write the notes", 2)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"release notes go in CHANGELOG.md", "release branch is main"}
	if !slices.Equal(got, want) {
		t.Fatalf("Relevant = %q, want %q", got, want)
	}
	if got, _ := s.Relevant(context.Background(), "nobody", "release", 0); len(got) != 0 {
		t.Fatalf("another user's memories: %q", got)
	}
}

func TestUserContext(t *testing.T) {
	t.Parallel()
	if u := UserFrom(context.Background()); u != DefaultUser {
		t.Fatalf("UserFrom(empty) = %q", u)
	}
	if u := UserFrom(WithUser(context.Background(), "")); u != DefaultUser {
		t.Fatalf("UserFrom(\"\") = %q", u)
	}
	if u := UserFrom(WithUser(context.Background(), "ann")); u != "ann" {
		t.Fatalf("UserFrom = %q", u)
	}
}

// TestToolsEndToEnd runs the tools through the tool framework over a
// sqlite file, as two users.
func TestToolsEndToEnd(t *testing.T) {
	t.Parallel()
	s := New(openStore(t, filepath.Join(t.TempDir(), "weft.db")), Options{})
	reg, err := tool.NewRegistry(s.Tools()...)
	if err != nil {
		t.Fatal(err)
	}
	run := func(ctx context.Context, name, input string) tool.Result {
		t.Helper()
		return reg.Execute(ctx, &tool.Call{ID: "c", Name: name, Input: json.RawMessage(input)})
	}
	ann := WithUser(context.Background(), "ann")
	res := run(ann, "memory_remember", `{"text":"Ann deploys with make ship","tags":["deploy"]}`)
	if res.IsError || !strings.HasPrefix(res.TextOf(), "Remembered mem_") {
		t.Fatalf("remember: %s", res.TextOf())
	}
	id := res.Data["memory"].(record.Memory).ID
	run(context.Background(), "memory_remember", `{"text":"the default user ships by hand"}`)

	res = run(ann, "memory_search", `{"query":"how do we deploy"}`)
	if res.IsError || !strings.Contains(res.TextOf(), "1 memories, best first:\n- ["+id+"]") || !strings.Contains(res.TextOf(), "make ship #deploy") {
		t.Fatalf("search: %s", res.TextOf())
	}
	res = run(ann, "memory_search", `{"query":"zebra"}`)
	if res.IsError || res.TextOf() != "No memories match." {
		t.Fatalf("search without hits: %s", res.TextOf())
	}
	res = run(context.Background(), "memory_list", `{}`)
	if res.IsError || !strings.Contains(res.TextOf(), "by hand") || strings.Contains(res.TextOf(), "make ship") {
		t.Fatalf("default user's list: %s", res.TextOf())
	}
	res = run(context.Background(), "memory_forget", fmt.Sprintf(`{"id":%q}`, id))
	if !res.IsError || !strings.Contains(res.TextOf(), fmt.Sprintf("no memory %q", id)) {
		t.Fatalf("forgetting another user's memory: %s", res.TextOf())
	}
	res = run(ann, "memory_forget", fmt.Sprintf(`{"id":%q}`, id))
	if res.IsError || res.TextOf() != "Forgot "+id+"." {
		t.Fatalf("forget: %s", res.TextOf())
	}
	res = run(ann, "memory_list", `{}`)
	if res.IsError || res.TextOf() != "No memories yet." {
		t.Fatalf("list after forget: %s", res.TextOf())
	}
	res = run(ann, "memory_remember", `{"text":""}`)
	if !res.IsError || !strings.Contains(res.TextOf(), "text is empty") {
		t.Fatalf("empty remember: %s", res.TextOf())
	}

	meta := map[string]bool{}
	for _, tl := range s.Tools() {
		meta[tl.Spec().Name] = tl.Spec().ReadOnly
	}
	want := map[string]bool{"memory_remember": false, "memory_search": true, "memory_list": true, "memory_forget": false}
	if fmt.Sprint(meta) != fmt.Sprint(want) {
		t.Fatalf("read-only flags = %v, want %v", meta, want)
	}
}

func TestWords(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []string
	}{
		{"The Quick, brown FOX!", []string{"brown", "fox", "quick"}},
		{"go1.26 and x/net", []string{"26", "go1", "net"}},
		{"我的项目", []string{"目", "项"}},
		{"café naïve", []string{"café", "naïve"}},
		{"", nil},
	}
	for _, tt := range tests {
		var got []string
		for w := range words(tt.in) {
			got = append(got, w)
		}
		sort.Strings(got)
		if !slices.Equal(got, tt.want) {
			t.Errorf("words(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func FuzzWords(f *testing.F) {
	for _, s := range []string{"The quick brown fox", "项目的数据库", "a-b_c d", "\xff\xfe", "ÀÉÎ ß"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for w := range words(s) {
			if w == "" || !utf8.ValidString(w) && utf8.ValidString(s) {
				t.Fatalf("words(%q) has %q", s, w)
			}
			if _, stop := stopwords[w]; stop {
				t.Fatalf("words(%q) kept the stopword %q", s, w)
			}
			if strings.ContainsFunc(w, func(r rune) bool { return r == ' ' || r == ',' }) {
				t.Fatalf("words(%q) has %q", s, w)
			}
		}
	})
}
