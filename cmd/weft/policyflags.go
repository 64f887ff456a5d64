package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/pflag"

	"github.com/weft-run/weft/llm/registry"
	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/policy/audit"
	"github.com/weft-run/weft/policy/hook"
	"github.com/weft-run/weft/policy/permission"
	"github.com/weft-run/weft/policy/secret"
)

// policyFlags are the safety settings run, chat and serve share.
type policyFlags struct {
	settings  string
	secrets   []string
	auditLog  string
	pluginDir string
	// noGuardrails turns the loop guards off (docs/operations.md).
	noGuardrails bool
	// noCheckpoints turns the workspace checkpoints off (checkpoints.go).
	noCheckpoints bool
}

func (p *policyFlags) register(fs *pflag.FlagSet, auditHelp string) {
	fs.StringVar(&p.settings, "settings", "", "settings file in Claude Code's shape (permissions, hooks, env), on top of ~/.weft/settings.json and <workspace>/.weft/settings.json")
	fs.StringSliceVar(&p.secrets, "secret", nil, "register a secret from the environment: NAME (from $NAME) or NAME=VAR; Bash sees it as $NAME, every output shows [SECRET:NAME]; also how to give Bash a variable it never inherits, such as OPENAI_API_KEY (repeatable)")
	fs.StringVar(&p.auditLog, "audit-log", "", auditHelp)
	fs.BoolVar(&p.noGuardrails, "no-guardrails", false, "turn off the loop guards: the refusal of a call that keeps failing or keeps returning the same, and the circuit breaker that stops a run whose every tool call keeps failing (settings key \"guardrails\"; see docs/operations.md)")
	fs.BoolVar(&p.noCheckpoints, "no-checkpoints", false, "take no workspace checkpoints before file changes (no /undo; see weft checkpoints --help)")
	fs.StringVar(&p.pluginDir, "plugin-dir", "", "directory of plugins (one subdirectory each, hooks in hooks/hooks.json); their hooks run only once trusted (default ~/.weft/plugins)")
}

// builtPolicy is a policy with what must be closed after it.
type builtPolicy struct {
	pol     *policy.Policy
	merged  policy.Merged
	sources []policy.Source // the settings files, lowest scope first (MCP servers)
	secrets *secret.Set
	// explicitBypass: bypass was asked for by the person starting weft
	// (flag, environment or a settings file), the only way to get it.
	explicitBypass bool
	close          func() error
	// ckpt are the workspace checkpoints; nil when off.
	ckpt *cliCheckpoints
}

// secretSet registers the secrets: first every credential weft itself
// uses (withheld: redacted everywhere, never given to a tool), then the
// --secret ones (passed to Bash by name, and redacted), so that a person
// can pass a credential through explicitly with --secret NAME. creds maps
// a name to a credential given by flag (--api-key, --bearer-token); the
// model registry's credential variables are read from the environment.
func (p *policyFlags) secretSet(env environ, creds map[string]string) (*secret.Set, error) {
	set := secret.NewSet()
	withhold := func(name, value string) {
		// A pool of keys is comma-separated; each key is redacted on its
		// own. Values too short to be real credentials (a replay's
		// placeholder, a local server's dummy key) would redact ordinary
		// text everywhere, so they are not registered.
		n := 0
		for k := range strings.SplitSeq(value, ",") {
			if k = strings.TrimSpace(k); len(k) < secret.MinValueLen {
				continue
			}
			n++
			as := name
			if n > 1 {
				as = fmt.Sprintf("%s_%d", name, n)
			}
			_ = set.Withhold(as, k) // the name is valid and the value long enough
		}
	}
	for _, name := range registry.CredentialVariables() {
		withhold(name, env.getenv(name))
	}
	names := make([]string, 0, len(creds))
	for name := range creds {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		withhold(name, creds[name])
	}
	for _, s := range p.secrets {
		name, from, _ := strings.Cut(s, "=")
		if from == "" {
			from = name
		}
		v := env.getenv(from)
		if v == "" {
			return nil, fmt.Errorf("--secret %s: the environment variable %s is empty or unset", s, from)
		}
		if err := set.Set(name, v); err != nil {
			return nil, fmt.Errorf("--secret %s: %w", s, err)
		}
	}
	return set, nil
}

