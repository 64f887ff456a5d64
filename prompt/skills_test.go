package prompt_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/prompt"
	"github.com/weft-run/weft/tool"
)

func TestParseFrontMatter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, text string
		wantMeta   map[string]any
		wantBody   string
		wantErr    string
	}{
		{"claude code's format", "---\nname: pdf\ndescription: Extract text from PDFs.\nallowed-tools: Read, Bash(python:*)\nlicense: MIT\n---\n# PDF\n\nUse pdftotext.\n",
			map[string]any{"name": "pdf", "description": "Extract text from PDFs.", "allowed-tools": "Read, Bash(python:*)", "license": "MIT"}, "# PDF\n\nUse pdftotext.", ""},
		{"CRLF and a BOM", "\uFEFF---\r\nname: x\r\n---\r\nbody\r\n", map[string]any{"name": "x"}, "body", ""},
		{"multi-line description", "---\ndescription: >\n  one\n  two\n---\n", map[string]any{"description": "one two\n"}, "", ""},
		{"empty front matter", "---\n---\nbody", map[string]any{}, "body", ""},
		{"no front matter", "# Just markdown\n", nil, "", "no front matter"},
		{"not closed", "---\nname: x\nbody without end\n", nil, "", "not closed"},
		{"bad YAML", "---\nname: [unclosed\n---\n", nil, "", "not a valid YAML mapping"},
		{"a list, not a mapping", "---\n- a\n- b\n---\n", nil, "", "not a valid YAML mapping"},
	}
	for _, tt := range tests {
		meta, body, err := prompt.ParseFrontMatter(tt.text)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: error %v, want %q", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		gotJSON, _ := json.Marshal(meta)
		wantJSON, _ := json.Marshal(tt.wantMeta)
		if string(gotJSON) != string(wantJSON) || body != tt.wantBody {
			t.Errorf("%s: got %s %q, want %s %q", tt.name, gotJSON, body, wantJSON, tt.wantBody)
		}
	}
}

func skillFile(name, description, body string) string {
	return "---\nname: " + name + "\ndescription: " + description + "\nallowed-tools: Bash\n---\n" + body + "\n"
}

// skillsLayout installs skills in a project and a home directory.
func skillsLayout(t *testing.T) layout {
	t.Helper()
	l := newLayout(t)
	write(t, filepath.Join(l.ws, ".weft", "skills", "release", "SKILL.md"), skillFile("release", "Cut a release: tag, changelog, publish.", "RELEASE-BODY: run make release."))
	write(t, filepath.Join(l.ws, ".weft", "skills", "release", "checklist.md"), "CHECKLIST")
	write(t, filepath.Join(l.ws, ".weft", "skills", "release", "scripts", "bump.sh"), "#!/bin/sh\n")
	write(t, filepath.Join(l.ws, ".weft", "skills", "release", ".hidden"), "x")
	write(t, filepath.Join(l.repo, ".claude", "skills", "pdf", "SKILL.md"), skillFile("pdf", "Work with PDF files.", "PDF-BODY"))
	write(t, filepath.Join(l.home, ".claude", "skills", "pdf", "SKILL.md"), skillFile("pdf", "The user's own pdf skill.", "USER-PDF-BODY"))
	write(t, filepath.Join(l.home, ".weft", "skills", "notes", "SKILL.md"), skillFile("notes", "Keep meeting notes.", "NOTES-BODY"))
	write(t, filepath.Join(l.home, ".weft", "skills", "notes", "template.md"), "TEMPLATE-TEXT")
	// Bad files: warned about, left out, never fatal.
	write(t, filepath.Join(l.home, ".weft", "skills", "broken", "SKILL.md"), "---\n- a list\n- not a mapping\n---\n")
	write(t, filepath.Join(l.home, ".weft", "skills", "nodesc", "SKILL.md"), "---\nname: nodesc\n---\nbody")
	write(t, filepath.Join(l.home, ".weft", "skills", "badname", "SKILL.md"), skillFile("no spaces please", "x", "y"))
	write(t, filepath.Join(l.home, ".weft", "skills", "plain", "SKILL.md"), "# no front matter")
	write(t, filepath.Join(l.home, ".weft", "skills", "unnamed", "SKILL.md"), "---\ndescription: Named after its directory.\n---\nUNNAMED-BODY")
	return l
}

