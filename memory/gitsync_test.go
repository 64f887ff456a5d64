package memory

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// remote is a bare repository standing in for the team's memory remote.
type remote struct {
	t    *testing.T
	path string
}

func newRemote(t *testing.T) *remote {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed (.ci/run installs it)")
	}
	p := filepath.Join(t.TempDir(), "memory.git")
	cmd := exec.Command("git", "init", "-q", "--bare", p)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git init --bare: %v %s", err, out)
	}
	return &remote{t, p}
}

// file is path's content on the remote's main branch ("" if absent).
func (r *remote) file(name string) string {
	cmd := exec.Command("git", "--git-dir", r.path, "show", "main:"+name)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return string(out)
}

// machine is one computer's memory directory syncing with the remote.
func (r *remote) machine(ctx context.Context) (*Dir, *GitSyncAdapter) {
	r.t.Helper()
	d, err := OpenDir(filepath.Join(r.t.TempDir(), "memory"), DirOptions{})
	if err != nil {
		r.t.Fatal(err)
	}
	g := NewGitSyncAdapter(GitSyncOptions{})
	if err := g.InitRepo(ctx, d.Path(), r.path); err != nil {
		r.t.Fatal(err)
	}
	return d, g
}

func mustWrite(t *testing.T, d *Dir, name, body string) {
	t.Helper()
	if _, err := d.Write(Entry{Name: name, Body: body}); err != nil {
		t.Fatal(err)
	}
}

func body(t *testing.T, d *Dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(d.Path(), name+".md"))
	if err != nil {
		return ""
	}
	return string(b)
}

// TestGitSyncConflictPolicies: machines A and B share a bare remote; A
// pushes a change, B changes the same entry without pulling, then B
// pushes under each policy.
func TestGitSyncConflictPolicies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		policy ConflictPolicy
		// sameFile: B edits the entry A edited (else another one).
		sameFile bool
		wantErr  error
		check    func(t *testing.T, r *remote, b *Dir)
	}{
		{policy: ConflictLocalWins, sameFile: true, check: func(t *testing.T, r *remote, b *Dir) {
			if got := r.file("shared.md"); !strings.Contains(got, "B-VERSION") || strings.Contains(got, "A-VERSION") {
				t.Fatalf("remote %q, want B's version", got)
			}
		}},
		{policy: ConflictServerWins, sameFile: true, check: func(t *testing.T, r *remote, b *Dir) {
			if got := body(t, b, "shared"); !strings.Contains(got, "A-VERSION") || strings.Contains(got, "B-VERSION") {
				t.Fatalf("local %q, want A's version", got)
			}
			if got := r.file("shared.md"); !strings.Contains(got, "A-VERSION") {
				t.Fatalf("remote %q", got)
			}
		}},
		{policy: ConflictMerge, sameFile: true, check: func(t *testing.T, r *remote, b *Dir) {
			got := r.file("shared.md")
			for _, want := range []string{"<<<<<<<", "A-VERSION", "=======", "B-VERSION", ">>>>>>>"} {
				if !strings.Contains(got, want) {
					t.Fatalf("remote lacks %q:\n%s", want, got)
				}
			}
			if body(t, b, "shared") != got {
				t.Fatal("local and remote differ after the merge")
			}
		}},
		{policy: ConflictMerge, sameFile: false, check: func(t *testing.T, r *remote, b *Dir) {
			if !strings.Contains(r.file("shared.md"), "A-VERSION") || !strings.Contains(r.file("b-only.md"), "B-VERSION") {
				t.Fatal("the merge lost a side")
			}
			if !strings.Contains(body(t, b, "shared"), "A-VERSION") {
				t.Fatal("B lacks A's change")
			}
			// The index is derived from the entries on each side, never
			// synced, so it cannot conflict.
			if idx := r.file("MEMORY.md"); idx != "" {
				t.Fatalf("the index was synced:\n%s", idx)
			}
		}},
		{policy: ConflictFail, sameFile: true, wantErr: ErrSyncConflict, check: func(t *testing.T, r *remote, b *Dir) {
			if got := r.file("shared.md"); !strings.Contains(got, "A-VERSION") {
				t.Fatalf("remote changed: %q", got)
			}
			if got := body(t, b, "shared"); !strings.Contains(got, "B-VERSION") {
				t.Fatalf("local changed: %q", got)
			}
		}},
	}
	for _, tt := range tests {
		name := tt.policy.String()
		if !tt.sameFile {
			name += "/different-files"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			r := newRemote(t)
			a, ga := r.machine(ctx)
			b, gb := r.machine(ctx)
			mustWrite(t, a, "shared", "ORIGINAL")
			if n, err := ga.Push(ctx, a.Path(), tt.policy); err != nil || n == 0 {
				t.Fatalf("first push: %d %v", n, err)
			}
			if n, err := gb.Pull(ctx, b.Path()); err != nil || n == 0 || !strings.Contains(body(t, b, "shared"), "ORIGINAL") {
				t.Fatalf("pull: %d %v %q", n, err, body(t, b, "shared"))
			}
			mustWrite(t, a, "shared", "A-VERSION")
			if _, err := ga.Push(ctx, a.Path(), tt.policy); err != nil {
				t.Fatal(err)
			}
			if tt.sameFile {
				mustWrite(t, b, "shared", "B-VERSION")
			} else {
				mustWrite(t, b, "b-only", "B-VERSION")
			}
			_, err := gb.Push(ctx, b.Path(), tt.policy)
			if !errors.Is(err, tt.wantErr) && !(tt.wantErr == nil && err == nil) {
				t.Fatalf("push: %v, want %v", err, tt.wantErr)
			}
			tt.check(t, r, b)
		})
	}
}

