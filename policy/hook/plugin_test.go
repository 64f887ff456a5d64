package hook

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestPluginHooksRunOnlyWhileTrusted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	root := filepath.Join(dir, "plugins", "guard")
	data := filepath.Join(dir, "data", "guard")
	order := filepath.Join(dir, "order.log")
	envOut := filepath.Join(dir, "plugin.env")
	// A grok/Claude Code plugin hooks.json; the command finds its script
	// through the plugin root variable, as Claude Code plugins do.
	script(t, root, "hooks/guard.sh", `echo plugin >> "`+order+`"; env > "`+envOut+`"; pwd >> "`+envOut+`"; echo "plugin says no" >&2; exit 2`)
	writeFile(t, filepath.Join(root, "hooks", "hooks.json"), `{
  "description": "blocks shell",
  "hooks": {
    "PreToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "${CLAUDE_PLUGIN_ROOT}/hooks/guard.sh", "timeout": 5}]}
    ]
  }
}`)
	defs, err := LoadPluginHooks("guard", root, data)
	if err != nil {
		t.Fatal(err)
	}
	if len(defs) != 1 || defs[0].Name != "plugin/guard/PreToolUse[0]" || defs[0].Source != "guard" || defs[0].Dir != root {
		t.Fatalf("defs = %+v", defs)
	}
	m, logs := newTestManager(t, Options{})
	if err := m.Register(defs...); err != nil {
		t.Fatal(err)
	}
	// Registered after the plugin, still runs first: global before plugin.
	if err := m.Register(Def{Name: "global", Event: PreToolUse, Command: `echo global >> "` + order + `"`}); err != nil {
		t.Fatal(err)
	}
	run := func() Outcome { return m.Run(context.Background(), bashInput(dir, "ls")) }

	if got := run(); got.Verdict != NoOpinion {
		t.Errorf("untrusted plugin decided: %+v", got)
	}
	if got := readFile(t, order); got != "global\n" {
		t.Errorf("untrusted: ran %q", got)
	}
	if want := []PluginInfo{{ID: "guard", Trusted: false, Hooks: 1}}; !reflect.DeepEqual(m.Plugins(), want) {
		t.Errorf("Plugins() = %+v", m.Plugins())
	}

	m.Trust("guard")
	got := run()
	if got.Verdict != Deny || got.Reason != "plugin says no" || got.Hook != "plugin/guard/PreToolUse[0]" {
		t.Errorf("trusted: %+v", got)
	}
	if got := readFile(t, order); got != "global\nglobal\nplugin\n" {
		t.Errorf("trusted: order %q, want global before plugin", got)
	}
	env := envMap(readFile(t, envOut))
	for _, k := range []string{"WEFT_PLUGIN_ROOT", "CLAUDE_PLUGIN_ROOT", "FENGYU_PLUGIN_ROOT"} {
		if env[k] != root {
			t.Errorf("%s = %q, want %q", k, env[k], root)
		}
	}
	for _, k := range []string{"WEFT_PLUGIN_DATA", "CLAUDE_PLUGIN_DATA", "FENGYU_PLUGIN_DATA"} {
		if env[k] != data {
			t.Errorf("%s = %q, want %q", k, env[k], data)
		}
	}
	if !strings.HasSuffix(readFile(t, envOut), root+"\n") {
		t.Error("plugin hook did not run in the plugin root")
	}

	m.Untrust("guard")
	if got := run(); got.Verdict != NoOpinion {
		t.Errorf("after Untrust: %+v", got)
	}
	if got := readFile(t, order); got != "global\nglobal\nplugin\nglobal\n" {
		t.Errorf("after Untrust: order %q", got)
	}
	if strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("unexpected warnings:\n%s", logs)
	}
}