var withSkillTool = []llm.ToolSpec{{Name: "Read"}, {Name: prompt.SkillToolName}}

func TestSkillsAreListedAndValidated(t *testing.T) {
	t.Parallel()
	l := skillsLayout(t)
	log, logs := newLog()
	b := prompt.New(prompt.Config{Workspace: l.ws, Home: l.home, Now: fixedNow, Logger: log})
	p := b.Build(context.Background(), prompt.Request{Model: "claude-sonnet-4-5", Tools: withSkillTool})
	var names []string
	for _, s := range p.Skills {
		names = append(names, s.Name)
	}
	if got := strings.Join(names, ","); got != "notes,pdf,release,unnamed" {
		t.Errorf("skills = %s, want notes,pdf,release,unnamed", got)
	}
	section := sectionOf(p.Text(), "# Skills")
	for _, want := range []string{"- pdf: Work with PDF files.", "- release: Cut a release: tag, changelog, publish.", "- unnamed: Named after its directory.", "call the Skill tool"} {
		if !strings.Contains(section, want) {
			t.Errorf("skills section lacks %q:\n%s", want, section)
		}
	}
	// The project's skill wins over the user's of the same name; bodies
	// are not in the prompt.
	for _, not := range []string{"The user's own pdf skill", "BODY"} {
		if strings.Contains(p.Text(), not) {
			t.Errorf("the prompt holds %q:\n%s", not, p.Text())
		}
	}
	for _, want := range []string{"broken/SKILL.md", "not a valid YAML mapping", "has no \\\"description\\\"", "is not valid", "no front matter"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("no warning %q:\n%s", want, logs.String())
		}
	}
	// Without the Skill tool, no skills are listed.
	p = b.Build(context.Background(), prompt.Request{Model: "claude-sonnet-4-5", Tools: []llm.ToolSpec{{Name: "Read"}}})
	if strings.Contains(p.Text(), "# Skills") || len(p.Skills) != 0 {
		t.Errorf("skills listed without the Skill tool:\n%s", p.Text())
	}
}

func runSkill(t *testing.T, b *prompt.Builder, input string) tool.Result {
	t.Helper()
	reg, err := tool.NewRegistry(b.SkillTool())
	if err != nil {
		t.Fatal(err)
	}
	return reg.Execute(context.Background(), &tool.Call{ID: "c1", Name: prompt.SkillToolName, Input: json.RawMessage(input)})
}

func TestSkillToolLoadsABody(t *testing.T) {
	t.Parallel()
	l := skillsLayout(t)
	b := prompt.New(prompt.Config{Workspace: l.ws, Home: l.home, Now: fixedNow, Logger: discard()})
	skillDir := filepath.Join(l.ws, ".weft", "skills", "release")
	tests := []struct {
		name, input string
		isError     bool
		want, not   []string
	}{
		{"a project skill", `{"skill": "release"}`, false,
			[]string{"RELEASE-BODY: run make release.", "Base directory of this skill: " + skillDir, "- checklist.md", "- scripts/bump.sh"},
			[]string{"SKILL.md", ".hidden", "allowed-tools"}},
		{"with arguments", `{"skill": "release", "args": "v1.2.0"}`, false, []string{"Arguments: v1.2.0"}, nil},
		{"a slash as Claude Code's users type it", `{"skill": "/notes"}`, false, []string{"NOTES-BODY", "- template.md", `"file": "<path above>"`}, nil},
		{"the project wins a name clash", `{"skill": "pdf"}`, false, []string{"PDF-BODY"}, []string{"USER-PDF-BODY"}},
		{"a file of a user skill", `{"skill": "notes", "file": "template.md"}`, false, []string{"TEMPLATE-TEXT"}, nil},
		{"unknown skill", `{"skill": "deploy"}`, true, []string{`there is no skill "deploy"`, "notes, pdf, release, unnamed"}, nil},
		{"a broken skill cannot be loaded", `{"skill": "broken"}`, true, []string{"there is no skill"}, nil},
		{"a file outside the skill", `{"skill": "notes", "file": "../../AGENTS.md"}`, true, []string{"inside the skill's directory"}, nil},
		{"an absolute path", `{"skill": "notes", "file": "/etc/passwd"}`, true, []string{"inside the skill's directory"}, nil},
		{"the skill's directory itself", `{"skill": "notes", "file": "."}`, true, []string{"not a file inside"}, nil},
		{"no skill named", `{}`, true, []string{"skill"}, nil},
		{"unknown field", `{"skill": "pdf", "mode": "x"}`, true, []string{"mode"}, nil},
	}
	for _, tt := range tests {
		res := runSkill(t, b, tt.input)
		text := res.TextOf()
		if res.IsError != tt.isError {
			t.Errorf("%s: IsError %v: %s", tt.name, res.IsError, text)
		}
		for _, w := range tt.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s: %q missing from:\n%s", tt.name, w, text)
			}
		}
		for _, n := range tt.not {
			if strings.Contains(text, n) {
				t.Errorf("%s: %q in:\n%s", tt.name, n, text)
			}
		}
	}
}