// TestGitSyncPullPolicies: when a store pulls what another machine
// pushed, by PullPolicy.
func TestGitSyncPullPolicies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cfg SyncConfig
		// seenAtStart: the entry pushed before the session is in its first
		// prompt; seenLater: the one pushed during it is in a prompt after
		// a minute.
		seenAtStart, seenLater bool
	}{
		{DefaultSyncConfig(), true, false},
		{APISyncConfig(time.Minute), true, true},
		{SyncConfig{Pull: PullAlways}, true, true},
		{SyncConfig{Pull: PullNever}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.cfg.Pull.String(), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			r := newRemote(t)
			a, ga := r.machine(ctx)
			mustWrite(t, a, "first", "FIRST-FACT")
			if _, err := ga.Push(ctx, a.Path(), ConflictLocalWins); err != nil {
				t.Fatal(err)
			}
			bDir := filepath.Join(t.TempDir(), "memory")
			gb := NewGitSyncAdapter(GitSyncOptions{})
			if err := gb.InitRepo(ctx, bDir, r.path); err != nil {
				t.Fatal(err)
			}
			clock := &fakeNow{t: t0}
			s, err := NewFileStore(FileStoreConfig{UserDir: bDir, Now: clock.now, Sync: &Sync{Adapter: gb, Config: tt.cfg}})
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(s.MemoryPrompt(ctx), "FIRST-FACT"); got != tt.seenAtStart {
				t.Fatalf("first entry in the session's prompt: %v, want %v", got, tt.seenAtStart)
			}
			if idx, _, _ := s.Dir(ScopeUser).Index(); strings.Contains(idx, "[first]") != tt.seenAtStart {
				t.Fatalf("index after the pull:\n%s", idx)
			}
			mustWrite(t, a, "second", "SECOND-FACT")
			if _, err := ga.Push(ctx, a.Path(), ConflictLocalWins); err != nil {
				t.Fatal(err)
			}
			clock.set(t0.Add(time.Minute + time.Second))
			if got := strings.Contains(s.MemoryPrompt(ctx), "SECOND-FACT"); got != tt.seenLater {
				t.Fatalf("second entry later: %v, want %v", got, tt.seenLater)
			}
			// Writing through the store pushes (under every pull policy).
			if _, _, warn, err := s.Remember(ctx, ScopeUser, Entry{Name: "from-b", Body: "B-FACT"}); err != nil || warn != "" {
				t.Fatalf("remember: %v %q", err, warn)
			}
			if !strings.Contains(r.file("from-b.md"), "B-FACT") {
				t.Fatal("the store's write was not pushed")
			}
		})
	}
}

