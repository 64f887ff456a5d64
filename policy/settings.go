package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/weft-run/weft/policy/hook"
	"github.com/weft-run/weft/policy/permission"
	"github.com/weft-run/weft/policy/secret"
)

// Settings is a settings file in Claude Code's JSON shape, so a user's
// existing .claude/settings.json works here unchanged.
type Settings struct {
	Permissions Permissions       `json:"permissions"`
	Hooks       json.RawMessage   `json:"hooks,omitempty"`
	Env         map[string]string `json:"env,omitempty"`
	// SecretScanning configures the scan of Write/Edit content (weft's
	// own key; Claude Code has none).
	SecretScanning *SecretScanning `json:"secretScanning,omitempty"`
	// Guardrails configures the loop guards (weft's own key).
	Guardrails *GuardrailSettings `json:"guardrails,omitempty"`
	// MCP servers and the approval of project servers, in Claude Code's
	// keys; read by tool/mcp (through cmd/weft), which also decides which
	// scopes may approve.
	MCPServers                 json.RawMessage `json:"mcpServers,omitempty"`
	EnableAllProjectMcpServers *bool           `json:"enableAllProjectMcpServers,omitempty"`
	EnabledMcpjsonServers      []string        `json:"enabledMcpjsonServers,omitempty"`
	DisabledMcpjsonServers     []string        `json:"disabledMcpjsonServers,omitempty"`
}

// SecretScanning is the "secretScanning" settings object. Scanning is on
// by default; only "enabled": false turns it off, and a higher scope's
// choice wins.
type SecretScanning struct {
	Enabled     *bool             `json:"enabled,omitempty"`
	Rules       []secret.RuleSpec `json:"rules,omitempty"`
	ExemptPaths []string          `json:"exemptPaths,omitempty"`
}

// GuardrailSettings is the "guardrails" settings object: the loop guards
// are on by default; "enabled": false turns them off (a higher scope's
// choice wins) and a threshold a scope sets replaces a lower scope's.
// See Guardrails for the fields; a negative threshold turns that guard
// off alone.
type GuardrailSettings struct {
	Enabled          *bool `json:"enabled,omitempty"`
	SameCallFailures int   `json:"sameCallFailures,omitempty"`
	SameToolFailures int   `json:"sameToolFailures,omitempty"`
	SameResult       int   `json:"sameResult,omitempty"`
	FailedRounds     int   `json:"failedRounds,omitempty"`
	StuckRounds      int   `json:"stuckRounds,omitempty"`
}

// Permissions is the "permissions" object of a settings file.
type Permissions struct {
	Allow                 []string `json:"allow"`
	Ask                   []string `json:"ask"`
	Deny                  []string `json:"deny"`
	DefaultMode           string   `json:"defaultMode,omitempty"`
	AdditionalDirectories []string `json:"additionalDirectories,omitempty"`
}

// Scopes, lowest precedence first.
const (
	ScopeUser    = "user"
	ScopeProject = "project"
	ScopeCLI     = "cli"
)

// Source is one parsed settings file (or document) and where it came from.
type Source struct {
	Scope       string
	Path        string // for errors; "" for documents that are not files
	Settings    Settings
	rules       permission.RuleSet
	hooks       []hook.Def
	mode        permission.Mode
	secretRules []secret.Rule
}

// Rules returns the source's parsed rules.
func (s Source) Rules() permission.RuleSet { return s.rules }

