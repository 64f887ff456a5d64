package checkpoint

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A session's checkpoints are a chain of commits on its ref, oldest at
// the root. Three kinds of commit make it up, each carrying a record (JSON
// in its message):
//
//   - checkpoint: the workspace before a tool call that may change it.
//   - restore: the workspace before a restore (so the restore can be
//     undone); listed with the checkpoints.
//   - after: the workspace right after the call (or restore) that the
//     checkpoint (or restore) `of` came before. The difference between a
//     checkpoint and its afters is what the agent changed, and the only
//     files a restore touches; what changed between an after and the next
//     checkpoint was someone else's doing.
const (
	kindCheckpoint = "checkpoint"
	kindRestore    = "restore"
	kindAfter      = "after"
)

// record is what a commit's message holds.
type record struct {
	V          int          `json:"v"`
	Kind       string       `json:"kind"`
	Time       time.Time    `json:"time"`
	Session    string       `json:"session"`
	Workspace  string       `json:"workspace"`
	Turn       int          `json:"turn,omitempty"`
	Tool       string       `json:"tool,omitempty"`
	ToolCallID string       `json:"tool_call_id,omitempty"`
	Of         string       `json:"of,omitempty"`       // after: the commit it follows
	Restores   string       `json:"restores,omitempty"` // restore: the checkpoint restored
	First      bool         `json:"first,omitempty"`
	Files      []FileChange `json:"files,omitempty"`
	FilesTotal int          `json:"files_total,omitempty"`
}

// entry is one commit of a chain.
type entry struct {
	commit, tree string
	rec          record
}

// chain is a session's commits, oldest first, as of tip.
type chain struct {
	ref     string
	tip     string // "" when the ref does not exist yet
	entries []entry
}

// lastListed returns the index of the newest checkpoint or restore, -1
// when there is none.
func (c *chain) lastListed() int {
	for i := len(c.entries) - 1; i >= 0; i-- {
		if c.entries[i].rec.Kind != kindAfter {
			return i
		}
	}
	return -1
}

// FileChange is a file a checkpoint or a restore concerns.
type FileChange struct {
	Path string `json:"path"`
	// Status: "added", "modified" or "deleted": in a checkpoint, since the
	// one before it; in a Diff or Restored, what the restore does (or did)
	// to the file.
	Status string `json:"status"`
	// Conflict: someone changed the file since the agent last did; a
	// restore overwrites it only when forced.
	Conflict bool `json:"conflict,omitempty"`
}

// Checkpoint is one checkpoint of a session, as listed.
type Checkpoint struct {
	// ID names it: the first 12 hex digits of its commit in the store
	// (any unique prefix of 4 or more also does).
	ID   string    `json:"id"`
	Time time.Time `json:"time"`
	// Session is the session whose tool call it came before.
	Session string `json:"session"`
	// Turn is the agent's turn (model call) within its run; 0 for a
	// restore.
	Turn int `json:"turn"`
	// Tool and ToolCallID are the call it came before ("restore" and ""
	// for a restore). ToolCallID finds the point in the conversation: the
	// assistant message holding that tool_use.
	Tool       string `json:"tool"`
	ToolCallID string `json:"tool_call_id,omitempty"`
	// Restores is set on the checkpoint taken before a restore: the ID of
	// the checkpoint restored. Restoring this one undoes that restore.
	Restores string `json:"restores,omitempty"`
	// First marks the session's first checkpoint, which has no previous
	// one to list changes against.
	First bool `json:"first,omitempty"`
	// Files changed since the session's previous checkpoint (at most
	// maxFiles of them; FilesTotal counts all).
	Files      []FileChange `json:"files"`
	FilesTotal int          `json:"files_total"`
	// Reused is set by Snapshot when nothing changed since the turn's
	// checkpoint, which is returned instead of a new one.
	Reused bool `json:"-"`

	commit, tree string
}

// maxFiles bounds the files a record lists.
const maxFiles = 200

func (e entry) checkpoint() Checkpoint {
	r := e.rec
	files := r.Files
	if files == nil {
		files = []FileChange{}
	}
	return Checkpoint{ID: shortID(e.commit), Time: r.Time, Session: r.Session, Turn: r.Turn, Tool: r.Tool, ToolCallID: r.ToolCallID,
		Restores: r.Restores, First: r.First, Files: files, FilesTotal: r.FilesTotal, commit: e.commit, tree: e.tree}
}

func shortID(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}

