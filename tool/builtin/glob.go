package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/weft-run/weft/internal/realpath"
	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/tool"
)

const (
	globMaxResults = 1000
	globBudget     = 30000 // bytes of output, under globOutputCap
	globOutputCap  = 32000
)

const globDescription = `Finds files by name pattern, e.g. "**/*.go", "src/**/*.{ts,tsx}" or "cmd/*/main.go". "**" matches any number of directories, "*" any part of one name.

- path is the directory to search (default: the workspace); the pattern is matched against paths relative to it.
- Returns absolute paths of matching files, most recently modified first, at most 1000.
- Skips files ignored by .gitignore (and .git/info/exclude), .git directories, and files the permission rules do not let you read; hidden files are included. A pattern or path naming an ignored directory (e.g. path "build") searches it.
- To search file contents use Grep.`

var globSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "pattern": {"type": "string", "minLength": 1, "description": "The glob pattern to match files against"},
    "path": {"type": "string", "description": "The directory to search in (default: the workspace), absolute or relative to the workspace"}
  },
  "required": ["pattern"],
  "additionalProperties": false
}`)

type globTool struct {
	ws wsConfine
}

// NewGlob returns the Glob tool: files matching a doublestar pattern,
// newest first.
func NewGlob(cfg Config) tool.Tool { return &globTool{ws: wsFrom(cfg)} }

func (t *globTool) Spec() tool.Spec {
	return tool.Spec{
		Name:        "Glob",
		Description: globDescription,
		InputSchema: globSchema,
		Meta: tool.Meta{
			ReadOnly:        true,
			ConcurrencySafe: true,
			Effect:          tool.EffectRead,
			Permission:      tool.ClassReadOnly,
			OutputCap:       globOutputCap,
		},
	}
}

type globInput struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path"`
}

type globHit struct {
	path  string
	mtime time.Time
}

func (t *globTool) Run(ctx context.Context, call *tool.Call) (tool.Result, error) {
	var in globInput
	if err := json.Unmarshal(call.Input, &in); err != nil {
		return tool.Errorf("invalid input: %v", err), nil
	}
	pattern := filepath.ToSlash(in.Pattern)
	if !doublestar.ValidatePattern(pattern) {
		return tool.Errorf("invalid glob pattern %q", in.Pattern), nil
	}
	base := in.Path
	if base == "" {
		base = "."
	} else if _, err := t.ws.resolveChecked(ctx, base); err != nil {
		// path is what the policy resolved and judged; the pattern's
		// literal part below is resolved here (and links in it followed).
		return tool.Errorf("%v", err), nil
	}
	// A literal leading part ("src/pkg/*.go", "/abs/dir/**", "../x/*")
	// moves the search root, which then goes through confinement.
	if prefix, rest := doublestar.SplitPattern(pattern); prefix != "." {
		if filepath.IsAbs(prefix) {
			base = prefix
		} else {
			base = filepath.Join(base, prefix)
		}
		pattern = rest
	}
	pattern = strings.TrimPrefix(pattern, "./")
	root, err := t.ws.resolve(base)
	if err != nil {
		return tool.Errorf("%v", err), nil
	}
	fi, err := os.Stat(root)
	if err != nil {
		return tool.Errorf("directory does not exist: %s", root), nil
	}
	if !fi.IsDir() {
		return tool.Errorf("%s is not a directory; path must be a directory to search in", root), nil
	}
	if pattern == "" {
		return tool.Errorf("the pattern %q names a directory, not files; add e.g. /* or /**/*", in.Pattern), nil
	}

	keep, err := t.keep(ctx, root)
	if err != nil {
		return tool.Errorf("%v", err), nil
	}
	hits, err := globWalk(ctx, root, pattern, keep)
	if err != nil {
		return tool.Errorf("search stopped: %v", err), nil
	}
	if len(hits) == 0 {
		return tool.Text("No files found"), nil
	}
	sort.Slice(hits, func(i, j int) bool {
		if !hits[i].mtime.Equal(hits[j].mtime) {
			return hits[i].mtime.After(hits[j].mtime)
		}
		return hits[i].path < hits[j].path
	})
	var b strings.Builder
	shown := 0
	for _, h := range hits {
		if shown == globMaxResults || b.Len()+len(h.path)+1 > globBudget {
			break
		}
		b.WriteString(h.path)
		b.WriteByte('\n')
		shown++
	}
	if shown < len(hits) {
		fmt.Fprintf(&b, "(Showing the %d most recently modified of %d matching files. Use a more specific pattern or path to see the rest.)\n", shown, len(hits))
	}
	res := tool.Text(strings.TrimSuffix(b.String(), "\n"))
	res.Data = map[string]any{"matches": len(hits)}
	return res, nil
}

