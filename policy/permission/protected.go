package permission

import (
	"encoding/json"
	"maps"
	"path/filepath"
	"slices"

	"github.com/weft-run/weft/policy/shell"
)

// ProtectedPatterns are the files and directories, at any depth, whose
// change alters what weft or git will run: the one list of them. A write to
// one always asks (denied in plan mode), in every mode but bypass, even
// under an allow rule such as Edit(**) or Write(./**): an agent in auto
// mode must not be able to rewrite its own permissions (.weft/settings.json
// with "defaultMode": "bypass" and a hook of its own takes effect at the
// next start) or make git run code (core.fsmonitor, core.hooksPath, aliases
// in .git/config, scripts in .git/hooks, or a worktree's .git file pointed
// at a directory of the agent's making). Only an allow rule that names the
// file exactly (no wildcard), which a person writes on purpose, lets such a
// write run unasked.
//
// Patterns are doublestar globs over absolute, resolved paths; a pattern
// naming a directory covers everything below it.
var ProtectedPatterns = []string{
	// git: config, hooks, info, modules' configs; also the .git file of a
	// worktree or submodule (its gitdir: line says where config is read).
	"/**/.git",
	// weft's settings (every scope: ~/.weft and <workspace>/.weft), and
	// the hook scripts and plugins kept beside them.
	"/**/.weft/settings.json",
	"/**/.weft/settings.local.json",
	"/**/.weft/hooks",
	"/**/.weft/plugins",
	// Claude Code's, whose files users share with weft.
	"/**/.claude/settings.json",
	"/**/.claude/settings.local.json",
	"/**/.claude/hooks",
	"/**/.claude/plugins",
	// The user's git configuration is read by every git command.
	"/**/.gitconfig",
	"/**/.config/git",
}

// protectedWrite returns a path this call would write that is protected:
// for file tools the paths it names, for Bash the files its redirections
// and commands write. Both the path as typed and its resolved form are
// checked, so a link to .git/config is as protected as .git/config.
func (e *eval) protectedWrite() (string, bool) {
	extra := make([]string, 0, len(e.c.Protected))
	for _, p := range e.c.Protected {
		if a, ok := e.abs(p); ok && p != "" {
			extra = append(extra, escapeGlob(a))
			if real, ok := e.resolve(a); ok && real != a {
				extra = append(extra, escapeGlob(real))
			}
		}
	}
	var targets []string
	switch {
	case e.bash:
		for _, w := range e.an.Writes {
			if w.Kind == shell.Literal && !w.Unrooted {
				if p, ok := e.abs(w.Name); ok {
					targets = append(targets, p)
				}
				continue
			}
			// A glob or unknown target is protected when it might name a
			// protected file.
			might := e.bashPathPattern(w)
			for _, g := range append(slices.Clone(ProtectedPatterns), extra...) {
				if shell.DoublestarPattern(g).Below().Intersects(might) {
					return w.Name, true
				}
			}
		}
	case e.writeTool:
		targets = e.paths
	}
	for _, t := range targets {
		cands := []string{t}
		if real, ok := e.resolve(t); ok && real != t {
			cands = append(cands, real)
		}
		for _, c := range cands {
			if anyGlob(ProtectedPatterns, c) || anyGlob(extra, c) {
				return c, true
			}
		}
	}
	return "", false
}

// exactAllow finds an allow rule that names target (a protected path)
// exactly: an Edit or Write rule without wildcards whose path, as written
// or resolved, is target or the file target resolves to.
func (e *eval) exactAllow(rules []Rule, target string) (Rule, bool) {
	real, ok := e.resolve(target)
	if !ok {
		return Rule{}, false
	}
	for _, r := range rules {
		if r.kind != kindPath || r.head == "Read" || hasMeta(r.arg) {
			continue
		}
		pats, ok := e.patterns(r)
		if !ok {
			continue
		}
		for _, p := range pats {
			if lit := unescapeGlob(p); lit == target || lit == real {
				return r, true
			}
		}
	}
	return Rule{}, false
}

// ResolvedInput returns the input of a file tool's call with each path
// field (file_path, path, notebook_path) replaced by the absolute,
// resolved path the rules judged; ok is false when there is nothing to
// replace. The pipeline runs the tool with it, so the tool opens the file
// that was checked: a tool given a resolved path that no longer resolves
// to itself knows a symlink was swapped in after the check. Only weft's
// builtin file tools get it; other tools (MCP servers) resolve paths on
// their own side.
func ResolvedInput(c Call) (json.RawMessage, bool) {
	if !resolvesPaths(c.Tool) {
		return nil, false
	}
	return NewEvaluation(c).ResolvedInput()
}

func resolvesPaths(tool string) bool {
	switch tool {
	case "Read", "Write", "Edit", "Grep", "Glob":
		return true
	}
	return false
}

// ResolvedInput is ResolvedInput for the evaluation's call, from the
// paths the evaluation resolved: the ones its rules judged.
func (e *Evaluation) ResolvedInput() (json.RawMessage, bool) {
	if !resolvesPaths(e.c.Tool) {
		return nil, false
	}
	var fields map[string]json.RawMessage
	for _, f := range pathFields {
		s, ok := e.str(f)
		if !ok || s == "" {
			continue
		}
		p, ok := e.abs(s)
		if !ok {
			continue
		}
		real, ok := e.resolve(p)
		if !ok || real == s {
			continue
		}
		if fields == nil {
			// A copy: the evaluation's own fields stay the input judged.
			fields = maps.Clone(e.fields)
		}
		fields[f], _ = json.Marshal(filepath.FromSlash(real))
	}
	if fields == nil {
		return nil, false
	}
	out, err := json.Marshal(fields)
	if err != nil {
		return nil, false
	}
	return out, true
}
