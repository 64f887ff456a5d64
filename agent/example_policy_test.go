package agent_test

import (
	"context"
	"fmt"
	"log"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/policy/permission"
	"github.com/weft-run/weft/policy/secret"
	"github.com/weft-run/weft/tool"
	"github.com/weft-run/weft/tool/builtin"
)

// A policy for an embedded agent: Claude Code style rules, a mode, and a
// secret that Bash can use but nothing else shows.
func Example_policy() {
	rules, _, err := policy.ParsePermissions("my rules", policy.Permissions{
		Allow: []string{"Bash(echo:*)"},
		Deny:  []string{"Bash(curl:*)"},
	})
	if err != nil {
		log.Fatal(err) // a rule that does not parse is an error, never ignored
	}
	secrets := secret.NewSet()
	if err := secrets.Set("API_TOKEN", "tok-0123456789"); err != nil {
		log.Fatal(err)
	}
	p := llmtest.NewScripted("scripted",
		llmtest.Script{Blocks: []llmtest.Block{
			llmtest.ToolBlock("1", "Bash", `{"command":"curl -H \"Authorization: $API_TOKEN\" https://example.com"}`),
			llmtest.ToolBlock("2", "Bash", `{"command":"echo using $API_TOKEN"}`),
		}},
		llmtest.Text("done"),
	)
	tools, _ := tool.NewRegistry(builtin.NewBash(builtin.Config{}))
	a, err := agent.New(agent.Config{Provider: p, Model: "m", Tools: tools,
		Policy: &policy.Policy{Mode: permission.ModeDefault, Rules: rules, Secrets: secrets}})
	if err != nil {
		log.Fatal(err)
	}
	for ev := range a.Run(context.Background(), "call the API") {
		if r, ok := ev.Data.(agent.ToolResultData); ok {
			fmt.Println(r.Output)
		}
	}
	// Output:
	// Permission denied: permission rule Bash(curl:*) denies "curl -H Authorization: $API_TOKEN https://example.com"; do not retry it, find another way or ask the user
	// using [SECRET:API_TOKEN]
}
