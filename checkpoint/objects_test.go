package checkpoint

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestObjectsAsGit: a commit written in process is the object git
// commit-tree would write (same id, for the same tree, parent, message
// and time), git reads and checks it (fsck), and the ref moves only from
// where the caller saw it, whether the ref is loose or packed, and never
// while another writer holds its lock.
func TestObjectsAsGit(t *testing.T) {
	t.Parallel()
	s := openStore(t, Options{})
	git := func(stdin string, args ...string) string {
		t.Helper()
		g := &gitCmd{bin: s.git, gitDir: s.gitDir, env: append(baseEnv(), "GIT_AUTHOR_DATE=1700000000 +0000", "GIT_COMMITTER_DATE=1700000000 +0000")}
		out, err := g.run(t.Context(), strings.NewReader(stdin), args...)
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	tree := git("", "mktree")
	when := time.Unix(1700000000, 0)
	msg := message(record{V: 1, Kind: kindCheckpoint, Time: when.UTC(), Tool: "Write \"x\""})
	first, err := writeCommit(s.gitDir, tree, "", msg, when)
	if err != nil {
		t.Fatal(err)
	}
	if want := git(msg, "commit-tree", tree); first != want {
		t.Fatalf("in process %s, git commit-tree %s", first, want)
	}
	second, err := writeCommit(s.gitDir, tree, first, msg, when.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if got := git("", "rev-parse", second+"^"); got != first {
		t.Fatalf("parent %s", got)
	}

	const ref = "refs/weft/k/s"
	for _, step := range []struct {
		name      string
		id, old   string
		moved     bool
		before    func()
		wantAfter string
	}{
		{name: "create", id: first, old: "", wantAfter: first},
		{name: "create again", id: second, old: "", moved: true, wantAfter: first},
		{name: "wrong old", id: second, old: second, moved: true, wantAfter: first},
		{name: "locked", id: second, old: first, moved: true, wantAfter: first, before: func() {
			os.WriteFile(filepath.Join(s.gitDir, ref+".lock"), nil, 0o644)
		}},
		{name: "move", id: second, old: first, wantAfter: second, before: func() {
			os.Remove(filepath.Join(s.gitDir, ref+".lock"))
		}},
		{name: "packed", id: first, old: second, wantAfter: first, before: func() {
			git("", "pack-refs", "--all", "--prune")
			if _, err := os.Stat(filepath.Join(s.gitDir, ref)); err == nil {
				t.Fatal("pack-refs left the loose ref")
			}
		}},
	} {
		if step.before != nil {
			step.before()
		}
		err := casRef(s.gitDir, ref, step.id, step.old)
		if step.moved != errors.Is(err, errRefMoved) || (!step.moved && err != nil) {
			t.Fatalf("%s: %v", step.name, err)
		}
		if got := git("", "for-each-ref", "--format=%(objectname)", ref); got != step.wantAfter {
			t.Fatalf("%s: the ref is at %s, want %s", step.name, got, step.wantAfter)
		}
	}
	if out := git("", "fsck", "--strict", "--no-dangling"); out != "" {
		t.Fatalf("fsck: %s", out)
	}
}
