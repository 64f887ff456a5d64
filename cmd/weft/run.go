package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/weft-run/weft/agent"
)

func newRunCmd(env environ) *cobra.Command {
	var f agentFlags
	var format string
	var showThinking bool
	cmd := &cobra.Command{
		Use:   "run [flags] PROMPT...",
		Short: "Run an agent on one prompt: it plans, calls tools, and streams every step",
		Long: `run gives the agent one prompt and streams the run: the model's text as it
arrives, each tool call with a short summary of its result, and a summary line.
PROMPT "-" (or no PROMPT with piped input) reads the prompt from stdin.

Tools that are not read-only ask for approval ([y]es/[n]o/[a]lways) when stdin
is a terminal. Without a terminal nothing is approved silently: pass --yes or
--permission-mode.

--format text (default) prints a transcript; json prints one object at the
end; stream-json prints one JSON event per line, for scripts.`,
		Example: `  weft run "find the TODOs in this repo and summarize them"
  weft run --model ollama:qwen3 --permission-mode plan "explain the build"
  weft run --yes --format stream-json "run the tests and fix what fails" | jq .`,
		RunE: func(cmd *cobra.Command, args []string) error {
			prompt, err := readPrompt(env, args)
			if err != nil {
				return err
			}
			if prompt == "" {
				return errors.New("no prompt: pass it as arguments, or \"-\" to read stdin")
			}
			if format != "text" && format != "json" && format != "stream-json" {
				return fmt.Errorf("--format %q: want text, json or stream-json", format)
			}
			var lines *lineReader
			if isTerminal(env.stdin) && !(len(args) == 1 && args[0] == "-") {
				lines = newLineReader(env.stdin)
			}
			a, closeModel, err := f.build(env, lines, env.stderr)
			if err != nil {
				return err
			}
			defer closeModel()
			return runOnce(cmd, env, a, prompt, format, showThinking, f.pipe)
		},
	}
	f.register(cmd.Flags())
	cmd.Flags().StringVar(&format, "format", "text", "output: text | json | stream-json")
	cmd.Flags().BoolVar(&showThinking, "show-thinking", false, "print the model's thinking to stderr (text format)")
	return cmd
}

// runResult is the --format json output.
type runResult struct {
	Result     string         `json:"result"`
	StopReason string         `json:"stop_reason"`
	TurnCount  int            `json:"turn_count"`
	Usage      agent.DoneData `json:"usage"`
	CostUSD    float64        `json:"cost_usd"`
	IsError    bool           `json:"is_error"`
	Error      string         `json:"error,omitempty"`
	// The run's last budget_request and its answer, when it had one
	// (budget.go).
	BudgetRequest  *agent.BudgetRequest  `json:"budget_request,omitempty"`
	BudgetDecision *agent.BudgetDecision `json:"budget_decision,omitempty"`
}

func runOnce(cmd *cobra.Command, env environ, a *agent.Agent, prompt, format string, showThinking bool, te *cliTurnEnd) error {
	tr := &textRenderer{out: env.stdout, errw: env.stderr, showThinking: showThinking}
	var res runResult
	var runErr error
	s := a.NewSession()
	// The turn-end pipeline (memory extraction, the dream check, and with
	// --suggestions follow-ups on stderr) runs as the run ends; the
	// command's close waits for it, within a bound.
	defer func() {
		ch := te.ended(a, s, res.StopReason)
		if format == "text" {
			printSuggestions(cmd.Context(), ch, nil, env.stderr)
		}
	}()
	for ev, err := range s.Run(withUsageRun(cmd.Context()), prompt) {
		if err != nil {
			runErr = err
		}
		switch format {
		case "text":
			tr.render(ev)
		case "stream-json":
			if err := streamJSON(env.stdout, ev); err != nil {
				return err
			}
		}
		res.budget(ev)
		if d, ok := ev.Data.(agent.DoneData); ok {
			res.Result, res.StopReason, res.TurnCount, res.Usage, res.CostUSD = d.Text, d.StopReason, d.TurnCount, d, d.CostUSD
		}
	}
	if runErr == nil && res.StopReason == agent.StopStuck {
		// Not a success: a script must not take the last text for a result.
		runErr = errors.New("stopped: every tool call kept failing, and the circuit breaker ended the run (see docs/operations.md)")
		if format == "text" {
			fmt.Fprintln(env.stderr, "error: "+runErr.Error())
		}
	}
	code := 1
	if runErr == nil && res.StopReason == agent.StopBudget {
		code, runErr = exitBudget, res.budgetError()
		if format == "text" {
			fmt.Fprintln(env.stderr, "error: "+runErr.Error())
		}
	}
	if format == "json" {
		if runErr != nil {
			res.IsError, res.Error = true, runErr.Error()
		}
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	}
	if runErr != nil {
		// Already shown (text: error line; json: in the output).
		return &exitError{code: code, err: runErr, quiet: format != "stream-json"}
	}
	if res.StopReason == agent.StopCancelled {
		return &exitError{code: 130, err: errors.New("cancelled"), quiet: true}
	}
	return nil
}
