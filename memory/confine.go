package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/policy/audit"
	"github.com/weft-run/weft/policy/permission"
	"github.com/weft-run/weft/tool"
)

// ConfineStage names the policy stage that keeps a memory sub-agent (the
// extraction and consolidation agents) inside its memory directories.
const ConfineStage = "memory_confine"

// The tools a confined memory agent may have.
const (
	ToolRead   = "Read"
	ToolGlob   = "Glob"
	ToolWrite  = "Write"
	ToolEdit   = "Edit"
	ToolDelete = "Delete"
)

// Confinement is the tool set and the policy of a sub-agent that may read
// and write only memory: its Read, Glob, Write, Edit and Delete work on
// the given directories, and its policy refuses (and audits) any call
// naming a path outside them, whatever the model asks. The tools check
// the paths again themselves (Dir.Resolve, Dir.WriteFile), so the
// secret guard and the caps hold for what the agent writes, as for the
// memory tools.
type Confinement struct {
	// dirs in priority order: a relative path is taken in the first.
	dirs    []*Dir
	allowed []string
}

// NewConfinement confines an agent to dirs (nil ones are skipped); a
// relative path the model gives is taken in the first. allowed are the
// tool names it may have (nil: all five).
func NewConfinement(allowed []string, dirs ...*Dir) (*Confinement, error) {
	c := &Confinement{}
	for _, d := range dirs {
		if d != nil {
			c.dirs = append(c.dirs, d)
		}
	}
	if len(c.dirs) == 0 {
		return nil, errors.New("memory: a confinement needs a memory directory")
	}
	all := []string{ToolRead, ToolGlob, ToolWrite, ToolEdit, ToolDelete}
	if allowed == nil {
		allowed = all
	}
	for _, a := range allowed {
		if !slices.Contains(all, a) {
			return nil, fmt.Errorf("memory: a confined agent cannot have the tool %q (only %s)", a, strings.Join(all, ", "))
		}
	}
	c.allowed = slices.Clone(allowed)
	return c, nil
}

// Dirs returns the directories' paths, in priority order.
func (c *Confinement) Dirs() []string {
	out := make([]string, len(c.dirs))
	for i, d := range c.dirs {
		out[i] = d.Path()
	}
	return out
}

// resolve finds the directory p (absolute, or relative to the first
// directory) lies in and the path relative to it.
func (c *Confinement) resolve(p string) (*Dir, string, error) {
	if p != "" && !filepath.IsAbs(p) {
		p = filepath.Join(c.dirs[0].Path(), p)
	}
	var first error
	for _, d := range c.dirs {
		abs, err := d.Resolve(p)
		if err == nil {
			rel, _ := filepath.Rel(d.Path(), abs)
			return d, rel, nil
		}
		if first == nil {
			first = err
		}
	}
	return nil, "", first
}

// pathFields are the input fields a confined tool takes a path in; the
// stage checks every one present, whichever the tool.
var pathFields = []string{"file_path", "path", "notebook_path"}

// Check is the policy stage: a tool the agent was not given, or a path
// outside the memory directories in any call, is denied (the denial is
// audited like every other). It decides nothing else.
func (c *Confinement) Check(_ context.Context, st *policy.State) policy.Decision {
	deny := func(reason string) policy.Decision {
		return policy.Decision{Verdict: permission.Deny, Reason: reason, Stage: ConfineStage}
	}
	if !slices.Contains(c.allowed, st.Call.Tool) {
		return deny(fmt.Sprintf("this memory agent may only use %s", strings.Join(c.allowed, ", ")))
	}
	var in map[string]json.RawMessage
	if err := json.Unmarshal(st.Input, &in); err != nil {
		return deny("the input is not a JSON object")
	}
	for _, f := range pathFields {
		raw, ok := in[f]
		if !ok {
			continue
		}
		var p string
		if err := json.Unmarshal(raw, &p); err != nil {
			return deny(fmt.Sprintf("%s is not a string", f))
		}
		if _, _, err := c.resolve(p); err != nil {
			verb := "read"
			if !st.Call.Spec.ReadOnly {
				verb = "write"
			}
			return deny(fmt.Sprintf("memory agents can only %s inside the memory directory (%s): %v", verb, strings.Join(c.Dirs(), ", "), err))
		}
	}
	return policy.Decision{}
}

// Policy is the agent's policy: bypass mode (no person to ask in the
// background) with the confinement stage before every rule, so that what
// bypass would allow is first limited to the memory directories. Denials
// go to sink (nil: not audited) under session.
func (c *Confinement) Policy(sink audit.Sink, session string) (*policy.Policy, error) {
	pl, err := policy.DefaultPipeline().Insert(policy.StageDenyRules, ConfineStage, policy.StageFunc(c.Check))
	if err != nil {
		return nil, err
	}
	return &policy.Policy{Mode: permission.ModeBypass, Pipeline: pl, Audit: sink, SessionID: session, ActorID: "memory-agent"}, nil
}

type confReadInput struct {
	FilePath string `json:"file_path" jsonschema:"absolute path of a file in the memory directory"`
}

type confGlobInput struct {
	Pattern string `json:"pattern,omitempty" jsonschema:"shell pattern the file name must match, e.g. *.md (default: every file)"`
}

