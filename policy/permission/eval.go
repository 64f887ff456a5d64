package permission

import (
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/weft-run/weft/internal/realpath"
	"github.com/weft-run/weft/policy/shell"
	"github.com/weft-run/weft/tool"
)

// Call is what Evaluate needs to know about one tool call.
type Call struct {
	Tool  string
	Input json.RawMessage
	Meta  tool.Meta
	// Workspace is absolute; relative path globs and "inside the
	// workspace" are relative to it. "" means no path is inside.
	Workspace string
	// ExtraDirs (additionalDirectories) also count as inside; relative
	// ones are relative to Workspace.
	ExtraDirs []string
	// Home is the directory ~ stands for in rules and paths; "" means the
	// current user's (os.UserHomeDir).
	Home string
	// Protected are further files and directories whose change alters
	// what weft runs (a --settings file, the plugin directory, the audit
	// log), on top of ProtectedPatterns; absolute, or relative to
	// Workspace.
	Protected []string
}

// Evaluate decides a tool call. The order, first match wins:
//
//  1. a deny rule matches (for Bash: any command or write target) => deny
//  2. bypass mode => allow
//  3. the danger floor (Bash only): catastrophic => deny; dangerous =>
//     ask (deny in plan mode), whatever the allow rules say
//  4. an ask rule matches (any part) => ask
//  5. a Bash command that cannot be resolved statically => ask (deny in
//     plan mode)
//  6. a write to a protected path (weft's settings, hooks and plugins, a
//     .git directory: see ProtectedPatterns) => ask (deny in plan mode),
//     unless an allow rule names exactly that file
//  7. allow rules cover the call (for Bash: every command and every write
//     target) => allow
//  8. the mode's default (seed 004's matrix)
//
// Paths are resolved (symlinks, "..", /proc/self/root and the other magic
// links) before rules see them: a deny or ask rule matches the path as
// typed or as resolved, an allow rule and "inside the workspace" only the
// resolved path.
//
// Rules never depend on their order, so deny always wins.
//
// Each numbered step is a method of Evaluation (DenyRules, Bypass, Floor,
// AskRules, Unresolved, Protected, AllowRules, ModeDefault), so that the
// policy pipeline can run them as stages of their own over one analysis
// of the call; Evaluate is those steps in this order.
func Evaluate(rs RuleSet, mode Mode, c Call) Decision {
	e := NewEvaluation(c)
	for _, step := range [...]Step{(*Evaluation).DenyRules, (*Evaluation).Bypass, (*Evaluation).Floor,
		(*Evaluation).AskRules, (*Evaluation).Unresolved, (*Evaluation).Protected, (*Evaluation).AllowRules} {
		if d, ok := step(e, rs, mode); ok {
			return d
		}
	}
	d, _ := e.ModeDefault(rs, mode)
	return d
}

// Step is one step of Evaluate: it decides the call (ok) or leaves it to
// the next step. Every step has this shape, whether or not it reads the
// rules or the mode, so that a pipeline can hold them in one list.
type Step func(e *Evaluation, rs RuleSet, mode Mode) (d Decision, ok bool)

// Evaluation is what Evaluate derives from one call, once: its input's
// fields, the shell analysis of a command, the paths it touches and their
// resolved forms. Its methods are Evaluate's steps. It is not safe for
// concurrent use.
type Evaluation struct{ eval }

// NewEvaluation analyses c for the steps.
func NewEvaluation(c Call) *Evaluation {
	v := &Evaluation{}
	v.init(c)
	return v
}

// Shell returns the shell analysis of a Bash call's command (ok false
// for a call of another tool), for stages that judge what a command does
// (the workspace checkpoint: does it change files?).
func (e *Evaluation) Shell() (a shell.Analysis, ok bool) { return e.an, e.bash }

// oneLine keeps a reason on one line: paths and commands come from the
// model.
var oneLine = strings.NewReplacer("\n", `\n`, "\r", `\r`)

func decided(d Decision) (Decision, bool) {
	d.Reason = oneLine.Replace(d.Reason)
	return d, true
}

// DenyRules is step 1: a deny rule that matches any part of the call
// denies it.
func (e *Evaluation) DenyRules(rs RuleSet, _ Mode) (Decision, bool) {
	if r, what, ok := e.any(rs.Deny); ok {
		return decided(Decision{Verdict: Deny, Stage: StageDenyRule, Rule: r.String(),
			Reason: fmt.Sprintf("permission rule %s denies %s; do not retry it, find another way or ask the user", r, what)})
	}
	return Decision{}, false
}

