package prompt

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/weft-run/weft/internal/realpath"
	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/tool"
)

// SkillToolName is the Skill tool's name, Claude Code's.
const SkillToolName = "Skill"

const skillDescription = `Loads a skill: instructions for a particular kind of task, with files that go with them. The skills available are listed in the system prompt under "Skills", each with a description.

- When a task matches a skill's description, call Skill with its name before you start, then follow the instructions it returns.
- The result lists the skill's other files. Read them with Read; when Read cannot reach them (a skill outside the workspace), call Skill again with "file" set to the file's path relative to the skill's directory.
- Do not call Skill for a skill that is not listed.`

var skillSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "skill": {"type": "string", "description": "The skill's name, as listed (e.g. \"pdf\")"},
    "args": {"type": "string", "description": "Optional arguments for the skill"},
    "file": {"type": "string", "description": "Optional: one of the skill's files to return instead of its instructions, relative to its directory"}
  },
  "required": ["skill"],
  "additionalProperties": false
}`)

// Limits of what the Skill tool returns.
const (
	maxSkillFiles     = 100
	maxSkillFileDepth = 4
	skillOutputCap    = 64000
)

type skillTool struct{ set *skillSet }

// SkillTool is the Skill tool over the builder's skills: it returns a
// skill's instructions and the list of its other files, so that a skill's
// body reaches the model only when the model decides to use it.
func (b *Builder) SkillTool() tool.Tool { return skillTool{b.skills} }

func (t skillTool) Spec() tool.Spec {
	return tool.Spec{
		Name: SkillToolName, Description: skillDescription, InputSchema: skillSchema,
		Meta: tool.Meta{ReadOnly: true, ConcurrencySafe: true, Effect: tool.EffectRead, Permission: tool.ClassReadOnly, OutputCap: skillOutputCap},
	}
}

type skillInput struct {
	Skill string `json:"skill"`
	Args  string `json:"args"`
	File  string `json:"file"`
}

func (t skillTool) Run(ctx context.Context, call *tool.Call) (tool.Result, error) {
	var in skillInput
	if err := json.Unmarshal(call.Input, &in); err != nil {
		return tool.Errorf("invalid input: %v", err), nil
	}
	name := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(in.Skill), "/"))
	sk, body, ok := t.set.get(name)
	if !ok {
		var names []string
		for _, s := range t.set.list() {
			names = append(names, s.Name)
		}
		if len(names) == 0 {
			return tool.Errorf("there is no skill %q: no skills are installed", name), nil
		}
		return tool.Errorf("there is no skill %q; the skills are: %s", name, strings.Join(names, ", ")), nil
	}
	if in.File != "" {
		return skillFile(ctx, sk, in.File), nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Skill %q loaded. Follow its instructions below.\nBase directory of this skill: %s\n\n", sk.Name, sk.Dir)
	b.WriteString(body)
	if args := strings.TrimSpace(in.Args); args != "" {
		b.WriteString("\n\nArguments: " + args)
	}
	files, more := skillFiles(sk.Dir)
	if len(files) > 0 {
		fmt.Fprintf(&b, "\n\nFiles of this skill (relative to %s):\n", sk.Dir)
		for _, f := range files {
			b.WriteString("- " + f + "\n")
		}
		if more {
			fmt.Fprintf(&b, "- ... (only the first %d are listed)\n", maxSkillFiles)
		}
		fmt.Fprintf(&b, "Read them with Read, or, when Read cannot reach them, with Skill {\"skill\": %q, \"file\": \"<path above>\"}.", sk.Name)
	}
	return tool.Result{Content: tool.Text(strings.TrimRight(b.String(), "\n")).Content,
		Data: map[string]any{"skill": sk.Name, "path": sk.Path}}, nil
}

// skillFiles lists the files under dir but SKILL.md, relative to it,
// skipping hidden entries and not following links.
func skillFiles(dir string) (files []string, more bool) {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if strings.Count(filepath.ToSlash(rel), "/")+1 >= maxSkillFileDepth {
				return filepath.SkipDir
			}
			return nil
		}
		if rel == "SKILL.md" {
			return nil
		}
		if len(files) == maxSkillFiles {
			more = true
			return filepath.SkipAll
		}
		files = append(files, filepath.ToSlash(rel))
		return nil
	})
	return files, more
}

// skillFile returns one file of a skill: a path inside its directory that
// resolves inside it too, readable under the caller's Read rules.
func skillFile(ctx context.Context, sk Skill, rel string) tool.Result {
	clean := filepath.Clean(filepath.FromSlash(rel))
	if filepath.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return tool.Errorf("file %q: give a path inside the skill's directory, relative to it", rel)
	}
	root, err := realpath.Resolve(sk.Dir)
	if err != nil {
		return tool.Errorf("skill %s: %v", sk.Name, err)
	}
	p, err := realpath.Resolve(filepath.Join(sk.Dir, clean))
	if err != nil || !realpath.Within(root, p) || p == root {
		return tool.Errorf("file %q is not a file inside the skill %s", rel, sk.Name)
	}
	if !policy.ReadFilter(ctx, p)(p) {
		return tool.Errorf("a Read permission rule denies reading %s", p)
	}
	text, cut, err := readCapped(p, maxSkillFile)
	if err != nil {
		return tool.Errorf("cannot read %s: %v", p, err)
	}
	if cut {
		text += fmt.Sprintf("\n[weft: cut here: %s is longer than %d KiB]", rel, maxSkillFile>>10)
	}
	return tool.Text(fmt.Sprintf("%s (skill %s):\n\n%s", filepath.ToSlash(clean), sk.Name, text))
}
