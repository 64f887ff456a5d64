package agent_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/llm/registry"
	"github.com/weft-run/weft/tool"
	"github.com/weft-run/weft/tool/builtin"
)

// Embedding an agent: a model from the environment's keys, the builtin
// tools confined to the current directory, read-only tools approved.
func Example() {
	provider, model, err := registry.New(registry.Config{}).Resolve("anthropic:claude-sonnet-4-5")
	if err != nil {
		log.Fatal(err) // e.g. "no API key configured: set ANTHROPIC_API_KEY ..."
	}
	wd, _ := os.Getwd()
	tools, _ := tool.NewRegistry(builtin.Tools(builtin.Config{Workspace: wd})...)
	a, err := agent.New(agent.Config{Provider: provider, Model: model.ID, ModelInfo: &model,
		Tools: tools, Approve: agent.AllowReadOnly})
	if err != nil {
		log.Fatal(err)
	}
	for ev, err := range a.Run(context.Background(), "Find the TODOs in this repo and summarize them") {
		switch d := ev.Data.(type) {
		case agent.TextData:
			if ev.Type == agent.EventTextDelta {
				fmt.Print(d.Text)
			}
		case agent.ToolUseData:
			fmt.Printf("\n[%s %s]\n", d.ToolName, d.Input)
		case agent.DoneData:
			fmt.Printf("\n%d turns, $%.4f\n", d.TurnCount, d.CostUSD)
		}
		if err != nil {
			log.Print(err)
		}
	}
}

// The same loop against the OpenAI-compatible protocol fake, so that it
// runs offline.
func Example_offline() {
	fake := llmtest.NewOpenAI(nil)
	defer fake.Close()
	fake.Push(
		llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock("call_1", "add", `{"a":2,`, `"b":3}`)}},
		llmtest.Text("2 + 3 = 5"),
	)
	reg := registry.New(registry.Config{Providers: map[string]registry.ProviderConfig{
		"openai": {BaseURL: fake.URL + "/v1", APIKey: "sk-test"}}})
	provider, model, _ := reg.Resolve("openai:gpt-4.1")

	type addIn struct {
		A int `json:"a"`
		B int `json:"b"`
	}
	add := tool.Func("add", "Adds two integers.", tool.Meta{ReadOnly: true, ConcurrencySafe: true},
		func(_ context.Context, in addIn, _ *tool.Call) (tool.Result, error) {
			return tool.Text(fmt.Sprint(in.A + in.B)), nil
		})
	tools, _ := tool.NewRegistry(add)
	a, _ := agent.New(agent.Config{Provider: provider, Model: model.ID, Tools: tools, Approve: agent.AllowAll})
	for ev := range a.Run(context.Background(), "What is 2 + 3?") {
		switch d := ev.Data.(type) {
		case agent.ToolResultData:
			fmt.Printf("%s -> %s\n", d.ToolName, d.Output)
		case agent.DoneData:
			fmt.Printf("%s (%s after %d turns)\n", d.Text, d.StopReason, d.TurnCount)
		}
	}
	// Output:
	// add -> 5
	// 2 + 3 = 5 (end_turn after 2 turns)
}