// Bypass is step 2: bypass mode allows what no deny rule matched.
func (e *Evaluation) Bypass(_ RuleSet, mode Mode) (Decision, bool) {
	if mode == ModeBypass {
		return decided(Decision{Verdict: Allow, Stage: StageMode, Reason: "bypass mode: every call not denied by a rule runs"})
	}
	return Decision{}, false
}

// Floor is step 3, the danger floor of a shell command: catastrophic
// commands are denied, dangerous ones ask (are denied in plan mode).
func (e *Evaluation) Floor(_ RuleSet, mode Mode) (Decision, bool) {
	if !e.bash {
		return Decision{}, false
	}
	switch d := shell.Classify(e.an); d.Severity {
	case shell.Catastrophic:
		return decided(Decision{Verdict: Deny, Stage: StageFloor,
			Reason: "blocked: " + d.Reason + "; this is never allowed outside bypass mode"})
	case shell.Dangerous:
		if mode == ModePlan {
			return decided(Decision{Verdict: Deny, Stage: StageFloor,
				Reason: "plan mode: " + d.Reason + "; only read-only tools run while planning"})
		}
		return decided(Decision{Verdict: Ask, Stage: StageFloor,
			Reason: d.Reason + "; such commands always need approval"})
	}
	return Decision{}, false
}

// AskRules is step 4: an ask rule that matches any part of the call asks.
func (e *Evaluation) AskRules(rs RuleSet, _ Mode) (Decision, bool) {
	if r, what, ok := e.any(rs.Ask); ok {
		return decided(Decision{Verdict: Ask, Stage: StageAskRule, Rule: r.String(),
			Reason: fmt.Sprintf("permission rule %s asks for approval of %s", r, what)})
	}
	return Decision{}, false
}

// Unresolved is step 5: a shell command the analysis could not pin down
// asks (is denied in plan mode).
func (e *Evaluation) Unresolved(_ RuleSet, mode Mode) (Decision, bool) {
	if !e.bash || len(e.an.Problems) == 0 {
		return Decision{}, false
	}
	why := e.an.Problems[0]
	if mode == ModePlan {
		return decided(Decision{Verdict: Deny, Stage: StageUnresolved,
			Reason: "plan mode: cannot check this command statically (" + why + "); only commands that can be checked run while planning"})
	}
	return decided(Decision{Verdict: Ask, Stage: StageUnresolved,
		Reason: "cannot check this command statically (" + why + "), so it needs approval"})
}

// Protected is step 6: a write to a protected path asks (is denied in
// plan mode) unless an allow rule names exactly that file.
func (e *Evaluation) Protected(rs RuleSet, mode Mode) (Decision, bool) {
	target, ok := e.protectedWrite()
	if !ok {
		return Decision{}, false
	}
	if r, ok := e.exactAllow(rs.Allow, target); ok {
		return decided(Decision{Verdict: Allow, Stage: StageAllowRule, Rule: r.String(),
			Reason: "allowed by permission rule " + r.String() + ", which names this protected file exactly"})
	}
	if mode == ModePlan {
		return decided(Decision{Verdict: Deny, Stage: StageProtected,
			Reason: "plan mode: " + target + " changes what weft or git runs; only read-only tools run while planning"})
	}
	return decided(Decision{Verdict: Ask, Stage: StageProtected,
		Reason: "writing " + target + " changes what weft or git runs (settings, hooks, plugins, git config), so it always needs approval"})
}

// AllowRules is step 7: allow rules that cover the whole call (for a shell
// command: every command and every write target) allow it.
func (e *Evaluation) AllowRules(rs RuleSet, _ Mode) (Decision, bool) {
	rules, ok := e.all(rs.Allow)
	if !ok {
		return Decision{}, false
	}
	names := make([]string, len(rules))
	for i, r := range rules {
		names[i] = r.String()
	}
	return decided(Decision{Verdict: Allow, Stage: StageAllowRule, Rule: strings.Join(names, ", "),
		Reason: "allowed by permission rule " + strings.Join(names, ", ")})
}

// ModeDefault is step 8, the mode's default (seed 004's matrix); it
// always decides.
func (e *Evaluation) ModeDefault(_ RuleSet, mode Mode) (Decision, bool) {
	return decided(e.modeDefault(mode))
}

