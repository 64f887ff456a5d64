package memory

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// GitSyncOptions configure a GitSyncAdapter.
type GitSyncOptions struct {
	// Remote and Branch name what to sync with; "" means "origin" and
	// "main".
	Remote, Branch string
	// CommitAuthorName and CommitAuthorEmail sign memory commits; ""
	// means "weft" and "weft@localhost".
	CommitAuthorName, CommitAuthorEmail string
	// Git is the git binary; "" means "git" on PATH.
	Git string
}

// GitSyncAdapter syncs a memory directory as a git repository of its own
// (its .git inside the directory; file memory ignores it). It runs the git
// binary with GIT_DIR and GIT_WORK_TREE set, so an enclosing repository
// (a home directory kept in git) is never used, and with the user's and
// the system's git configuration ignored, so hooks, signing or aliases
// there cannot change what it does. ConflictPolicy maps to git as seed
// 000 says:
//
//	LocalWins   git push --force-with-lease
//	ServerWins  git fetch && git reset --hard <remote>/<branch>
//	Merge       git pull --no-rebase (three-way merge; conflicts are
//	            committed with their markers)
//	Fail        ErrSyncConflict when the two diverged
//
// When they did not diverge every policy simply fast-forwards one side.
type GitSyncAdapter struct {
	opt GitSyncOptions
}

// NewGitSyncAdapter returns the adapter for opt.
func NewGitSyncAdapter(opt GitSyncOptions) *GitSyncAdapter {
	if opt.Remote == "" {
		opt.Remote = "origin"
	}
	if opt.Branch == "" {
		opt.Branch = "main"
	}
	if opt.CommitAuthorName == "" {
		opt.CommitAuthorName = "weft"
	}
	if opt.CommitAuthorEmail == "" {
		opt.CommitAuthorEmail = "weft@localhost"
	}
	if opt.Git == "" {
		opt.Git = "git"
	}
	return &GitSyncAdapter{opt: opt}
}

// IsAvailable reports whether the git binary can be found.
func (g *GitSyncAdapter) IsAvailable() bool {
	_, err := exec.LookPath(g.opt.Git)
	return err == nil
}

// git runs git on dir's repository and returns its trimmed stdout.
func (g *GitSyncAdapter) git(ctx context.Context, dir string, args ...string) (string, error) {
	full := append([]string{
		"-c", "user.name=" + g.opt.CommitAuthorName, "-c", "user.email=" + g.opt.CommitAuthorEmail,
		"-c", "commit.gpgsign=false", "-c", "core.hooksPath=/dev/null", "-c", "merge.conflictstyle=merge",
		"-c", "init.defaultBranch=" + g.opt.Branch,
		// A remote URL comes from configuration; the transports that run
		// commands stay off whatever git's defaults become.
		"-c", "protocol.ext.allow=never",
	}, args...)
	cmd := exec.CommandContext(ctx, g.opt.Git, full...)
	cmd.Dir = dir
	env := []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "GIT_DIR="+filepath.Join(dir, ".git"), "GIT_WORK_TREE="+dir,
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_TERMINAL_PROMPT=0", "LC_ALL=C")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return strings.TrimSpace(out.String()), fmt.Errorf("git %s: %w: %s", args[0], err, strings.TrimSpace(errb.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// InitRepo makes localDir a repository syncing with remoteURL (once;
// again is harmless). When the remote already has the branch, local
// entries are kept and merged on the next Push.
func (g *GitSyncAdapter) InitRepo(ctx context.Context, localDir, remoteURL string) error {
	if strings.HasPrefix(remoteURL, "-") || remoteURL == "" {
		// git would read it as an option (--upload-pack=...).
		return fmt.Errorf("memory sync: remote %q is not a URL", remoteURL)
	}
	if err := os.MkdirAll(localDir, 0o700); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(localDir, ".git")); errors.Is(err, os.ErrNotExist) {
		if _, err := g.git(ctx, localDir, "init", "-q"); err != nil {
			return err
		}
		if _, err := g.git(ctx, localDir, "symbolic-ref", "HEAD", "refs/heads/"+g.opt.Branch); err != nil {
			return err
		}
	}
	// Temporary files of an interrupted write are never synced, nor is
	// the index: each side derives it from its entries, and two sides
	// that both added entries would otherwise always conflict on it. The
	// Dreamer's state and locks are this machine's own.
	if err := os.MkdirAll(filepath.Join(localDir, ".git", "info"), 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(localDir, ".git", "info", "exclude"), []byte(".tmp-*\n/"+IndexFile+"\n/.dream*\n"), 0o600); err != nil {
		return err
	}
	if _, err := g.git(ctx, localDir, "rm", "-q", "--cached", "--ignore-unmatch", "--", IndexFile); err != nil {
		return err
	}
	if _, err := g.git(ctx, localDir, "remote", "get-url", g.opt.Remote); err == nil {
		_, err = g.git(ctx, localDir, "remote", "set-url", g.opt.Remote, remoteURL)
		return err
	}
	_, err := g.git(ctx, localDir, "remote", "add", g.opt.Remote, remoteURL)
	return err
}