// Parse parses one settings document. Every rule and hook must parse: an
// error names the file, the line and the entry, because a rule that is
// silently ignored is a hole in a policy its author believes in.
func Parse(scope, path string, data []byte) (Source, error) {
	src := Source{Scope: scope, Path: path}
	name := path
	if name == "" {
		name = scope + " settings"
	}
	// Keys weft has no use for (model, statusLine, ...) are ignored, so a
	// real Claude Code settings.json loads unchanged.
	if err := json.Unmarshal(data, &src.Settings); err != nil {
		return src, fmt.Errorf("%s: %s", name, jsonError(data, err))
	}
	var err error
	if src.rules, src.mode, err = parsePermissions(name, src.Settings.Permissions, ruleLines(data)); err != nil {
		return src, err
	}
	if sc := src.Settings.SecretScanning; sc != nil && len(sc.Rules) > 0 {
		if src.secretRules, err = secret.CompileRules(sc.Rules); err != nil {
			return src, fmt.Errorf("%s: secretScanning.rules: %w", name, err)
		}
	}
	if len(bytes.TrimSpace(src.Settings.Hooks)) > 0 && string(bytes.TrimSpace(src.Settings.Hooks)) != "null" {
		if src.hooks, err = hook.ParseConfig(name, src.Settings.Hooks, ""); err != nil {
			return src, err
		}
		for i := range src.hooks {
			if src.hooks[i].Name == "" {
				src.hooks[i].Name = fmt.Sprintf("%s/%s[%d]", scope, src.hooks[i].Event, i)
			}
		}
	}
	return src, nil
}

// ParsePermissions parses a permissions object that did not come from a
// file (an API request): src names it in errors.
func ParsePermissions(src string, p Permissions) (permission.RuleSet, permission.Mode, error) {
	return parsePermissions(src, p, nil)
}

func parsePermissions(name string, p Permissions, lines map[string]int) (rs permission.RuleSet, mode permission.Mode, err error) {
	parse := func(list string, rules []string) ([]permission.Rule, error) {
		out := make([]permission.Rule, 0, len(rules))
		for i, r := range rules {
			pr, err := permission.ParseRule(r)
			if err != nil {
				where := name
				if l := lines[fmt.Sprintf("%s[%d]", list, i)]; l > 0 {
					where = fmt.Sprintf("%s:%d", name, l)
				}
				return nil, fmt.Errorf("%s: permissions.%s entry %d %q: %w", where, list, i+1, r, err)
			}
			out = append(out, pr)
		}
		return out, nil
	}
	if rs.Deny, err = parse("deny", p.Deny); err != nil {
		return rs, "", err
	}
	if rs.Ask, err = parse("ask", p.Ask); err != nil {
		return rs, "", err
	}
	if rs.Allow, err = parse("allow", p.Allow); err != nil {
		return rs, "", err
	}
	if p.DefaultMode != "" {
		if mode, err = permission.ParseMode(p.DefaultMode); err != nil {
			return rs, "", fmt.Errorf("%s: permissions.defaultMode: %w", name, err)
		}
	}
	return rs, mode, nil
}

// Render turns parsed rules back into a permissions object (for GET).
func Render(rs permission.RuleSet, mode permission.Mode, dirs []string) Permissions {
	str := func(rules []permission.Rule) []string {
		out := make([]string, len(rules))
		for i, r := range rules {
			out[i] = r.String()
		}
		return out
	}
	return Permissions{Allow: str(rs.Allow), Ask: str(rs.Ask), Deny: str(rs.Deny), DefaultMode: string(mode), AdditionalDirectories: dirs}
}

// LoadFile reads and parses a settings file. A missing file is an empty
// source when optional (the user and project scopes), an error otherwise.
func LoadFile(scope, path string, optional bool) (Source, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if optional && errors.Is(err, fs.ErrNotExist) {
			return Source{Scope: scope, Path: path}, nil
		}
		return Source{Scope: scope, Path: path}, fmt.Errorf("reading settings: %w", err)
	}
	return Parse(scope, path, data)
}

// UserPath and ProjectPath are where the user and project scopes live.
func UserPath(home string) string         { return filepath.Join(home, ".weft", "settings.json") }
func ProjectPath(workspace string) string { return filepath.Join(workspace, ".weft", "settings.json") }