// eval holds what Evaluate derives from a call once.
type eval struct {
	c        Call
	home     string
	bash     bool
	webfetch bool
	an       shell.Analysis
	fields   map[string]json.RawMessage
	// readTool and writeTool place a non-Bash call in the family Read(...)
	// or Edit(...)/Write(...) rules apply to; paths are the paths it
	// touches, made absolute, and unknownPath is set when one could not
	// be resolved.
	readTool, writeTool bool
	paths               []string
	unknownPath         bool
	// real caches resolved paths (realpath.Resolve; "" when resolving
	// failed) and pats the absolute patterns of path rules, as written
	// and with their literal leading part resolved.
	real map[string]string
	pats map[Rule][]string
}

var (
	readTools  = []string{"Read", "Grep", "Glob", "LS", "NotebookRead"}
	writeTools = []string{"Write", "Edit", "MultiEdit", "NotebookEdit"}
	pathFields = []string{"file_path", "path", "notebook_path"}
)

func newEval(c Call) *eval {
	e := &eval{}
	e.init(c)
	return e
}

func (e *eval) init(c Call) {
	*e = eval{c: c, home: c.Home, real: map[string]string{}, pats: map[Rule][]string{}}
	if e.home == "" {
		e.home, _ = os.UserHomeDir()
	}
	if e.home != "" {
		e.home = filepath.ToSlash(filepath.Clean(e.home))
	}
	_ = json.Unmarshal(c.Input, &e.fields)
	e.bash = c.Tool == "Bash" || c.Meta.Permission == tool.ClassBash
	e.webfetch = c.Tool == "WebFetch" || c.Meta.Permission == tool.ClassWebFetch
	if e.bash {
		cmd, ok := e.str("command")
		if !ok {
			e.an = shell.Analysis{Problems: []string{"the call has no command string"}}
		} else {
			e.an = shell.Analyze(cmd)
		}
		return
	}
	hasPath := slices.ContainsFunc(pathFields, func(f string) bool { _, ok := e.fields[f]; return ok })
	e.writeTool = slices.Contains(writeTools, c.Tool) ||
		(!c.Meta.ReadOnly && (c.Meta.Permission == tool.ClassFile || (c.Meta.Effect == tool.EffectWrite && hasPath)))
	e.readTool = !e.writeTool && (slices.Contains(readTools, c.Tool) ||
		((c.Meta.ReadOnly || c.Meta.Effect == tool.EffectRead) && hasPath))
	if e.readTool || e.writeTool {
		e.collectPaths()
	}
}

