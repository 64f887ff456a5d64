package builtin

import (
	"strings"
	"testing"
)

// TestBashEnvironmentIsScrubbed: a command sees neither weft's own
// settings nor the model providers' credentials from the server's
// environment (issue 12: `echo $WEFT_BEARER_TOKEN $OPENAI_API_KEY` showed
// them to the model), while the rest of the environment and the settings'
// env are still there. Not parallel: it sets the process environment.
func TestBashEnvironmentIsScrubbed(t *testing.T) {
	hidden := map[string]string{
		"WEFT_BEARER_TOKEN":      "bearer-0a1b2c3d4e5f",
		"WEFT_API_KEY":           "flagkey-0a1b2c3d4e",
		"WEFT_OPENAI_API_KEY":    "weftkey-0a1b2c3d4e",
		"WEFT_PERMISSION_MODE":   "bypass",
		"OPENAI_API_KEY":         "sk-openai-0a1b2c3d4e",
		"ANTHROPIC_API_KEY":      "sk-ant-0a1b2c3d4e5f",
		"ANTHROPIC_AUTH_TOKEN":   "gateway-0a1b2c3d4e5f",
		"GEMINI_API_KEY":         "gemini-0a1b2c3d4e5f",
		"GOOGLE_API_KEY":         "google-0a1b2c3d4e5f",
		"OPENROUTER_API_KEY":     "sk-or-0a1b2c3d4e5f",
		"DEEPSEEK_API_KEY":       "deepseek-0a1b2c3d4e",
		"VLLM_API_KEY":           "vllm-0a1b2c3d4e5f6",
		"SOMEVENDOR_API_KEY":     "vendor-0a1b2c3d4e5f",
		"weft_lowercase_api_key": "lower-0a1b2c3d4e5f",
	}
	for k, v := range hidden {
		t.Setenv(k, v)
	}
	t.Setenv("BASH_ENV_TEST_KEPT", "kept-value")
	bash, _ := newTestBash(t, "FROM_SETTINGS=settings-value")
	res := wsTestRun(t, bash, nil, `{"command": "env"}`)
	out := res.TextOf()
	for k, v := range hidden {
		if strings.Contains(out, k+"=") || strings.Contains(out, v) {
			t.Errorf("the command sees %s:\n%s", k, out)
		}
	}
	for _, want := range []string{"BASH_ENV_TEST_KEPT=kept-value", "FROM_SETTINGS=settings-value", "PATH="} {
		if !strings.Contains(out, want) {
			t.Errorf("the command lost %s:\n%s", want, out)
		}
	}
}
