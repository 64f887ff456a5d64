package prompt

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/weft-run/weft/internal/frontmatter"
	"github.com/weft-run/weft/internal/realpath"
)

// Skill is a skill the Skill tool can load: a directory holding SKILL.md
// (Claude Code's format: YAML front matter with name and description,
// then the instructions) and whatever other files its instructions use.
type Skill struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Dir is the skill's directory, Path its SKILL.md.
	Dir  string `json:"dir"`
	Path string `json:"path"`
	// User marks the user's own skills (~/.weft/skills, ~/.claude/skills),
	// as against the project's.
	User bool `json:"user,omitempty"`
}

// Limits of skill files, which may come from any repository.
const (
	maxSkillFile        = 256 << 10
	maxSkillName        = 64
	maxSkillDescription = 1024
)

// skillSet finds the skills under the skill directories, re-parsing a
// SKILL.md only when its size or modification time changed.
type skillSet struct {
	workspace, home string
	log             *slog.Logger

	mu     sync.Mutex
	cache  map[string]parsedSkill // by SKILL.md path
	warned map[string]string
}

type parsedSkill struct {
	size    int64
	mtime   time.Time
	skill   Skill
	body    string
	problem string
}

func newSkillSet(workspace, home string, log *slog.Logger) *skillSet {
	return &skillSet{workspace: workspace, home: home, log: log, cache: map[string]parsedSkill{}, warned: map[string]string{}}
}

// skillRoot is a directory of skill directories.
type skillRoot struct {
	dir  string
	user bool
	// within, for the project's roots, is where a skill's files must
	// resolve to (see candidate.within).
	within string
}

// roots lists the skill directories, the one whose skills win a name
// clash first: the project's (nearest the workspace first, .weft before
// .claude), then the user's.
func (s *skillSet) roots() []skillRoot {
	var rs []skillRoot
	if s.workspace != "" {
		dirs, _ := projectDirs(s.workspace, s.home)
		top := dirs[0]
		if r, err := realpath.Resolve(top); err == nil {
			top = r
		}
		for i := len(dirs) - 1; i >= 0; i-- {
			rs = append(rs,
				skillRoot{dir: filepath.Join(dirs[i], ".weft", "skills"), within: top},
				skillRoot{dir: filepath.Join(dirs[i], ".claude", "skills"), within: top})
		}
	}
	if s.home != "" {
		rs = append(rs,
			skillRoot{dir: filepath.Join(s.home, ".weft", "skills"), user: true},
			skillRoot{dir: filepath.Join(s.home, ".claude", "skills"), user: true})
	}
	return rs
}

// list returns the usable skills, sorted by name (the prompt lists them
// in this order, so it must not depend on the directories' order).
func (s *skillSet) list() []Skill {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Skill
	seen := map[string]bool{}
	for _, r := range s.roots() {
		entries, err := os.ReadDir(r.dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".") {
				continue
			}
			dir := filepath.Join(r.dir, e.Name())
			if e.Type()&fs.ModeSymlink != 0 && r.within != "" {
				t, err := realpath.Resolve(dir)
				if err != nil || !realpath.Within(r.within, t) {
					s.warn(dir, fmt.Sprintf("it links outside the project (%s); a project's skills must be files of the project", r.within))
					continue
				}
			}
			ps, ok := s.parse(filepath.Join(dir, "SKILL.md"), dir, r)
			if !ok || seen[ps.skill.Name] {
				continue
			}
			seen[ps.skill.Name] = true
			out = append(out, ps.skill)
		}
	}
	slices.SortFunc(out, func(a, b Skill) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// get returns the skill called name and its instructions.
func (s *skillSet) get(name string) (Skill, string, bool) {
	for _, sk := range s.list() {
		if sk.Name == name {
			s.mu.Lock()
			body := s.cache[sk.Path].body
			s.mu.Unlock()
			return sk, body, true
		}
	}
	return Skill{}, "", false
}

// parse reads a SKILL.md, from the cache while it is unchanged. A bad file
// is logged once and left out; it never stops the others.
func (s *skillSet) parse(path, dir string, r skillRoot) (parsedSkill, bool) {
	fi, err := os.Stat(path)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			s.warn(path, err.Error())
		}
		delete(s.cache, path)
		return parsedSkill{}, false
	}
	if c, ok := s.cache[path]; ok && c.size == fi.Size() && c.mtime.Equal(fi.ModTime()) {
		return c, c.problem == ""
	}
	ps := parsedSkill{size: fi.Size(), mtime: fi.ModTime()}
	ps.skill, ps.body, err = readSkill(path, dir, r)
	if err != nil {
		ps.problem = err.Error()
		s.warn(path, ps.problem)
	} else {
		delete(s.warned, path)
	}
	s.cache[path] = ps
	return ps, ps.problem == ""
}

func readSkill(path, dir string, r skillRoot) (Skill, string, error) {
	if r.within != "" {
		if t, err := realpath.Resolve(path); err != nil || !realpath.Within(r.within, t) {
			return Skill{}, "", fmt.Errorf("SKILL.md links outside the project (%s)", r.within)
		}
	}
	text, cut, err := readCapped(path, maxSkillFile)
	if err != nil {
		return Skill{}, "", err
	}
	if cut {
		return Skill{}, "", fmt.Errorf("larger than %d KiB; a skill's instructions should be short, with details in files of their own", maxSkillFile>>10)
	}
	meta, body, err := frontmatter.Parse(text)
	if err != nil {
		return Skill{}, "", err
	}
	sk := Skill{Dir: dir, Path: path, User: r.user}
	sk.Name, err = frontmatter.String(meta, "name")
	if err != nil {
		return Skill{}, "", err
	}
	if sk.Name == "" {
		sk.Name = filepath.Base(dir)
	}
	if err := frontmatter.CheckName("skill", sk.Name, maxSkillName); err != nil {
		return Skill{}, "", err
	}
	if sk.Description, err = frontmatter.String(meta, "description"); err != nil {
		return Skill{}, "", err
	}
	if sk.Description = oneLine(sk.Description); sk.Description == "" {
		return Skill{}, "", errors.New(`the front matter has no "description": the model picks skills by their descriptions`)
	}
	if len(sk.Description) > maxSkillDescription {
		sk.Description = cutText(sk.Description, maxSkillDescription) + "..."
	}
	return sk, body, nil
}

// ParseFrontMatter splits a Markdown file with YAML front matter (a first
// line "---", the YAML, a line "---") into the YAML's mapping and the rest.
// Keys weft does not use (allowed-tools, license, metadata, ...) are in the
// map and ignored by its callers.
func ParseFrontMatter(text string) (map[string]any, string, error) {
	yamlText, body, err := frontmatter.Split(text)
	if err != nil {
		return nil, "", err
	}
	meta, err := frontmatter.Mapping(yamlText)
	if err != nil {
		return nil, "", err
	}
	return meta, body, nil
}

func (s *skillSet) warn(path, problem string) {
	if s.warned[path] == problem {
		return
	}
	s.warned[path] = problem
	if s.log != nil {
		s.log.Warn("skill not loaded", "path", path, "problem", problem)
	}
}
