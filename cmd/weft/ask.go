package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/weft-run/weft/llm"
)

type askOptions struct {
	modelFlags
	system       string
	maxTokens    int
	thinking     string
	temperature  float64
	showThinking bool
}

func newAskCmd(env environ) *cobra.Command {
	var o askOptions
	cmd := &cobra.Command{
		Use:   "ask [flags] PROMPT...",
		Short: "Send one prompt straight to a model and stream the answer (no tools)",
		Long: `ask sends one prompt to a model through weft's model layer and streams the
answer to stdout; thinking goes to stderr with --show-thinking, and a usage and
cost line ends on stderr. PROMPT "-" (or no PROMPT with piped input) reads stdin.

Models are "provider:model" (anthropic:claude-sonnet-4-5, openai:gpt-4.1,
gemini:gemini-2.5-flash, ollama:llama3.3, lmstudio:qwen3, openrouter:...,
deepseek:deepseek-chat) or a bare well-known name (claude-*, gpt-*, gemini-*).
Keys come from the usual variables (ANTHROPIC_API_KEY, OPENAI_API_KEY,
GEMINI_API_KEY, ...) or --api-key.

--cassette FILE records the model exchange to FILE (secrets stripped) or, once
the file exists, replays it with no network: record once with a real key,
replay in CI.`,
		Example: `  weft ask --model ollama:llama3.3 "Why is the sky blue?"
  echo "summarise: ..." | weft ask --model anthropic:claude-sonnet-4-5 -
  weft ask --cassette testdata/hello.jsonl "Say hello"`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAsk(cmd, env, o, args)
		},
	}
	f := cmd.Flags()
	o.modelFlags.register(f)
	f.StringVar(&o.system, "system", "", "system prompt")
	f.IntVar(&o.maxTokens, "max-tokens", 0, "maximum output tokens (default: the model's maximum, capped at 8192)")
	f.StringVar(&o.thinking, "thinking", "none", "thinking level: none|low|medium|high|xhigh")
	f.Float64Var(&o.temperature, "temperature", -1, "sampling temperature (default: the provider's)")
	f.BoolVar(&o.showThinking, "show-thinking", false, "print the model's thinking to stderr")
	return cmd
}

func readPrompt(env environ, args []string) (string, error) {
	if len(args) == 1 && args[0] == "-" || len(args) == 0 && !isTerminal(env.stdin) {
		b, err := io.ReadAll(env.stdin)
		if err != nil {
			return "", fmt.Errorf("reading the prompt from stdin: %w", err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	return strings.TrimSpace(strings.Join(args, " ")), nil
}

func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func runAsk(cmd *cobra.Command, env environ, o askOptions, args []string) error {
	prompt, err := readPrompt(env, args)
	if err != nil {
		return err
	}
	if prompt == "" {
		return errors.New("no prompt: pass it as arguments, or \"-\" to read stdin")
	}
	level, ok := llm.ParseThinkingLevel(o.thinking)
	if !ok {
		return fmt.Errorf("--thinking %q: want none, low, medium, high or xhigh", o.thinking)
	}
	p, info, closeModel, err := o.modelFlags.resolve(env)
	if err != nil {
		return err
	}
	defer closeModel()
	req := &llm.Request{
		Model:     info.ID,
		System:    llm.SystemText(o.system),
		Messages:  []llm.Message{llm.UserText(prompt)},
		MaxTokens: o.maxTokens,
		Thinking:  level,
		// One call: a cache write would cost more (Anthropic: 1.25x) and
		// nothing would read it back.
		Cache: llm.CacheOff,
	}
	if req.MaxTokens == 0 {
		req.MaxTokens = min(info.MaxOutputTokens, 8192)
	}
	if o.temperature >= 0 {
		req.Temperature = llm.Float(o.temperature)
	}

	var res llm.Result
	wroteText := false
	for ev := range p.Stream(cmd.Context(), req) {
		switch ev.Kind {
		case llm.EventBlockDelta:
			switch ev.Block.Type {
			case llm.BlockText:
				fmt.Fprint(env.stdout, ev.Delta)
				wroteText = true
			case llm.BlockThinking:
				if o.showThinking {
					fmt.Fprint(env.stderr, ev.Delta)
				}
			}
		case llm.EventBlockStop:
			if ev.Block.Type == llm.BlockThinking && o.showThinking {
				fmt.Fprintln(env.stderr)
			}
		case llm.EventUsage:
			res.Usage = ev.Usage
		case llm.EventOutcome:
			res.Outcome = ev.Outcome
		}
	}
	if wroteText {
		fmt.Fprintln(env.stdout)
	}
	u := res.Usage
	fmt.Fprintf(env.stderr, "[%s:%s] %d in (+%d cached, +%d cache write) / %d out tokens, $%.6f, %s\n",
		p.Name(), info.ID, u.InputTokens, u.CacheReadTokens, u.CacheWriteTokens, u.OutputTokens, info.Cost(u), stopText(res.Outcome))
	if res.Outcome.Status != llm.StatusCompleted {
		var e *llm.Error
		if errors.As(res.Outcome.Err, &e) && e.Hint != "" {
			return &exitError{code: 1, err: fmt.Errorf("%s (hint: %s)", res.Outcome.Message, e.Hint)}
		}
		return &exitError{code: 1, err: errors.New(res.Outcome.Message)}
	}
	return nil
}

func stopText(o llm.Outcome) string {
	if o.Status == llm.StatusCompleted {
		return string(o.StopReason)
	}
	return string(o.Status)
}