func (g *GitSyncAdapter) remoteRef() string {
	return "refs/remotes/" + g.opt.Remote + "/" + g.opt.Branch
}

// rev returns the commit ref names, "" when it does not exist.
func (g *GitSyncAdapter) rev(ctx context.Context, dir, ref string) string {
	out, err := g.git(ctx, dir, "rev-parse", "-q", "--verify", ref+"^{commit}")
	if err != nil {
		return ""
	}
	return out
}

func (g *GitSyncAdapter) fetch(ctx context.Context, dir string) error {
	_, err := g.git(ctx, dir, "fetch", "-q", g.opt.Remote, "+refs/heads/"+g.opt.Branch+":"+g.remoteRef())
	if err != nil && strings.Contains(err.Error(), "couldn't find remote ref") {
		return nil // an empty remote
	}
	return err
}

// changed counts the files that differ between two commits ("" is the
// empty tree).
func (g *GitSyncAdapter) changed(ctx context.Context, dir, from, to string) int {
	if from == to || to == "" {
		return 0
	}
	args := []string{"diff", "--name-only", from, to}
	if from == "" {
		args = []string{"ls-tree", "-r", "--name-only", to}
	}
	out, err := g.git(ctx, dir, args...)
	if err != nil || out == "" {
		return 0
	}
	return len(strings.Split(out, "\n"))
}

// commitLocal commits whatever changed in the directory.
func (g *GitSyncAdapter) commitLocal(ctx context.Context, dir string) error {
	if _, err := g.git(ctx, dir, "add", "-A", "."); err != nil {
		return err
	}
	status, err := g.git(ctx, dir, "status", "--porcelain")
	if err != nil || status == "" {
		return err
	}
	_, err = g.git(ctx, dir, "commit", "-q", "-m", "weft memory update")
	return err
}

// isAncestor reports whether a is an ancestor of b.
func (g *GitSyncAdapter) isAncestor(ctx context.Context, dir, a, b string) bool {
	_, err := g.git(ctx, dir, "merge-base", "--is-ancestor", a, b)
	return err == nil
}

// Pull fetches and fast-forwards the directory to the remote when the
// local copy has nothing the remote lacks. Local uncommitted changes are
// committed first, so a pull never loses them; a divergence is left for
// Push to settle by its policy.
func (g *GitSyncAdapter) Pull(ctx context.Context, dir string) (int, error) {
	if err := g.commitLocal(ctx, dir); err != nil {
		return 0, err
	}
	if err := g.fetch(ctx, dir); err != nil {
		return 0, err
	}
	local, remote := g.rev(ctx, dir, "HEAD"), g.rev(ctx, dir, g.remoteRef())
	switch {
	case remote == "" || local == remote:
		return 0, nil
	case local == "":
		if _, err := g.git(ctx, dir, "reset", "-q", "--hard", remote); err != nil {
			return 0, err
		}
		return g.changed(ctx, dir, "", remote), nil
	case g.isAncestor(ctx, dir, local, remote):
		if _, err := g.git(ctx, dir, "merge", "-q", "--ff-only", remote); err != nil {
			return 0, err
		}
		return g.changed(ctx, dir, local, remote), nil
	}
	return 0, nil
}