type confWriteInput struct {
	FilePath string `json:"file_path" jsonschema:"absolute path of the memory file to write (directly in the memory directory, ending in .md)"`
	Content  string `json:"content" jsonschema:"the whole file: front matter (name, description, type) and the memory"`
}

type confEditInput struct {
	FilePath   string `json:"file_path" jsonschema:"absolute path of the memory file to change"`
	OldString  string `json:"old_string" jsonschema:"the exact text to replace; it must occur once unless replace_all"`
	NewString  string `json:"new_string" jsonschema:"the text to put in its place"`
	ReplaceAll bool   `json:"replace_all,omitempty" jsonschema:"replace every occurrence"`
}

type confDeleteInput struct {
	FilePath string `json:"file_path" jsonschema:"absolute path of the memory file to delete"`
}

// Tools returns the allowed tools, working on the directories only.
func (c *Confinement) Tools() []tool.Tool {
	read := tool.Meta{ReadOnly: true, ConcurrencySafe: true, Effect: tool.EffectRead, Permission: tool.ClassReadOnly}
	write := tool.Meta{Effect: tool.EffectWrite, Permission: tool.ClassGeneric}
	all := map[string]tool.Tool{
		ToolRead: tool.Func(ToolRead, "Reads a file of the memory directory.", read,
			func(_ context.Context, in confReadInput, _ *tool.Call) (tool.Result, error) {
				d, rel, err := c.resolve(in.FilePath)
				if err != nil {
					return tool.Errorf("Read: %v", err), nil
				}
				b, err := d.ReadFile(rel)
				if err != nil {
					return tool.Errorf("Read: %v", err), nil
				}
				return tool.Text(string(b)), nil
			}),
		ToolGlob: tool.Func(ToolGlob, "Lists the files of the memory directories (absolute paths, sizes).", read,
			func(_ context.Context, in confGlobInput, _ *tool.Call) (tool.Result, error) {
				var b strings.Builder
				for _, d := range c.dirs {
					entries, _, err := d.List()
					if err != nil {
						return tool.Errorf("Glob: %v", err), nil
					}
					for _, e := range entries {
						name := e.Name + ".md"
						if in.Pattern != "" {
							if ok, _ := filepath.Match(in.Pattern, name); !ok {
								continue
							}
						}
						fmt.Fprintf(&b, "%s (%d bytes)\n", filepath.Join(d.Path(), name), e.Size)
					}
				}
				if b.Len() == 0 {
					return tool.Text("No memory files."), nil
				}
				return tool.Text(b.String()), nil
			}),
		ToolWrite: tool.Func(ToolWrite, "Writes a memory file (replacing it): a Markdown file directly in the memory directory. Never store secrets.", write,
			func(_ context.Context, in confWriteInput, _ *tool.Call) (tool.Result, error) {
				d, rel, err := c.resolve(in.FilePath)
				if err != nil {
					return tool.Errorf("Write: %v", err), nil
				}
				if err := d.WriteFile(rel, []byte(in.Content)); err != nil {
					return tool.Errorf("Write: %v", err), nil
				}
				return tool.Text("Wrote " + filepath.Join(d.Path(), rel)), nil
			}),
		ToolEdit: tool.Func(ToolEdit, "Replaces text in a memory file.", write,
			func(_ context.Context, in confEditInput, _ *tool.Call) (tool.Result, error) {
				d, rel, err := c.resolve(in.FilePath)
				if err != nil {
					return tool.Errorf("Edit: %v", err), nil
				}
				b, err := d.ReadFile(rel)
				if err != nil {
					return tool.Errorf("Edit: %v", err), nil
				}
				s := string(b)
				n := strings.Count(s, in.OldString)
				switch {
				case in.OldString == "":
					return tool.Errorf("Edit: old_string is empty"), nil
				case n == 0:
					return tool.Errorf("Edit: old_string does not occur in the file"), nil
				case n > 1 && !in.ReplaceAll:
					return tool.Errorf("Edit: old_string occurs %d times; give more context or set replace_all", n), nil
				}
				if in.ReplaceAll {
					s = strings.ReplaceAll(s, in.OldString, in.NewString)
				} else {
					s = strings.Replace(s, in.OldString, in.NewString, 1)
				}
				if err := d.WriteFile(rel, []byte(s)); err != nil {
					return tool.Errorf("Edit: %v", err), nil
				}
				return tool.Text("Edited " + filepath.Join(d.Path(), rel)), nil
			}),
		ToolDelete: tool.Func(ToolDelete, "Deletes a memory file (one that is wrong, out of date, or merged into another).",
			tool.Meta{Effect: tool.EffectWrite, Permission: tool.ClassGeneric, Destructive: true},
			func(_ context.Context, in confDeleteInput, _ *tool.Call) (tool.Result, error) {
				d, rel, err := c.resolve(in.FilePath)
				if err != nil {
					return tool.Errorf("Delete: %v", err), nil
				}
				if filepath.Dir(rel) != "." {
					return tool.Errorf("Delete: %v: memory entries live directly in %s", ErrName, d.Path()), nil
				}
				if err := d.Delete(rel); err != nil {
					return tool.Errorf("Delete: %v", err), nil
				}
				return tool.Text("Deleted " + filepath.Join(d.Path(), rel)), nil
			}),
	}
	out := make([]tool.Tool, 0, len(c.allowed))
	for _, a := range c.allowed {
		out = append(out, all[a])
	}
	return out
}