// build loads the settings scopes and assembles the policy. mode is the
// --permission-mode value ("" when not given); sinks are audit sinks
// besides the JSONL file (the database, for serve); set is secretSet's,
// and log already redacts with it.
func (p *policyFlags) build(env environ, ws string, addDirs []string, mode string, defaultAudit string, sinks []audit.Sink, set *secret.Set, log *slog.Logger) (*builtPolicy, error) {
	home := env.getenv("HOME")
	sources, err := policy.LoadScopes(home, ws, p.settings)
	if err != nil {
		return nil, err
	}
	merged := policy.Merge(sources...)
	b := &builtPolicy{merged: merged, sources: sources, close: func() error { return nil }}

	m := merged.Mode
	if mode != "" {
		if m, err = permission.ParseMode(mode); err != nil {
			return nil, fmt.Errorf("--permission-mode: %w", err)
		}
	}
	if m == "" {
		m = permission.ModeDefault
	}
	b.explicitBypass = m == permission.ModeBypass

	hooks := hook.NewManager(hook.Options{Logger: log, ProjectRoot: ws})
	if err := hooks.Register(merged.Hooks...); err != nil {
		return nil, err
	}
	pluginDir := p.pluginDir
	if pluginDir == "" && home != "" {
		pluginDir = filepath.Join(home, ".weft", "plugins")
	}
	if err := loadPlugins(hooks, pluginDir); err != nil {
		return nil, err
	}

	b.secrets = set

	path := p.auditLog
	if path == "" {
		path = defaultAudit
	}
	var all audit.Composite
	if path != "off" && path != "" {
		j, err := audit.NewJSONL(path)
		if err != nil {
			return nil, fmt.Errorf("--audit-log: %w", err)
		}
		all = append(all, j)
	}
	all = append(all, sinks...)
	b.close = all.Close

	dirs := append(append([]string(nil), merged.ExtraDirs...), addDirs...)
	// Files weft's behaviour is read from, besides the ones
	// permission.ProtectedPatterns names: writes to them always ask.
	var protected []string
	for _, f := range []string{p.settings, pluginDir, path} {
		if f != "" && f != "off" {
			if abs, err := filepath.Abs(f); err == nil {
				protected = append(protected, abs)
			}
		}
	}
	b.pol = &policy.Policy{
		Mode: m, Rules: merged.Rules, Workspace: ws, ExtraDirs: dirs, Protected: protected,
		Hooks: hooks, Audit: all, Secrets: set, Logger: log, Guardrails: merged.Guardrails,
	}
	if p.noGuardrails {
		b.pol.Guardrails.Disabled = true
	}
	if err := p.installCheckpoints(env, b, ws, log); err != nil {
		b.close()
		return nil, err
	}
	return b, nil
}

// toolEnv is what Bash gets on top of the process environment (scrubbed
// of weft's variables and credentials, see secret.ToolEnv): the settings'
// env; the secrets come with each call.
func (b *builtPolicy) toolEnv() []string {
	keys := make([]string, 0, len(b.merged.Env))
	for k := range b.merged.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var env []string
	for _, k := range keys {
		env = append(env, k+"="+b.merged.Env[k])
	}
	return env
}

// loadPlugins registers the hooks of every plugin under dir; they stay
// inert until the plugin is trusted. A missing dir means no plugins.
func loadPlugins(m *hook.Manager, dir string) error {
	if dir == "" {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("plugins: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		root := filepath.Join(dir, e.Name())
		if _, err := os.Stat(filepath.Join(root, "hooks", "hooks.json")); err != nil {
			continue
		}
		defs, err := hook.LoadPluginHooks(e.Name(), root, filepath.Join(root, "data"))
		if err != nil {
			return err
		}
		if err := m.ReplaceSource(e.Name(), defs); err != nil {
			return err
		}
	}
	return nil
}
