package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/weft-run/weft/tool"
)

// Env is what a plan is validated against.
type Env struct {
	// Tool looks up the orchestratable tools; nil means none.
	Tool func(name string) (tool.Spec, bool)
	// Inputs holds the declared input names; nil means none are declared.
	Inputs map[string]bool
	// Files holds the granted file names for @file:<name>; nil means none.
	Files map[string]bool
	// MaxSteps bounds the plan's length: 0 means MaxSteps, negative means
	// no bound (runs may lift it; seed 001 bounds saved workflows to 64).
	MaxSteps int
}

// Problem is one reason a plan was rejected. Step is the step's position,
// or -1 for the plan as a whole; StepID is its id (own or default).
type Problem struct {
	Step   int    `json:"step"`
	StepID string `json:"stepId,omitempty"`
	Msg    string `json:"message"`
}

func (p Problem) String() string {
	if p.Step < 0 {
		return "plan: " + p.Msg
	}
	return fmt.Sprintf("step %d (%q): %s", p.Step, p.StepID, p.Msg)
}

// ValidationError lists every problem found in a plan, so that a person or
// a model can fix them all in one go.
type ValidationError struct {
	Problems []Problem `json:"problems"`
}

// Error has one line per problem, e.g.
// `step 2 ("fetch"): depends on unknown step "x"`.
func (e *ValidationError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// maxIDLen bounds step ids: they end up in event payloads and UI labels.
const maxIDLen = 128

// graph is a plan's dependency structure, resolved once.
type graph struct {
	ids  []string
	byID map[string]int
	deps [][]int // resolved, deduplicated, each pointing to an earlier step

	// mark and gen implement reaches without allocating per query.
	mark []uint32
	gen  uint32
}

// buildGraph resolves ids and dependsOn, reporting what is wrong through
// add. Invalid dependencies are left out of the graph.
func buildGraph(p Plan, add func(i int, msg string)) *graph {
	n := len(p.Steps)
	g := &graph{ids: make([]string, n), byID: make(map[string]int, n), deps: make([][]int, n)}
	for i, s := range p.Steps {
		id := p.ID(i)
		g.ids[i] = id
		if s.ID != "" {
			if msg := checkID(s.ID); msg != "" {
				add(i, msg)
			}
		}
		j, dup := g.byID[id]
		switch {
		case !dup:
			g.byID[id] = i
		case s.ID == "":
			add(i, fmt.Sprintf("has no id and its default id %q is the id of step %d; give it an id", id, j))
		case p.Steps[j].ID == "":
			add(i, fmt.Sprintf("id %q is the default id of step %d, which has none; choose another", id, j))
		default:
			add(i, fmt.Sprintf("duplicate id %q (step %d has it too)", id, j))
		}
	}
	for i, s := range p.Steps {
		for _, r := range s.DependsOn {
			j, ok := g.resolve(r)
			switch {
			case !ok:
				if pos, isPos := r.Position(); isPos {
					add(i, fmt.Sprintf("depends on step %d, but the plan has %d steps", pos, n))
				} else {
					add(i, fmt.Sprintf("depends on unknown step %q", string(r)))
				}
			case j == i:
				add(i, "depends on itself")
			case j > i:
				add(i, fmt.Sprintf("depends on step %d (%q), which comes later: a step can depend only on earlier steps", j, g.ids[j]))
			default:
				if !containsInt(g.deps[i], j) {
					g.deps[i] = append(g.deps[i], j)
				}
			}
		}
	}
	return g
}

func checkID(id string) string {
	if len(id) > maxIDLen {
		return fmt.Sprintf("id is longer than %d characters", maxIDLen)
	}
	if allDigits(id) {
		return fmt.Sprintf("id %q is a number; numbers are positions, so ids must contain a letter", id)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return fmt.Sprintf("id %q may hold only letters, digits, '_' and '-'", id)
		}
	}
	return ""
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func (g *graph) resolve(r Ref) (int, bool) {
	if n, ok := r.Position(); ok {
		return n, n < len(g.ids)
	}
	j, ok := g.byID[string(r)]
	return j, ok
}

// reaches reports whether j is a dependency of i, direct or transitive.
// Dependencies always point backwards, so the search prunes below j.
func (g *graph) reaches(i, j int) bool {
	if j >= i {
		return false
	}
	if g.mark == nil {
		g.mark = make([]uint32, len(g.ids))
	}
	g.gen++
	stack := []int{i}
	for len(stack) > 0 {
		k := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, d := range g.deps[k] {
			if d == j {
				return true
			}
			if d > j && g.mark[d] != g.gen {
				g.mark[d] = g.gen
				stack = append(stack, d)
			}
		}
	}
	return false
}

// Validate checks p against env before any tool runs. It returns nil or a
// *ValidationError listing every problem, each naming its step: too many
// steps, bad or duplicate ids, unknown tools, unknown, self or forward
// dependencies (a plan is ordered, so the dependency graph cannot have a
// cycle), placeholders that are malformed or refer to a step that is not a
// dependency (direct or transitive), {{last.result}} when the previous step
// is not a dependency, undeclared inputs, files not granted, args that are
// not a JSON object, and args that fail the tool's JSON Schema. A
// whole-value placeholder's type is unknown until run time: it counts as
// present for "required", and its own type checks are skipped.
func Validate(p Plan, env Env) error {
	var probs []Problem
	add := func(i int, msg string) {
		pr := Problem{Step: i, Msg: msg}
		if i >= 0 {
			pr.StepID = p.ID(i)
		}
		probs = append(probs, pr)
	}
	limit := env.MaxSteps
	if limit == 0 {
		limit = MaxSteps
	}
	if len(p.Steps) == 0 {
		add(-1, "has no steps")
	}
	if limit > 0 && len(p.Steps) > limit {
		add(-1, fmt.Sprintf("has %d steps, more than the limit of %d", len(p.Steps), limit))
	}
	g := buildGraph(p, add)
	for i, s := range p.Steps {
		var spec tool.Spec
		known := false
		switch {
		case s.Tool == "":
			add(i, "has no tool")
		case env.Tool != nil:
			if spec, known = env.Tool(s.Tool); !known {
				add(i, fmt.Sprintf("unknown tool %q", s.Tool))
			}
		default:
			add(i, fmt.Sprintf("unknown tool %q", s.Tool))
		}
		validateArgs(p, g, env, i, spec, known, add)
	}
	if len(probs) == 0 {
		return nil
	}
	// Read in plan order, whichever check found them.
	slices.SortStableFunc(probs, func(a, b Problem) int { return a.Step - b.Step })
	return &ValidationError{Problems: probs}
}

func validateArgs(p Plan, g *graph, env Env, i int, spec tool.Spec, known bool, add func(int, string)) {
	args := bytes.TrimSpace(p.Steps[i].Args)
	if len(args) == 0 || string(args) == "null" {
		args = nil
	} else if !json.Valid(args) {
		add(i, "args are not valid JSON")
		return
	} else if args[0] != '{' {
		add(i, "args must be a JSON object, got "+kindOf(args))
		return
	}
	w, err := probe(args)
	if err != nil {
		add(i, "args"+at(errPointer(err))+": "+errText(err))
		return
	}
	var wholes []string
	for _, ph := range w.refs {
		if ph.Whole {
			wholes = append(wholes, ph.Pointer)
		}
		where := "args" + at(ph.Pointer) + ": " + ph.Text
		switch ph.Kind {
		case KindStep:
			j, ok := g.resolve(Ref(ph.Target))
			switch {
			case !ok:
				add(i, fmt.Sprintf("%s refers to unknown step %q", where, ph.Target))
			case j == i:
				add(i, where+" refers to this step's own result")
			case j > i:
				add(i, fmt.Sprintf("%s refers to step %d (%q), which comes later: a step can use only the results of earlier steps it depends on", where, j, g.ids[j]))
			case !g.reaches(i, j):
				add(i, fmt.Sprintf("%s refers to step %d (%q), which is not among its dependencies: add it to dependsOn", where, j, g.ids[j]))
			}
		case KindLast:
			if i == 0 {
				add(i, where+": the first step has no previous step")
			} else if !g.reaches(i, i-1) {
				add(i, fmt.Sprintf("%s refers to the previous step %d (%q), which is not among its dependencies: add it to dependsOn", where, i-1, g.ids[i-1]))
			}
		case KindInput:
			if !env.Inputs[ph.Target] {
				add(i, fmt.Sprintf("%s: input %q is not declared", where, ph.Target))
			}
		case KindFile:
			if !env.Files[ph.Target] {
				add(i, fmt.Sprintf("%s: file %q is not granted", where, ph.Target))
			}
		}
	}
	if !known {
		return
	}
	probeArgs := json.RawMessage(w.out)
	if args == nil {
		probeArgs = json.RawMessage("{}")
	}
	err = tool.ValidateInput(spec, probeArgs)
	var ie *tool.InputError
	switch {
	case err == nil:
	case errors.As(err, &ie):
		for _, pr := range ie.Problems {
			if !underAny(pr.Path, wholes) {
				add(i, "args"+at(pr.Path)+": "+pr.Message)
			}
		}
	default:
		add(i, fmt.Sprintf("tool %q cannot be checked: %v", spec.Name, err))
	}
}

func at(pointer string) string {
	if pointer == "" {
		return ""
	}
	return " " + pointer
}

func errPointer(err error) string {
	var te *TemplateError
	if errors.As(err, &te) {
		return te.Pointer
	}
	return ""
}

func errText(err error) string {
	var te *TemplateError
	if errors.As(err, &te) {
		return te.Placeholder + ": " + te.Msg
	}
	return err.Error()
}

// underAny reports whether the JSON pointer path is one of roots or lies
// beneath one.
func underAny(path string, roots []string) bool {
	for _, r := range roots {
		if path == r || strings.HasPrefix(path, r+"/") {
			return true
		}
	}
	return false
}