func TestSkillLinksOutOfTheProjectAreRefused(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("symlinks")
	}
	l := newLayout(t)
	outside := filepath.Join(l.home, "elsewhere", "evil")
	write(t, filepath.Join(outside, "SKILL.md"), skillFile("evil", "Looks helpful.", "EVIL-BODY"))
	if err := os.MkdirAll(filepath.Join(l.ws, ".claude", "skills"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(l.ws, ".claude", "skills", "evil")); err != nil {
		t.Fatal(err)
	}
	// A file of a good skill that links out of it.
	write(t, filepath.Join(l.ws, ".weft", "skills", "ok", "SKILL.md"), skillFile("ok", "Fine.", "OK-BODY"))
	write(t, filepath.Join(l.home, ".ssh", "id_ed25519"), "PRIVATE")
	if err := os.Symlink(filepath.Join(l.home, ".ssh", "id_ed25519"), filepath.Join(l.ws, ".weft", "skills", "ok", "key.md")); err != nil {
		t.Fatal(err)
	}
	log, logs := newLog()
	b := prompt.New(prompt.Config{Workspace: l.ws, Home: l.home, Now: fixedNow, Logger: log})
	p := b.Build(context.Background(), prompt.Request{Model: "claude-sonnet-4-5", Tools: withSkillTool})
	if len(p.Skills) != 1 || p.Skills[0].Name != "ok" {
		t.Errorf("skills = %+v, want only ok", p.Skills)
	}
	if !strings.Contains(logs.String(), "outside the project") {
		t.Errorf("no warning about the link:\n%s", logs.String())
	}
	if res := runSkill(t, b, `{"skill": "ok", "file": "key.md"}`); !res.IsError || strings.Contains(res.TextOf(), "PRIVATE") {
		t.Errorf("a linked file outside the skill was returned: %s", res.TextOf())
	}
}

func TestSkillEditsAreSeen(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	path := filepath.Join(l.ws, ".weft", "skills", "lint", "SKILL.md")
	write(t, path, skillFile("lint", "Run the linters.", "OLD-BODY"))
	b := prompt.New(prompt.Config{Workspace: l.ws, Home: l.home, Now: fixedNow, Logger: discard()})
	if res := runSkill(t, b, `{"skill": "lint"}`); !strings.Contains(res.TextOf(), "OLD-BODY") {
		t.Fatal(res.TextOf())
	}
	write(t, path, skillFile("lint", "Run the linters, then fix.", "NEW-BODY-LONGER"))
	if res := runSkill(t, b, `{"skill": "lint"}`); !strings.Contains(res.TextOf(), "NEW-BODY-LONGER") {
		t.Errorf("edited skill not re-read: %s", res.TextOf())
	}
	p := b.Build(context.Background(), prompt.Request{Model: "claude-sonnet-4-5", Tools: withSkillTool})
	if !strings.Contains(p.Text(), "- lint: Run the linters, then fix.") {
		t.Errorf("listing not updated:\n%s", p.Text())
	}
}