func TestLoadPluginHooksFlatAndMissing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	defs, err := LoadPluginHooks("empty", dir, "")
	if err != nil || defs != nil {
		t.Errorf("plugin without hooks.json: %v, %v", defs, err)
	}
	writeFile(t, filepath.Join(dir, "hooks", "hooks.json"), `[
  {"name": "lint", "event": "post_tool_use", "matcher": "Write", "type": "command", "command": "true", "timeoutSeconds": 3},
  {"name": "off", "event": "post_tool_use", "type": "command", "command": "true", "enabled": false}
]`)
	defs, err = LoadPluginHooks("fy", dir, filepath.Join(dir, "d"))
	if err != nil {
		t.Fatal(err)
	}
	if len(defs) != 1 || defs[0].Name != "plugin/fy/lint" || defs[0].Event != PostToolUse || defs[0].Source != "fy" {
		t.Errorf("defs = %+v", defs)
	}
	writeFile(t, filepath.Join(dir, "hooks", "hooks.json"), `{"hooks": {"PreToolUse": [{"hooks": [{"type": "prompt", "prompt": "x"}]}]}}`)
	if _, err := LoadPluginHooks("fy", dir, ""); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "hooks", "hooks.json")) {
		t.Errorf("error %v does not name the file", err)
	}
	if _, err := LoadPluginHooks("", dir, ""); err == nil {
		t.Error("empty plugin id accepted")
	}
}

func TestSourcesAndTrust(t *testing.T) {
	t.Parallel()
	m, _ := newTestManager(t, Options{})
	hook := func(name, source string, ev Event) Def {
		return Def{Name: name, Event: ev, Command: "true", Source: source}
	}
	if err := m.Register(hook("g1", "", PreToolUse), hook("p1", "a", PreToolUse), hook("", "b", Stop)); err != nil {
		t.Fatal(err)
	}
	names := func() []string {
		var out []string
		for _, d := range m.Defs() {
			out = append(out, d.Name)
		}
		return out
	}
	if got, want := names(), []string{"g1", "p1", "plugin/b/stop[0]"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Defs = %v, want %v", got, want)
	}
	if m.Has(Stop) {
		t.Error("Has(stop) with only an untrusted plugin listening")
	}
	m.Trust("b")
	if !m.Has(Stop) || !m.Trusted("b") || m.Trusted("a") || !m.Trusted("") {
		t.Error("trust state wrong")
	}
	if m.Has(SessionEnd) {
		t.Error("Has(session_end) with nothing listening")
	}

	// A reload swaps one source atomically and leaves the others alone.
	if err := m.ReplaceSource("", []Def{hook("g2", "ignored", PreToolUse), hook("g3", "", PostToolUse)}); err != nil {
		t.Fatal(err)
	}
	if got, want := names(), []string{"g2", "g3", "p1", "plugin/b/stop[0]"}; !reflect.DeepEqual(got, want) {
		t.Errorf("after ReplaceSource: %v, want %v", got, want)
	}
	if err := m.ReplaceSource("a", []Def{hook("bad", "", "nope")}); err == nil {
		t.Error("invalid ReplaceSource accepted")
	}
	if got := names(); !reflect.DeepEqual(got, []string{"g2", "g3", "p1", "plugin/b/stop[0]"}) {
		t.Errorf("a failed ReplaceSource changed hooks: %v", got)
	}

	m.Trust("c") // trusted before its hooks are loaded (trust restored at startup)
	m.UnregisterSource("a")
	want := []PluginInfo{{ID: "b", Trusted: true, Hooks: 1}, {ID: "c", Trusted: true}}
	if got := m.Plugins(); !reflect.DeepEqual(got, want) {
		t.Errorf("Plugins() = %+v, want %+v", got, want)
	}
	m.UnregisterSource("")
	if got := names(); !reflect.DeepEqual(got, []string{"plugin/b/stop[0]"}) {
		t.Errorf("after UnregisterSource(\"\"): %v", got)
	}
	// Defs is a snapshot: changing it changes nothing.
	d := m.Defs()
	d[0].Name = "changed"
	if m.Defs()[0].Name == "changed" {
		t.Error("Defs returned shared state")
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
