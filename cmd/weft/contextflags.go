package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/app"
	"github.com/weft-run/weft/llm/registry"
)

// contextFlags configure the context window's management (issue 14,
// docs/context.md) for weft run, chat and serve.
type contextFlags struct {
	compactModel  string
	contextWindow int
	noCompact     bool
	maxMessages   int
}

func (c *contextFlags) register(f *pflag.FlagSet) {
	f.StringVar(&c.compactModel, "compact-model", "", "model that writes the summaries when the conversation is compacted, e.g. a cheaper one (default: the session's model, or $WEFT_COMPACT_MODEL)")
	f.IntVar(&c.contextWindow, "context-window", 0, "the model's context window in tokens, over the catalogue's (default: the catalogue's, or $WEFT_CONTEXT_WINDOW)")
	f.BoolVar(&c.noCompact, "no-compact", false, "never compact the conversation automatically (/compact still does)")
	f.IntVar(&c.maxMessages, "max-context-messages", 0, "send the model at most this many messages of the conversation (0: no limit)")
}

func (c *contextFlags) fromEnv(env environ) error {
	if c.compactModel == "" {
		c.compactModel = env.getenv("WEFT_COMPACT_MODEL")
	}
	if v := env.getenv("WEFT_CONTEXT_WINDOW"); c.contextWindow == 0 && v != "" {
		if _, err := fmt.Sscan(v, &c.contextWindow); err != nil {
			return fmt.Errorf("WEFT_CONTEXT_WINDOW %q: want a number of tokens", v)
		}
	}
	if c.contextWindow < 0 || c.maxMessages < 0 {
		return fmt.Errorf("--context-window and --max-context-messages want positive numbers")
	}
	return nil
}

// apply sets cfg's context management; reg resolves --compact-model.
func (c *contextFlags) apply(env environ, cfg *agent.Config, reg *registry.Registry) error {
	if err := c.fromEnv(env); err != nil {
		return err
	}
	cfg.Context.Off = c.noCompact
	cfg.ContextWindow = c.contextWindow
	cfg.MaxContextMessages = c.maxMessages
	if c.compactModel != "" {
		p, info, err := reg.Resolve(c.compactModel)
		if err != nil {
			return fmt.Errorf("--compact-model: %w", err)
		}
		cfg.CompactProvider, cfg.CompactModel = p, info.ID
	}
	return nil
}

// runtimeConfig sets weft serve's context management (its sessions'
// window is the turn's model's).
func (c *contextFlags) appConfig(env environ, cfg *app.Config) error {
	if err := c.fromEnv(env); err != nil {
		return err
	}
	cfg.Context.Off = c.noCompact
	cfg.CompactModel = c.compactModel
	cfg.ContextWindow, cfg.MaxContextMessages = c.contextWindow, c.maxMessages
	return nil
}

// compactChat is chat's /compact [instructions].
func compactChat(ctx context.Context, s *agent.Session, instructions string, w io.Writer) {
	cs, err := s.Compact(ctx, strings.TrimSpace(instructions))
	if err != nil {
		fmt.Fprintf(w, "compact: %v\n", err)
		return
	}
	if len(cs) == 0 {
		fmt.Fprintln(w, "nothing to compact yet")
		return
	}
	for _, c := range cs {
		fmt.Fprintln(w, describeCompaction(c))
	}
}

func describeCompaction(c agent.CompactionData) string {
	s := fmt.Sprintf("context compacted (%s, %s): %d -> %d tokens", c.Level, c.Trigger, c.TokensBefore, c.TokensAfter)
	if c.Model != "" {
		s += ", summary by " + c.Model
	}
	if c.Note != "" {
		s += "; " + c.Note
	}
	return s
}