// keep returns the test a found file must pass to be listed: the caller's
// Read rules allow showing it (policy.ReadFilter), and a symlink is listed
// only when its target passes too and lies inside the workspace or an
// allowed directory, so a link's name does not reveal a file the model
// may not see.
func (t *globTool) keep(ctx context.Context, root string) (func(p string, link bool) bool, error) {
	ws, extra, err := t.ws.roots()
	if err != nil {
		return nil, err
	}
	show := policy.ReadFilter(ctx, root)
	return func(p string, link bool) bool {
		if !show(p) {
			return false
		}
		if !link {
			return true
		}
		target, err := realpath.Resolve(p)
		if err != nil || !show(target) {
			return false
		}
		if wsWithin(ws, target) {
			return true
		}
		for _, r := range extra {
			if wsWithin(r, target) {
				return true
			}
		}
		return false
	}, nil
}

// globWalk returns the files under root whose slash-separated relative path
// matches pattern and that keep accepts (link: the entry is a symlink).
// Directories are pruned when the pattern's leading literal-depth segments
// rule them out. Symlinks to files are listed, symlinked directories are
// not entered.
func globWalk(ctx context.Context, root, pattern string, keep func(p string, link bool) bool) ([]globHit, error) {
	segs := strings.Split(pattern, "/")
	// Segments before the first "**" constrain directories depth by depth.
	// Braces may hold a "/", which defeats splitting, so they turn pruning
	// off.
	prune := !strings.Contains(pattern, "{")
	fixed := len(segs)
	for i, s := range segs {
		if strings.Contains(s, "**") {
			fixed = i
			break
		}
	}
	unbounded := fixed < len(segs)

	// The .gitignore rules in force in each directory walked so far.
	levels := map[string]*ignoreLevel{root: enterDir(root, ignoreEntries(root), parentIgnores(root))}
	var hits []globHit
	n := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		n++
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if err != nil {
			if d != nil && d.IsDir() && p != root {
				return fs.SkipDir
			}
			return nil
		}
		if p == root {
			return nil
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p[len(root):], string(filepath.Separator)))
		ign := levels[filepath.Dir(p)]
		if d.IsDir() {
			if d.Name() == ".git" || ign.ignored(p, true) {
				return fs.SkipDir
			}
			levels[p] = enterDir(p, ignoreEntries(p), ign)
			if prune {
				depth := strings.Count(rel, "/") + 1
				if !unbounded && depth >= len(segs) {
					return fs.SkipDir
				}
				parts := strings.Split(rel, "/")
				for i := 0; i < min(depth, fixed); i++ {
					if !doublestar.MatchUnvalidated(segs[i], parts[i]) {
						return fs.SkipDir
					}
				}
			}
			return nil
		}
		if !doublestar.MatchUnvalidated(pattern, rel) || ign.ignored(p, false) {
			return nil
		}
		info, err := os.Stat(p) // follows a symlink to its target
		if err != nil || info.IsDir() || !keep(p, d.Type()&fs.ModeSymlink != 0) {
			return nil
		}
		hits = append(hits, globHit{path: p, mtime: info.ModTime()})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return hits, nil
}
