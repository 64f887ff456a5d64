package builtin

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/weft-run/weft/internal/realpath"
	"github.com/weft-run/weft/policy/secret"
	"github.com/weft-run/weft/tool"
)

const writeDescription = `Writes a file in the workspace, replacing it if it exists. Parent directories are created as needed. file_path may be absolute or relative to the workspace.

- Overwriting an existing file requires that you Read it in this session first and that it has not changed since; otherwise the write is refused.
- Prefer Edit for changing part of an existing file: it sends only the changed text.
- content is written exactly as given; end text files with a newline.
- Content that looks like it contains secrets (API keys, tokens, passwords, private keys) is refused: have the code read them from the environment instead.`

var writeSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "file_path": {"type": "string", "description": "The path of the file to write, absolute or relative to the workspace"},
    "content": {"type": "string", "description": "The content to write to the file"}
  },
  "required": ["file_path", "content"],
  "additionalProperties": false
}`)

type writeTool struct {
	ws    wsConfine
	guard secret.Guard
}

// NewWrite returns the Write tool: creates or replaces a file atomically,
// refusing to overwrite content the session has not seen and content that
// looks like it holds secrets (cfg.Guard).
func NewWrite(cfg Config) tool.Tool { return &writeTool{ws: wsFrom(cfg), guard: guardFrom(cfg)} }

func (t *writeTool) Spec() tool.Spec {
	return tool.Spec{
		Name:        "Write",
		Description: writeDescription,
		InputSchema: writeSchema,
		Meta: tool.Meta{
			Effect:     tool.EffectWrite,
			Permission: tool.ClassFile,
			PathArg:    "file_path",
		},
	}
}

type writeInput struct {
	FilePath string `json:"file_path"`
	Content  string `json:"content"`
}

func (t *writeTool) Run(ctx context.Context, call *tool.Call) (tool.Result, error) {
	var in writeInput
	if err := json.Unmarshal(call.Input, &in); err != nil {
		return tool.Errorf("invalid input: %v", err), nil
	}
	path, err := t.ws.resolveChecked(ctx, in.FilePath)
	if err != nil {
		return tool.Errorf("%v", err), nil
	}
	if err := ctx.Err(); err != nil {
		return tool.Errorf("not written: %v", err), nil
	}
	if res, blocked := secretCheck(t.guard, t.ws, "Write", "the content", path, func(scan secretScan) (int, error) {
		ms, err := scan(in.Content)
		return len(ms), err
	}); blocked {
		return res, nil
	}
	sess := wsSession(call)
	perm := writeNewFileMode()
	fi, err := os.Stat(path)
	exists := err == nil
	switch {
	case exists && fi.IsDir():
		return tool.Errorf("%s is a directory; give the path of a file", path), nil
	case exists:
		if err := wsCheckSeen(sess, path, fi, "writing to"); err != nil {
			return tool.Errorf("%v", err), nil
		}
		perm = fi.Mode().Perm()
	case !errors.Is(err, fs.ErrNotExist):
		return tool.Errorf("cannot write %s: %v", path, err), nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o777); err != nil {
		return tool.Errorf("cannot create the directory for %s: %v", path, err), nil
	}
	nfi, err := writeAtomic(path, []byte(in.Content), perm)
	if err != nil {
		return tool.Errorf("cannot write %s: %v", path, err), nil
	}
	sess.MarkRead(path, wsStamp(nfi))
	lines := writeCountLines(in.Content)
	res := tool.Text(fmt.Sprintf("Wrote %s to %s", writeLines(lines), path))
	if exists {
		res = tool.Text(fmt.Sprintf("Updated %s (%s)", path, writeLines(lines)))
	}
	res.Data = map[string]any{"path": path, "created": !exists, "lines": lines}
	return res, nil
}

// guardFrom returns the configured secret guard; scanning is on unless
// turned off explicitly.
func guardFrom(cfg Config) secret.Guard {
	if cfg.Guard == nil {
		return secret.NewDefaultGuard()
	}
	return cfg.Guard
}

// secretScan scans text about to be written to the file being checked.
type secretScan func(text string) ([]secret.Match, error)

// secretCheck runs count with a scanner for path and, if it finds secrets
// (or the guard fails), returns the error result that blocks the write.
// The result names neither the rules nor the secrets: the count is all the
// model, the user and the audit trail get (seed 000), in Data
// "secret_detected" so the pipeline can audit it.
func secretCheck(g secret.Guard, ws wsConfine, toolName, what, path string, count func(secretScan) (int, error)) (tool.Result, bool) {
	rel := filepath.ToSlash(path)
	if root, err := ws.root(); err == nil {
		if r, err := filepath.Rel(root, path); err == nil && r != ".." && !strings.HasPrefix(r, ".."+string(filepath.Separator)) {
			rel = filepath.ToSlash(r)
		}
	}
	n, err := count(func(text string) ([]secret.Match, error) { return g.Scan(rel, text) })
	if err != nil {
		return tool.Errorf("%s blocked: the secret scan failed (%v); nothing was written", toolName, err), true
	}
	if n == 0 {
		return tool.Result{}, false
	}
	kind := "secrets (keys, tokens or passwords)"
	if n == 1 {
		kind = "secret (a key, token or password)"
	}
	res := tool.Errorf("%s blocked: %s looks like it contains %d %s. Keep secrets out of files: read them from the environment instead.", toolName, what, n, kind)
	res.Data = map[string]any{"secret_detected": n, "path": path}
	return res, true
}

func writeLines(n int) string {
	if n == 1 {
		return "1 line"
	}
	return fmt.Sprintf("%d lines", n)
}

func writeCountLines(s string) int {
	n := strings.Count(s, "\n")
	if s != "" && !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

// writeAtomic replaces path with data through a temporary file in the same
// directory and a rename (realpath.WriteAtomic: readers see the old or the
// new content, a failed write leaves the old file intact, and no symlink
// in the path is followed). It returns the new file's info for the
// session stamp.
func writeAtomic(path string, data []byte, perm fs.FileMode) (fs.FileInfo, error) {
	if err := realpath.WriteAtomic(path, data, perm); err != nil {
		return nil, err
	}
	return os.Lstat(path)
}

var writeUmask = sync.OnceValue(func() fs.FileMode {
	// Reading the umask through the umask syscall would set it, racing
	// with files other goroutines create meanwhile; /proc reports it
	// without side effects.
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0o022
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Umask:"); ok {
			if m, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32); err == nil {
				return fs.FileMode(m)
			}
		}
	}
	return 0o022
})

// writeNewFileMode is the mode a new file gets, as if created with 0666
// under the process umask (a temp file would otherwise leave it 0600).
func writeNewFileMode() fs.FileMode { return 0o666 &^ writeUmask() }