func (e *eval) str(field string) (string, bool) {
	raw, ok := e.fields[field]
	if !ok {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// collectPaths resolves the paths a file tool names.
func (e *eval) collectPaths() {
	var rel []string
	for _, f := range pathFields {
		if _, present := e.fields[f]; !present {
			continue
		}
		s, ok := e.str(f)
		if !ok {
			e.unknownPath = true
			continue
		}
		if s == "" && e.readTool {
			s = "." // Grep and Glob search the workspace by default
		}
		rel = append(rel, s)
	}
	if len(rel) == 0 && (e.c.Tool == "Grep" || e.c.Tool == "Glob") {
		rel = append(rel, ".")
	}
	// An absolute Glob pattern (or one climbing out with ..) reaches
	// beyond its search directory: its fixed leading part is a path too.
	if pat, ok := e.str("pattern"); ok && e.c.Tool == "Glob" {
		dir := pat
		if i := strings.IndexAny(dir, "*?[{"); i >= 0 {
			dir = path.Dir(dir[:i] + "x")
		}
		if strings.HasPrefix(dir, "/") || strings.HasPrefix(dir, "~") || strings.Contains(dir, "..") {
			searchDir := "."
			if len(rel) > 0 {
				searchDir = rel[0]
			}
			if !strings.HasPrefix(dir, "/") && !strings.HasPrefix(dir, "~") {
				dir = path.Join(searchDir, dir)
			}
			rel = append(rel, dir)
		}
	}
	if len(rel) == 0 {
		e.unknownPath = true
	}
	for _, s := range rel {
		p, ok := e.abs(s)
		if !ok {
			e.unknownPath = true
			continue
		}
		e.paths = append(e.paths, p)
	}
}

// abs makes a path absolute: ~ is the home directory, relative paths are
// relative to the workspace. It fails when the base is unknown.
func (e *eval) abs(p string) (string, bool) {
	p = filepath.ToSlash(p)
	switch {
	case p == "~" || strings.HasPrefix(p, "~/"):
		if e.home == "" {
			return "", false
		}
		return path.Clean(e.home + p[1:]), true
	case strings.HasPrefix(p, "~"):
		return "", false // ~user: not resolvable here
	case strings.HasPrefix(p, "/"):
		return path.Clean(p), true
	case e.c.Workspace == "":
		return "", false
	}
	return path.Clean(filepath.ToSlash(e.c.Workspace) + "/" + p), true
}

// match says whether a rule applies to a call: yes, no, or cannot tell.
type match int

const (
	no match = iota
	yes
	unknown
)

// toolLevel reports whether r applies to the call as a whole.
func (e *eval) toolLevel(r Rule) bool {
	name := e.c.Tool
	switch r.kind {
	case kindName:
		switch r.arg {
		case "Bash":
			return e.bash
		case "WebFetch":
			return e.webfetch
		case "Read":
			return e.readTool
		case "Edit", "Write":
			return e.writeTool
		}
		return name == r.arg
	case kindNameGlob:
		ok, _ := path.Match(r.arg, name)
		return ok
	case kindMcpServer:
		return name == r.arg || strings.HasPrefix(name, r.arg+"__")
	case kindMcp:
		rest, isMcp := strings.CutPrefix(name, "mcp__")
		ok, _ := path.Match(r.arg, rest)
		return isMcp && ok
	case kindEffect:
		return string(e.c.Meta.Effect) == r.arg || (r.arg == "read" && e.c.Meta.ReadOnly)
	}
	return false
}

// writeRule reports whether r is about files written: Edit/Write with or
// without a glob.
func writeRule(r Rule) bool {
	return (r.kind == kindPath || r.kind == kindName) && (r.head == "Edit" || r.head == "Write" || (r.head == "" && (r.arg == "Edit" || r.arg == "Write")))
}

// pathMatch matches a path rule against a call's paths: yes when every
// path matches (all) or any does (!all); unknown when a path could not
// be resolved and the answer depends on it.
//
// With all (allow rules) a path counts only when its resolved form
// matches; without (deny and ask rules) when the path as typed or as
// resolved does, so neither a link nor a magic /proc path can dodge a
// deny rule, and a link cannot borrow an allow rule.
func (e *eval) pathMatch(r Rule, paths []string, unknownPath, all bool) match {
	pats, ok := e.patterns(r)
	if !ok {
		return unknown
	}
	hits := 0
	for _, p := range paths {
		real, resolved := e.resolve(p)
		if !resolved {
			unknownPath = true
		}
		switch {
		case all && resolved && anyGlob(pats, real):
			hits++
		case !all && (anyGlob(pats, p) || (resolved && anyGlob(pats, real))):
			hits++
		}
	}
	switch {
	case all && hits == len(paths) && len(paths) > 0 && !unknownPath:
		return yes
	case !all && hits > 0:
		return yes
	case unknownPath:
		return unknown
	}
	return no
}

// resolve returns the real path of the absolute path p (see
// realpath.Resolve); ok is false for a symlink loop or an unreadable link.
func (e *eval) resolve(p string) (string, bool) {
	if r, ok := e.real[p]; ok {
		return r, r != ""
	}
	r, err := realpath.Resolve(p)
	if err != nil {
		r = ""
	}
	e.real[p] = r
	return r, r != ""
}

// patterns returns r's absolute pattern and, when its literal leading
// part (the whole pattern if it has no wildcard) is reached through a
// symlink, the same pattern with that part resolved: Read(./secrets/**)
// must also cover the real files when ./secrets or the workspace is a
// link, since resolved paths are compared with it.
func (e *eval) patterns(r Rule) ([]string, bool) {
	if ps, ok := e.pats[r]; ok {
		return ps, ps != nil
	}
	pat, ok := e.pattern(r)
	if !ok {
		e.pats[r] = nil
		return nil, false
	}
	ps := []string{pat}
	base, rest := pat, ""
	if hasMeta(pat) {
		base, rest = doublestar.SplitPattern(pat)
	}
	if lit := unescapeGlob(base); strings.HasPrefix(lit, "/") {
		if real, ok := e.resolve(lit); ok && real != lit {
			alt := escapeGlob(real)
			if rest != "" {
				alt = strings.TrimSuffix(alt, "/") + "/" + rest
			}
			ps = append(ps, alt)
		}
	}
	e.pats[r] = ps
	return ps, true
}

func anyGlob(pats []string, p string) bool {
	for _, pat := range pats {
		if globMatch(pat, p) {
			return true
		}
	}
	return false
}

// hasMeta reports an unescaped doublestar wildcard in pat.
func hasMeta(pat string) bool {
	for i := 0; i < len(pat); i++ {
		switch pat[i] {
		case '\\':
			i++
		case '*', '?', '[', '{':
			return true
		}
	}
	return false
}

// unescapeGlob undoes escapeGlob.
func unescapeGlob(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// pattern turns a rule's path glob into an absolute doublestar pattern:
// //abs and /abs are absolute, ~/x is in the home directory, ./x and x
// with a slash are relative to the workspace, and a bare name (no slash)
// matches at any depth below it, as in .gitignore.
func (e *eval) pattern(r Rule) (string, bool) {
	g := r.arg
	var p string
	switch {
	case strings.HasPrefix(g, "//"):
		p = g[1:]
	case strings.HasPrefix(g, "/"):
		p = g
	case g == "~" || strings.HasPrefix(g, "~/"):
		if e.home == "" {
			return "", false
		}
		p = escapeGlob(e.home) + g[1:]
	case e.c.Workspace == "":
		return "", false
	case strings.HasPrefix(g, "./"):
		p = escapeGlob(filepath.ToSlash(e.c.Workspace)) + "/" + g[2:]
	case strings.Contains(strings.TrimSuffix(g, "/"), "/"):
		p = escapeGlob(filepath.ToSlash(e.c.Workspace)) + "/" + g
	default:
		p = escapeGlob(filepath.ToSlash(e.c.Workspace)) + "/**/" + g
	}
	return path.Clean(p), true
}

func escapeGlob(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]{}\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// globMatch matches p or any directory above it: a rule naming a directory
// covers what is inside, as in .gitignore.
func globMatch(pattern, p string) bool {
	for {
		if ok, _ := doublestar.Match(pattern, p); ok {
			return true
		}
		parent := path.Dir(p)
		if parent == p {
			return false
		}
		p = parent
	}
}

// domainMatch matches WebFetch(domain:d) against the call's url.
func (e *eval) domainMatch(r Rule) match {
	s, ok := e.str("url")
	if !ok {
		return unknown
	}
	if !strings.Contains(s, "://") {
		s = "https://" + s
	}
	u, err := url.Parse(s)
	if err != nil {
		return unknown
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host == "" {
		return unknown
	}
	if host == r.arg || strings.HasSuffix(host, "."+r.arg) {
		return yes
	}
	return no
}

// commandMatch matches Command(spec)/Bash(spec) against one command.
// loose also tries the command name without its directory (/bin/rm as
// rm), which deny and ask rules use so a path cannot dodge them.
func commandMatch(r Rule, c shell.Command, loose bool) bool {
	texts := []string{c.Text}
	if loose && len(c.Args) > 0 && strings.Contains(c.Args[0], "/") {
		texts = append(texts, strings.Join(append([]string{path.Base(c.Args[0])}, c.Args[1:]...), " "))
	}
	for _, t := range texts {
		if specMatch(r.arg, r.prefix, t) {
			return true
		}
	}
	return false
}

// specMatch: exact word-for-word; with prefix, the spec followed by
// nothing or by a space; * matches any run of characters. A trailing " *"
// also matches nothing, as in Claude Code: "ls *" matches "ls".
func specMatch(spec string, prefix bool, text string) bool {
	if prefix {
		return wildcard(spec, text) || wildcard(spec+" *", text)
	}
	if wildcard(spec, text) {
		return true
	}
	if s, ok := strings.CutSuffix(spec, " *"); ok {
		return wildcard(s, text)
	}
	return false
}

// wildcard matches text against a pattern where * matches any run of
// characters (including none and including spaces); nothing else is
// special.
func wildcard(pattern, text string) bool {
	p, t := 0, 0
	star, mark := -1, 0
	for t < len(text) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, t
			p++
		case p < len(pattern) && pattern[p] == text[t]:
			p++
			t++
		case star >= 0:
			p = star + 1
			mark++
			t = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// any finds a rule that matches any part of the call (deny and ask
// rules); a rule that cannot tell counts as matching, failing closed.
// It returns the rule and what it matched, for the reason.
func (e *eval) any(rules []Rule) (Rule, string, bool) {
	for _, r := range rules {
		if what, ok := e.anyOne(r); ok {
			return r, what, true
		}
	}
	return Rule{}, "", false
}

func (e *eval) anyOne(r Rule) (string, bool) {
	if e.bash {
		return e.bashAny(r)
	}
	if e.toolLevel(r) {
		return "this " + e.c.Tool + " call", true
	}
	switch r.kind {
	case kindPath:
		if (r.head == "Read" && e.readTool) || (r.head != "Read" && e.writeTool) {
			if e.pathMatch(r, e.paths, e.unknownPath, false) != no {
				return e.describePaths(), true
			}
		}
	case kindDomain:
		if e.webfetch && e.domainMatch(r) != no {
			s, _ := e.str("url")
			return "fetching " + s, true
		}
	}
	return "", false
}

func (e *eval) describePaths() string {
	if len(e.paths) == 0 {
		return e.c.Tool + " on a path that could not be resolved"
	}
	return e.c.Tool + " on " + strings.Join(e.paths, ", ")
}

// all reports whether allow rules cover the whole call: a rule about the
// tool, or for Bash one rule for each command and each write target. A
// rule that cannot tell does not allow.
func (e *eval) all(rules []Rule) ([]Rule, bool) {
	for _, r := range rules {
		if e.toolLevel(r) && !(e.bash && writeRule(r)) {
			return []Rule{r}, true
		}
	}
	if !e.bash {
		for _, r := range rules {
			switch r.kind {
			case kindPath:
				if (r.head == "Read" && e.readTool) || (r.head != "Read" && e.writeTool) {
					if e.pathMatch(r, e.paths, e.unknownPath, true) == yes {
						return []Rule{r}, true
					}
				}
			case kindDomain:
				if e.webfetch && e.domainMatch(r) == yes {
					return []Rule{r}, true
				}
			}
		}
		return nil, false
	}
	return e.bashAll(rules)
}

// modeDefault is seed 004's matrix.
func (e *eval) modeDefault(mode Mode) Decision {
	name := e.c.Tool
	if e.c.Meta.ReadOnly && !e.bash {
		return Decision{Verdict: Allow, Stage: StageMode, Reason: name + " is read-only and runs in every mode"}
	}
	switch mode {
	case ModePlan:
		return Decision{Verdict: Deny, Stage: StageMode,
			Reason: fmt.Sprintf("plan mode: %s would change something; only read-only tools run while planning", name)}
	case ModeAuto:
		if !e.bash && (e.c.Meta.Permission == tool.ClassFile || e.c.Meta.Effect == tool.EffectWrite) {
			if outside, ok := e.outside(); ok && len(outside) == 0 {
				return Decision{Verdict: Allow, Stage: StageMode, Reason: "auto mode: file edits inside the workspace run unasked"}
			} else if len(outside) > 0 {
				return Decision{Verdict: Ask, Stage: StageMode,
					Reason: fmt.Sprintf("auto mode: %s is outside the workspace and the allowed directories, so %s needs approval", strings.Join(outside, ", "), name)}
			}
			return Decision{Verdict: Ask, Stage: StageMode,
				Reason: fmt.Sprintf("auto mode: cannot tell which file %s changes, so it needs approval", name)}
		}
		return Decision{Verdict: Ask, Stage: StageMode,
			Reason: fmt.Sprintf("auto mode runs only file edits in the workspace unasked; %s needs approval", name)}
	}
	return Decision{Verdict: Ask, Stage: StageMode, Reason: fmt.Sprintf("%s needs approval in default mode", name)}
}

// outside returns the call's target paths that are outside the workspace
// and the extra directories; ok is false when there are none to judge or
// one could not be resolved. Targets and roots are compared resolved: a
// link inside the workspace that points out is outside.
func (e *eval) outside() ([]string, bool) {
	var targets []string
	var unresolved bool
	for _, f := range pathFields {
		if _, present := e.fields[f]; !present {
			continue
		}
		s, ok := e.str(f)
		p, ok2 := e.abs(s)
		if !ok || !ok2 || s == "" {
			unresolved = true
			continue
		}
		real, ok := e.resolve(p)
		if !ok {
			unresolved = true
			continue
		}
		targets = append(targets, real)
	}
	var roots []string
	if e.c.Workspace != "" {
		dirs := append([]string{filepath.ToSlash(e.c.Workspace)}, e.c.ExtraDirs...)
		for _, d := range dirs {
			if p, ok := e.abs(d); ok && d != "" {
				if real, ok := e.resolve(p); ok {
					roots = append(roots, real)
				}
			}
		}
	}
	var out []string
	for _, t := range targets {
		if !slices.ContainsFunc(roots, func(r string) bool { return within(t, r) }) {
			out = append(out, t)
		}
	}
	return out, len(targets) > 0 && !unresolved
}

func within(p, root string) bool {
	return p == root || root == "/" || strings.HasPrefix(p, root+"/")
}