// Push commits local changes and publishes them; see the type's comment
// for what each policy does when both sides changed. A push the remote
// rejects because it moved in between is tried again (three times).
func (g *GitSyncAdapter) Push(ctx context.Context, dir string, policy ConflictPolicy) (int, error) {
	if err := g.commitLocal(ctx, dir); err != nil {
		return 0, err
	}
	var lastErr error
	for range 3 {
		n, retry, err := g.pushOnce(ctx, dir, policy)
		if !retry {
			return n, err
		}
		lastErr = err
	}
	return 0, lastErr
}

func (g *GitSyncAdapter) pushOnce(ctx context.Context, dir string, policy ConflictPolicy) (n int, retry bool, err error) {
	if err := g.fetch(ctx, dir); err != nil {
		return 0, false, err
	}
	local, remote := g.rev(ctx, dir, "HEAD"), g.rev(ctx, dir, g.remoteRef())
	if local == "" || local == remote {
		return 0, false, nil
	}
	push := func(args ...string) (int, bool, error) {
		n := g.changed(ctx, dir, remote, g.rev(ctx, dir, "HEAD"))
		if _, err := g.git(ctx, dir, append([]string{"push", "-q"}, args...)...); err != nil {
			return 0, true, err
		}
		return n, false, nil
	}
	lease := "--force-with-lease=refs/heads/" + g.opt.Branch + ":" + remote
	if remote == "" {
		lease = "--force-with-lease=refs/heads/" + g.opt.Branch + ":"
	}
	dst := "HEAD:refs/heads/" + g.opt.Branch
	switch {
	case remote == "" || g.isAncestor(ctx, dir, remote, local):
		// Only the local side moved: every policy pushes. The lease makes
		// the push fail (and retry) if the remote moved meanwhile.
		return push(lease, g.opt.Remote, dst)
	case g.isAncestor(ctx, dir, local, remote):
		// Only the remote moved (the local commit was already pushed).
		_, err := g.git(ctx, dir, "merge", "-q", "--ff-only", remote)
		return 0, false, err
	}
	// Diverged.
	switch policy {
	case ConflictLocalWins:
		return push(lease, g.opt.Remote, dst)
	case ConflictServerWins:
		_, err := g.git(ctx, dir, "reset", "-q", "--hard", remote)
		return 0, false, err
	case ConflictMerge:
		// What git pull --no-rebase does after the fetch above.
		// Unrelated histories: a machine that had memory of its own before
		// it first synced.
		if _, err := g.git(ctx, dir, "merge", "-q", "--no-edit", "--allow-unrelated-histories", remote); err != nil {
			unmerged, uerr := g.git(ctx, dir, "diff", "--name-only", "--diff-filter=U")
			if uerr != nil || unmerged == "" {
				return 0, false, err
			}
			// Conflicts: commit the files with their markers, so both
			// versions survive for whoever reads the memory next.
			if _, err := g.git(ctx, dir, "add", "-A", "."); err != nil {
				return 0, false, err
			}
			if _, err := g.git(ctx, dir, "commit", "-q", "--no-edit"); err != nil {
				return 0, false, err
			}
		}
		return push(lease, g.opt.Remote, dst)
	case ConflictFail:
		return 0, false, ErrSyncConflict
	}
	return 0, false, fmt.Errorf("memory sync: unknown conflict policy %d", policy)
}
