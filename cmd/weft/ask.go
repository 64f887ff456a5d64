package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/cassette"
	"github.com/weft-run/weft/llm/registry"
)

type askOptions struct {
	model        string
	system       string
	maxTokens    int
	thinking     string
	temperature  float64
	baseURL      string
	apiKey       string
	cassette     string
	cassetteMode string
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
	f.StringVarP(&o.model, "model", "m", "", "provider:model (default $WEFT_MODEL, else inferred from the API keys set)")
	f.StringVar(&o.system, "system", "", "system prompt")
	f.IntVar(&o.maxTokens, "max-tokens", 0, "maximum output tokens (default: the model's maximum, capped at 8192)")
	f.StringVar(&o.thinking, "thinking", "none", "thinking level: none|low|medium|high|xhigh")
	f.Float64Var(&o.temperature, "temperature", -1, "sampling temperature (default: the provider's)")
	f.StringVar(&o.baseURL, "base-url", "", "override the provider's base URL (e.g. a proxy or a local server)")
	f.StringVar(&o.apiKey, "api-key", "", "API key (default: from the provider's environment variable)")
	f.StringVar(&o.cassette, "cassette", "", "record the exchange to this JSONL file, or replay it when it exists")
	f.StringVar(&o.cassetteMode, "cassette-mode", "auto", "cassette mode: auto|record|replay")
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

// defaultModel picks a model from what the environment has keys for, so that
// a person with one key set need not name a model.
func defaultModel(getenv func(string) string) string {
	if m := getenv("WEFT_MODEL"); m != "" {
		return m
	}
	switch {
	case getenv("ANTHROPIC_API_KEY") != "" || getenv("ANTHROPIC_AUTH_TOKEN") != "":
		return "anthropic:claude-sonnet-4-5"
	case getenv("OPENAI_API_KEY") != "":
		return "openai:gpt-4.1"
	case getenv("GEMINI_API_KEY") != "" || getenv("GOOGLE_API_KEY") != "":
		return "gemini:gemini-2.5-flash"
	case getenv("OLLAMA_HOST") != "":
		return "ollama:llama3.3"
	}
	return ""
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
	spec := o.model
	if spec == "" {
		spec = defaultModel(env.getenv)
	}
	if spec == "" {
		return errors.New("no model: pass --model provider:model (e.g. ollama:llama3.3) or set ANTHROPIC_API_KEY, OPENAI_API_KEY or GEMINI_API_KEY")
	}

	cfg := registry.Config{Getenv: env.getenv, Providers: map[string]registry.ProviderConfig{}}
	if o.baseURL != "" || o.apiKey != "" {
		name, _, err := registry.ParseSpec(spec)
		if err != nil {
			return err
		}
		cfg.Providers[name] = registry.ProviderConfig{BaseURL: o.baseURL, APIKey: o.apiKey}
	}
	if o.cassette != "" {
		mode, err := cassette.ParseMode(o.cassetteMode)
		if err != nil {
			return fmt.Errorf("--cassette-mode: %w", err)
		}
		c, err := cassette.Open(o.cassette, mode)
		if err != nil {
			return err
		}
		defer c.Close()
		cfg.HTTPClient = c.Client(nil)
		if c.Mode() == cassette.Replay {
			// A replay needs no real key; the recording has none either.
			for _, name := range registry.New(registry.Config{Getenv: env.getenv}).Names() {
				pc := cfg.Providers[name]
				if pc.APIKey == "" {
					pc.APIKey = "cassette-replay"
				}
				cfg.Providers[name] = pc
			}
		}
	}
	reg := registry.New(cfg)
	p, info, err := reg.Resolve(spec)
	if err != nil {
		return err
	}
	req := &llm.Request{
		Model:     info.ID,
		System:    llm.SystemText(o.system),
		Messages:  []llm.Message{llm.UserText(prompt)},
		MaxTokens: o.maxTokens,
		Thinking:  level,
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
