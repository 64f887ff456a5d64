package builtin

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/weft-run/weft/internal/realpath"
	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/tool"
)

// wsConfine confines the file tools to the workspace and the extra
// directories. Paths are resolved on every call rather than once at
// construction, because the workspace may be created, moved or re-linked
// after the tools are built.
//
// Every tool must operate on the path resolve returns, never on the path the
// model sent: the check is only meaningful for the resolved path.
type wsConfine struct {
	workspace string
	extra     []string
}

func wsFrom(cfg Config) wsConfine {
	return wsConfine{workspace: cfg.Workspace, extra: append([]string(nil), cfg.ExtraDirs...)}
}

// wsOutsideError is returned for a path that resolves outside every root.
type wsOutsideError struct {
	Path      string // as the model gave it
	Resolved  string
	Workspace string
	Extra     []string
}

func (e *wsOutsideError) Error() string {
	shown := e.Path
	if e.Resolved != "" && e.Resolved != filepath.Clean(e.Path) {
		shown = fmt.Sprintf("%s (resolves to %s)", e.Path, e.Resolved)
	}
	msg := fmt.Sprintf("%s is outside the workspace (%s) and the allowed directories", shown, e.Workspace)
	if len(e.Extra) > 0 {
		msg += " (" + strings.Join(e.Extra, ", ") + ")"
	}
	return msg
}

// root returns the resolved workspace directory.
func (c wsConfine) root() (string, error) {
	ws := c.workspace
	if ws == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("cannot determine the working directory: %w", err)
		}
		ws = wd
	}
	abs, err := filepath.Abs(ws)
	if err != nil {
		return "", fmt.Errorf("workspace %s: %w", ws, err)
	}
	return wsEval(abs)
}

// roots returns the resolved workspace followed by the resolved extra
// directories; relative extra directories are relative to the workspace.
func (c wsConfine) roots() (ws string, extra []string, err error) {
	ws, err = c.root()
	if err != nil {
		return "", nil, err
	}
	for _, d := range c.extra {
		if d == "" {
			continue
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(ws, d)
		}
		r, err := wsEval(filepath.Clean(d))
		if err != nil {
			return "", nil, fmt.Errorf("allowed directory %s: %w", d, err)
		}
		extra = append(extra, r)
	}
	return ws, extra, nil
}

// dir returns the resolved workspace and checks that it is a directory.
func (c wsConfine) dir() (string, error) {
	ws, err := c.root()
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(ws)
	if err != nil {
		return "", fmt.Errorf("workspace %s: %w", ws, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("workspace %s is not a directory", ws)
	}
	return ws, nil
}

// resolve turns a model-supplied path (absolute, or relative to the
// workspace) into an absolute path free of symlinks and "..", and refuses
// it unless it lies inside the workspace or an allowed directory. The path
// need not exist: the deepest existing ancestor is resolved and the rest
// appended, so that a new file cannot be created through a symlink that
// points outside.
func (c wsConfine) resolve(p string) (string, error) {
	if strings.TrimSpace(p) == "" {
		return "", errors.New("the path is empty")
	}
	if strings.IndexByte(p, 0) >= 0 {
		return "", errors.New("the path contains a NUL byte")
	}
	ws, extra, err := c.roots()
	if err != nil {
		return "", err
	}
	abs := p
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(ws, abs)
	}
	abs = filepath.Clean(abs)
	real, err := wsEval(abs)
	if err != nil {
		return "", fmt.Errorf("cannot resolve %s: %w", p, err)
	}
	if wsWithin(ws, real) {
		return real, nil
	}
	for _, r := range extra {
		if wsWithin(r, real) {
			return real, nil
		}
	}
	return "", &wsOutsideError{Path: p, Resolved: real, Workspace: ws, Extra: extra}
}

// resolveChecked is resolve for a tool call. When the call went through
// the policy (policy.PathChecked), its path fields hold the resolved paths
// the rules judged (permission.ResolvedInput): such a path that resolves
// elsewhere now had a symlink swapped into it after the check, and is
// refused rather than followed. The tools then open the result with
// realpath.Open or realpath.WriteAtomic, which follow no symlink, so a
// link swapped in between this check and the open fails the call too.
func (c wsConfine) resolveChecked(ctx context.Context, p string) (string, error) {
	real, err := c.resolve(p)
	if err != nil {
		return "", err
	}
	if real != p && filepath.IsAbs(p) && filepath.Clean(p) == p && policy.PathChecked(ctx) {
		return "", fmt.Errorf("%s now resolves to %s: a symlink in it changed after the permission check, so it is not followed", p, real)
	}
	return real, nil
}

// wsWithin reports whether p is root or lies below it; both are clean,
// absolute and resolved.
func wsWithin(root, p string) bool { return realpath.Within(root, p) }

// wsEval resolves every symlink in the clean absolute path p (see
// realpath.Resolve: the permission rules resolve paths the same way, so
// what they judge is what the tools open).
func wsEval(p string) (string, error) { return realpath.Resolve(p) }

// wsSession returns the call's session; the framework always sets one,
// but a tool run directly (tests, SDK callers) may not have.
func wsSession(call *tool.Call) *tool.Session {
	if call.Session == nil {
		call.Session = tool.NewSession()
	}
	return call.Session
}

// wsStamp is what a session records of a file.
func wsStamp(fi fs.FileInfo) tool.FileStamp {
	return tool.FileStamp{ModTime: fi.ModTime(), Size: fi.Size()}
}

// wsSameStamp reports whether fi still looks as recorded.
func wsSameStamp(st tool.FileStamp, fi fs.FileInfo) bool {
	return st.Size == fi.Size() && st.ModTime.Equal(fi.ModTime())
}

// wsCheckSeen refuses to change an existing file the session has not read,
// or that changed on disk since it was read: overwriting unseen content is
// how agents lose work. verb is "writing to" or "editing".
func wsCheckSeen(sess *tool.Session, path string, fi fs.FileInfo, verb string) error {
	st, ok := sess.ReadStamp(path)
	if !ok {
		return fmt.Errorf("File has not been read yet. Read it first before %s it.", verb)
	}
	if !wsSameStamp(st, fi) {
		return fmt.Errorf("%s was modified since it was read; Read it again before %s it.", path, verb)
	}
	return nil
}