// TestGitSyncIgnoresEnclosingRepo: a memory directory inside another
// repository (a home directory kept in git) syncs on its own repository;
// the enclosing one gets no commit.
func TestGitSyncIgnoresEnclosingRepo(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRemote(t)
	home := t.TempDir()
	cmd := exec.Command("git", "init", "-q", home)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	d, err := OpenDir(filepath.Join(home, ".weft", "memory"), DirOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g := NewGitSyncAdapter(GitSyncOptions{})
	if err := g.InitRepo(ctx, d.Path(), r.path); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, d, "fact", "FACT")
	if _, err := g.Push(ctx, d.Path(), ConflictLocalWins); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.file("fact.md"), "FACT") {
		t.Fatal("not pushed")
	}
	cmd = exec.Command("git", "-C", home, "rev-parse", "-q", "--verify", "HEAD")
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
	if out, err := cmd.Output(); err == nil {
		t.Fatalf("the enclosing repository got a commit: %s", out)
	}
}

func TestNoopSyncAdapter(t *testing.T) {
	t.Parallel()
	var a SyncAdapter = NoopSyncAdapter{}
	if a.IsAvailable() {
		t.Fatal("available")
	}
	clock := &fakeNow{t: t0}
	s, err := NewFileStore(FileStoreConfig{UserDir: filepath.Join(t.TempDir(), "m"), Now: clock.now, Sync: &Sync{Adapter: a, Config: SyncConfig{Pull: PullAlways}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, warn, err := s.Remember(context.Background(), "", Entry{Name: "x", Body: "y"}); err != nil || warn != "" {
		t.Fatalf("%v %q", err, warn)
	}
}

func TestParsePolicies(t *testing.T) {
	t.Parallel()
	for _, p := range []ConflictPolicy{ConflictLocalWins, ConflictServerWins, ConflictMerge, ConflictFail} {
		if got, err := ParseConflictPolicy(p.String()); err != nil || got != p {
			t.Errorf("ParseConflictPolicy(%q) = %v, %v", p, got, err)
		}
	}
	for _, p := range []PullPolicy{PullOnSessionStart, PullWithTTL, PullAlways, PullNever} {
		if got, err := ParsePullPolicy(p.String()); err != nil || got != p {
			t.Errorf("ParsePullPolicy(%q) = %v, %v", p, got, err)
		}
	}
	if c, err := ParseConflictPolicy(""); err != nil || c != ConflictLocalWins {
		t.Error("empty conflict policy")
	}
	if p, err := ParsePullPolicy(""); err != nil || p != PullOnSessionStart {
		t.Error("empty pull policy")
	}
	for _, bad := range []string{"LOCAL", "unknown", "local_wins"} {
		if _, err := ParseConflictPolicy(bad); err == nil {
			t.Errorf("ParseConflictPolicy(%q) accepted", bad)
		}
		if _, err := ParsePullPolicy(bad); err == nil {
			t.Errorf("ParsePullPolicy(%q) accepted", bad)
		}
	}
}

// TestGitSyncMergeFirstSync: a machine with memory of its own joins a
// remote that has memory too; under ConflictMerge both survive.
func TestGitSyncMergeFirstSync(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r := newRemote(t)
	a, ga := r.machine(ctx)
	mustWrite(t, a, "from-a", "A-FACT")
	if _, err := ga.Push(ctx, a.Path(), ConflictMerge); err != nil {
		t.Fatal(err)
	}
	b, err := OpenDir(filepath.Join(t.TempDir(), "memory"), DirOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, b, "from-b", "B-FACT")
	gb := NewGitSyncAdapter(GitSyncOptions{})
	if err := gb.InitRepo(ctx, b.Path(), r.path); err != nil {
		t.Fatal(err)
	}
	if _, err := gb.Pull(ctx, b.Path()); err != nil {
		t.Fatal(err)
	}
	if _, err := gb.Push(ctx, b.Path(), ConflictMerge); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.file("from-a.md"), "A-FACT") || !strings.Contains(r.file("from-b.md"), "B-FACT") {
		t.Fatal("the first sync lost a side")
	}
	if !strings.Contains(body(t, b, "from-a"), "A-FACT") {
		t.Fatal("B lacks A's entry")
	}
}