// LoadScopes loads the user scope (from home; skipped when ""), the project
// scope (from workspace) and the file given on the command line (skipped
// when ""), lowest precedence first.
func LoadScopes(home, workspace, cliFile string) ([]Source, error) {
	var out []Source
	if home != "" {
		s, err := LoadFile(ScopeUser, UserPath(home), true)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	if workspace != "" {
		s, err := LoadFile(ScopeProject, ProjectPath(workspace), true)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	if cliFile != "" {
		s, err := LoadFile(ScopeCLI, cliFile, false)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// Merged is the effective configuration of several scopes.
type Merged struct {
	// Guard scans Write/Edit content: the builtin rules plus every scope's
	// custom rules and exempt paths, or secret.NoopGuard when a scope
	// turned scanning off.
	Guard     secret.Guard
	Rules     permission.RuleSet
	Mode      permission.Mode // "" when no scope sets one
	ExtraDirs []string
	Hooks     []hook.Def
	Env       map[string]string
	// Guardrails is every scope's "guardrails" merged, for
	// Policy.Guardrails.
	Guardrails Guardrails
}

// Merge combines sources given lowest precedence first: rules and
// directories are unions (so a deny from any scope wins, since deny always
// beats allow), the mode and env values of a higher scope replace a lower
// one's, and hooks from every scope run, lowest scope first.
func Merge(sources ...Source) Merged {
	var m Merged
	seen := map[string]bool{}
	scan := true
	guard := secret.NewDefaultGuard()
	var guardsOn *bool
	for _, s := range sources {
		if g := s.Settings.Guardrails; g != nil {
			if g.Enabled != nil {
				guardsOn = g.Enabled
			}
			m.Guardrails = m.Guardrails.Merge(Guardrails{SameCallFailures: g.SameCallFailures, SameToolFailures: g.SameToolFailures,
				SameResult: g.SameResult, FailedRounds: g.FailedRounds, StuckRounds: g.StuckRounds})
		}
		if sc := s.Settings.SecretScanning; sc != nil {
			if sc.Enabled != nil {
				scan = *sc.Enabled
			}
			guard.Rules = append(guard.Rules, s.secretRules...)
			guard.ExemptPaths = append(guard.ExemptPaths, sc.ExemptPaths...)
		}
		m.Rules = m.Rules.Merge(s.rules)
		if s.mode != "" {
			m.Mode = s.mode
		}
		for _, d := range s.Settings.Permissions.AdditionalDirectories {
			if !seen[d] {
				seen[d] = true
				m.ExtraDirs = append(m.ExtraDirs, d)
			}
		}
		m.Hooks = append(m.Hooks, s.hooks...)
		for k, v := range s.Settings.Env {
			if m.Env == nil {
				m.Env = map[string]string{}
			}
			m.Env[k] = v
		}
	}
	m.Guardrails.Disabled = guardsOn != nil && !*guardsOn
	m.Guard = guard
	if !scan {
		m.Guard = secret.NoopGuard{}
	}
	return m
}

// ruleLines maps "allow[3]" to the line its string is on inside the
// "permissions" object, so errors point at the offending line.
func ruleLines(data []byte) map[string]int {
	type frame struct {
		arr     bool
		idx     int
		key     string
		haveKey bool
	}
	out := map[string]int{}
	dec := json.NewDecoder(bytes.NewReader(data))
	var st []frame
	done := func() { // a value ended inside the top frame
		if len(st) == 0 {
			return
		}
		if t := &st[len(st)-1]; t.arr {
			t.idx++
		} else {
			t.haveKey = false
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return out
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				st = append(st, frame{arr: d == '['})
			default:
				st = st[:len(st)-1]
				done()
			}
			continue
		}
		if s, ok := tok.(string); ok && len(st) > 0 && !st[len(st)-1].arr && !st[len(st)-1].haveKey {
			st[len(st)-1].key, st[len(st)-1].haveKey = s, true
			continue
		}
		if len(st) == 3 && st[0].key == "permissions" && st[2].arr {
			line := 1 + bytes.Count(data[:dec.InputOffset()], []byte("\n"))
			out[fmt.Sprintf("%s[%d]", st[1].key, st[2].idx)] = line
		}
		done()
	}
}

func jsonError(data []byte, err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line := 1 + bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n"))
		return fmt.Sprintf("line %d: %v", line, err)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("%s: expected %s, got %s", strings.TrimPrefix(te.Field, "Settings."), te.Type, te.Value)
	}
	return err.Error()
}