// safeSession is what a session id may be, as is, in a ref name.
var safeSession = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$`)

// sessionRef is the ref of a session's chain. A session id that is not a
// plain name (it comes from a client) is hashed, so that no id can name
// another ref or escape the workspace's namespace.
func (w *Workspace) sessionRef(session string) string {
	if session == "" {
		session = DefaultSession
	}
	name := session
	if !safeSession.MatchString(session) {
		h := sha256.Sum256([]byte(session))
		name = "h." + hex.EncodeToString(h[:12]) // no plain name has a dot

	}
	return "refs/weft/" + w.key + "/" + name
}

// DefaultSession is the session of a checkpoint taken with none.
const DefaultSession = "default"

// load returns the chain on ref, from the cache when its tip has not
// moved. The call holds w.mu.
func (w *Workspace) load(ctx context.Context, ref string) (*chain, error) {
	g := w.git("")
	out, err := g.run(ctx, nil, "for-each-ref", "--format=%(objectname)", ref)
	if err != nil {
		return nil, err
	}
	tip := strings.TrimSpace(string(out))
	if c, ok := w.chains[ref]; ok && c.tip == tip {
		return c, nil
	}
	c := &chain{ref: ref, tip: tip}
	if tip != "" {
		out, err := g.run(ctx, nil, "log", "-z", "--format=%H%x1f%T%x1f%B", tip)
		if err != nil {
			return nil, err
		}
		for _, raw := range bytes.Split(out, []byte{0}) {
			f := bytes.SplitN(raw, []byte{0x1f}, 3)
			if len(f) != 3 {
				continue
			}
			var rec record
			if !parseMessage(f[2], &rec) {
				continue // not ours
			}
			c.entries = append(c.entries, entry{commit: string(f[0]), tree: string(f[1]), rec: rec})
		}
		slices.Reverse(c.entries)
	}
	w.chains[ref] = c
	return c, nil
}

// loadForWrite is load for a caller that is about to commit on the
// chain: the cached chain as it is, without asking git where the ref is.
// commit moves the ref only from the tip the cache has, so a chain another
// process moved makes it fail (errMoved, which also drops the cache), and
// the caller's retry loads it afresh: a git process fewer on every
// checkpoint, and no stale chain is ever written on. The call holds w.mu.
func (w *Workspace) loadForWrite(ctx context.Context, ref string) (*chain, error) {
	if c, ok := w.chains[ref]; ok {
		return c, nil
	}
	return w.load(ctx, ref)
}

const messageTitle = "weft checkpoint"

func message(r record) string {
	b, _ := json.Marshal(r)
	title := messageTitle + ": " + r.Kind
	if r.Tool != "" {
		title += " " + strconv.Quote(r.Tool)
	}
	return title + "\n\n" + string(b) + "\n"
}

func parseMessage(b []byte, r *record) bool {
	if !bytes.HasPrefix(b, []byte(messageTitle)) {
		return false
	}
	i := bytes.Index(b, []byte("\n\n"))
	if i < 0 {
		return false
	}
	return json.Unmarshal(bytes.TrimSpace(b[i+2:]), r) == nil && r.V == 1
}

// errMoved is commit's error when another process moved the ref first.
var errMoved = errors.New("checkpoint: the session's checkpoints moved")

// commit adds a commit of tree with rec to c and moves its ref there, if
// the ref is still where c says (compare-and-swap).
func (w *Workspace) commit(ctx context.Context, c *chain, tree string, rec record) (entry, error) {
	var commit string
	var err error
	if sha1ID(tree) && (c.tip == "" || sha1ID(c.tip)) {
		// In process (objects.go): two git processes fewer.
		if commit, err = writeCommit(w.s.gitDir, tree, c.tip, message(rec), rec.Time); err != nil {
			return entry{}, fmt.Errorf("writing the commit: %w", err)
		}
		err = casRef(w.s.gitDir, c.ref, commit, c.tip)
	} else {
		g := w.git("")
		args := []string{"commit-tree", tree}
		if c.tip != "" {
			args = append(args, "-p", c.tip)
		}
		out, cerr := g.run(ctx, strings.NewReader(message(rec)), args...)
		if cerr != nil {
			return entry{}, cerr
		}
		commit = strings.TrimSpace(string(out))
		if !isHex(commit) {
			return entry{}, fmt.Errorf("git commit-tree: unexpected output %q", firstLine(commit))
		}
		_, err = g.run(ctx, nil, "update-ref", "-m", "weft checkpoint", c.ref, commit, c.tip)
	}
	if err != nil {
		delete(w.chains, c.ref)
		return entry{}, fmt.Errorf("%w: %v", errMoved, err)
	}
	e := entry{commit: commit, tree: tree, rec: rec}
	c.entries = append(c.entries, e)
	c.tip = commit
	w.s.committed()
	return e, nil
}

// find returns the index in c of the checkpoint or restore whose commit
// id starts with id.
func (c *chain) find(id string) (int, bool, error) {
	if len(id) < 4 || !isHexPrefix(id) {
		return 0, false, nil
	}
	at := -1
	for i, e := range c.entries {
		if e.rec.Kind == kindAfter || !strings.HasPrefix(e.commit, id) {
			continue
		}
		if at >= 0 {
			return 0, false, fmt.Errorf("checkpoint: %q is ambiguous: give more of the id", id)
		}
		at = i
	}
	return at, at >= 0, nil
}

func isHexPrefix(s string) bool {
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
