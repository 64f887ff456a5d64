package secret

import (
	"slices"
	"testing"

	"github.com/weft-run/weft/llm/registry"
)

// TestWeftVariableCoversTheRegistry: every variable the model registry
// reads a credential from is one tools never inherit.
func TestWeftVariableCoversTheRegistry(t *testing.T) {
	t.Parallel()
	vars := registry.CredentialVariables()
	for _, want := range []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "GEMINI_API_KEY", "GOOGLE_API_KEY", "WEFT_OPENAI_API_KEY"} {
		if !slices.Contains(vars, want) {
			t.Errorf("the registry's list lacks %s: %v", want, vars)
		}
	}
	for _, v := range vars {
		if !WeftVariable(v) {
			t.Errorf("%s reaches tools", v)
		}
	}
	for _, v := range []string{"WEFT_BEARER_TOKEN", "weft_api_key", "MYVENDOR_API_KEY", "X_AUTH_TOKEN"} {
		if !WeftVariable(v) {
			t.Errorf("%s reaches tools", v)
		}
	}
	for _, v := range []string{"PATH", "HOME", "GITHUB_TOKEN", "API_KEY_FILE", "NOT_WEFT_X", "OPENAI_BASE_URL"} {
		if WeftVariable(v) {
			t.Errorf("%s is withheld from tools", v)
		}
	}
}

func TestToolEnv(t *testing.T) {
	t.Parallel()
	const (
		flagKey = "sk-flag-0123456789"
		passed  = "pass-0123456789ab"
	)
	set := NewSet()
	for _, err := range []error{
		set.Withhold("WEFT_API_KEY", flagKey),
		set.Set("MY_TOKEN", passed),
		// A credential the person also passes through explicitly.
		set.Withhold("OPENAI_API_KEY", "sk-both-0123456789"),
		set.Set("OPENAI_API_KEY", "sk-both-0123456789"),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	base := []string{
		"PATH=/usr/bin", "HOME=/home/u", "WEFT_BEARER_TOKEN=bearer-0123456789", "WEFT_PERMISSION_MODE=bypass",
		"OPENAI_API_KEY=sk-env-0123456789", "ANTHROPIC_AUTH_TOKEN=gw-0123456789", "SNEAKY=" + flagKey,
		"EMBEDDED=prefix-" + flagKey + "-suffix", "MY_TOKEN=stale", "NOEQUALS",
	}
	extra := [][]string{{"FROM_SETTINGS=1", "WEFT_FROM_SETTINGS=explicit", "LEAK=" + flagKey}, {"PWD=/ws"}}
	got := ToolEnv(base, set, extra...)
	want := []string{
		"PATH=/usr/bin", "HOME=/home/u", "MY_TOKEN=stale", "NOEQUALS",
		"FROM_SETTINGS=1", "WEFT_FROM_SETTINGS=explicit", "PWD=/ws",
		"MY_TOKEN=" + passed, "OPENAI_API_KEY=sk-both-0123456789",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("ToolEnv =\n%q\nwant\n%q", got, want)
	}
	if env := set.Env(); !slices.Equal(env, []string{"MY_TOKEN=" + passed, "OPENAI_API_KEY=sk-both-0123456789"}) {
		t.Fatalf("Env = %q", env)
	}
	// Withheld values are redacted like any other.
	if got := set.Redact("key " + flagKey); got != "key [SECRET:WEFT_API_KEY]" {
		t.Fatalf("Redact = %q", got)
	}
	// No set: only the names are scrubbed.
	if got := ToolEnv([]string{"A=1", "WEFT_X=2", "B_API_KEY=3"}, nil); !slices.Equal(got, []string{"A=1"}) {
		t.Fatalf("ToolEnv(nil set) = %q", got)
	}
}

func TestWithholdErrorsAndCopies(t *testing.T) {
	t.Parallel()
	s := NewSet()
	if err := s.Withhold("K", "short"); err == nil {
		t.Fatal("a short withheld value was accepted")
	}
	if err := s.Withhold("1K", "long-enough-value"); err == nil {
		t.Fatal("a bad name was accepted")
	}
	if err := s.Withhold("K", "long-enough-value"); err != nil {
		t.Fatal(err)
	}
	c, err := s.With("RUN", "run-secret-value")
	if err != nil {
		t.Fatal(err)
	}
	if env := c.Env(); !slices.Equal(env, []string{"RUN=run-secret-value"}) {
		t.Fatalf("a copy's Env = %q", env)
	}
	if got := c.Redact("long-enough-value"); got != "[SECRET:K]" {
		t.Fatalf("a copy does not redact the withheld value: %q", got)
	}
	if got := ToolEnv([]string{"X=long-enough-value"}, c); len(got) != 1 || got[0] != "RUN=run-secret-value" {
		t.Fatalf("a copy passes the withheld value on: %q", got)
	}
	s.Delete("K")
	if got := ToolEnv([]string{"X=long-enough-value"}, s); !slices.Equal(got, []string{"X=long-enough-value"}) {
		t.Fatalf("after Delete: %q", got)
	}
	if s.Redact("long-enough-value") != "long-enough-value" || len(s.Names()) != 0 {
		t.Fatal("Delete kept the withheld value")
	}
}
