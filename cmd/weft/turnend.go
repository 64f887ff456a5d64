package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/event"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/memory"
	"github.com/weft-run/weft/policy/audit"
	"github.com/weft-run/weft/prompt"
	"github.com/weft-run/weft/turnend"
)

// turnEndFlags turn the turn-end pipeline's steps on and off (package
// turnend; docs/memory.md): memory extraction and consolidation are on
// whenever file memory is; suggestions are on in chat, where a person
// reads them, and off in run and serve, where every turn would pay for a
// model call nobody may read (serve --suggestions turns them on, for the
// web UI's chips).
type turnEndFlags struct {
	noExtract   bool
	noDream     bool
	suggestions bool
	fs          *pflag.FlagSet
}

func (t *turnEndFlags) register(f *pflag.FlagSet) {
	t.fs = f
	f.BoolVar(&t.noExtract, "no-extract-memory", false, "do not extract memories from the conversation after turns (a background sub-agent that may write only the memory directory; see docs/memory.md)")
	f.BoolVar(&t.noDream, "no-dream", false, "do not consolidate memory in the background (merging, deduplicating and pruning memory files at most once a day)")
	f.BoolVar(&t.suggestions, "suggestions", false, "after each answer, ask the model (the --compact-model when set) for up to 3 follow-up prompts, in 5 s at most")
}

// suggestByDefault makes --suggestions default to true (chat).
func (t *turnEndFlags) suggestByDefault() {
	t.suggestions = true
	if fl := t.fs.Lookup("suggestions"); fl != nil {
		fl.DefValue = "true"
	}
}

// fromEnv reads WEFT_NO_EXTRACT_MEMORY, WEFT_NO_DREAM and
// WEFT_SUGGESTIONS for the flags not given (weft serve reads every flag's
// variable itself).
func (t *turnEndFlags) fromEnv(getenv func(string) string) error {
	for _, f := range []struct {
		v    *bool
		name string
	}{{&t.noExtract, "no-extract-memory"}, {&t.noDream, "no-dream"}, {&t.suggestions, "suggestions"}} {
		if t.fs != nil && t.fs.Changed(f.name) {
			continue
		}
		if s := getenv(envName(f.name)); s != "" {
			b, err := strconv.ParseBool(s)
			if err != nil {
				return fmt.Errorf("%s=%q: want true or false", envName(f.name), s)
			}
			*f.v = b
		}
	}
	return nil
}

// config is the pipeline's configuration: extraction and consolidation
// over mem when it is file memory, the steps' model the cheap one when
// given (nil: the turn's), refused calls of the memory agents to sink.
func (t *turnEndFlags) config(mem prompt.MemorySource, cheap llm.Provider, cheapModel string, sink audit.Sink, log *slog.Logger) turnend.Config {
	fs, _ := mem.(*memory.FileStore)
	cfg := turnend.Config{Suggest: t.suggestions, Provider: cheap, Model: cheapModel, Audit: sink, Logger: log}
	if fs != nil {
		cfg.Memory, cfg.Extract, cfg.Dream = fs, !t.noExtract, !t.noDream
	}
	return cfg
}

// cliTurnEndDrain bounds how long weft run and chat wait, as they exit,
// for an extraction or consolidation still running.
const cliTurnEndDrain = 20 * time.Second

// cliTurnEnd is the pipeline of one weft run or chat.
type cliTurnEnd struct {
	p       *turnend.Pipeline
	session string
}

// ended hands a finished run of s to the pipeline. With suggestions on
// and a run that finished, it returns the channel they arrive on (one
// value, maybe empty); nil otherwise.
func (c *cliTurnEnd) ended(a *agent.Agent, s *agent.Session, stop string) <-chan event.SuggestionsData {
	if c == nil || !c.p.Enabled() {
		return nil
	}
	cfg := a.Config()
	t := turnend.Turn{Session: c.session, Messages: s.Messages(), Provider: cfg.Provider, Model: cfg.Model, StopReason: stop}
	var ch chan event.SuggestionsData
	if c.p.Suggests() && (stop == agent.StopEndTurn || stop == agent.StopSequence) {
		ch = make(chan event.SuggestionsData, 1)
		t.Suggest = func(d event.SuggestionsData) { ch <- d }
	}
	c.p.TurnEnded(t)
	return ch
}

// printSuggestions waits for the suggestions on ch (the pipeline bounds
// the wait with its timeout; an interrupt or ctx ends it sooner) and
// prints them, dim on a terminal.
func printSuggestions(ctx context.Context, ch <-chan event.SuggestionsData, interrupts <-chan os.Signal, w io.Writer) {
	if ch == nil {
		return
	}
	var d event.SuggestionsData
	select {
	case d = <-ch:
	case <-interrupts:
		return
	case <-ctx.Done():
		return
	case <-time.After(turnend.DefaultSuggestTimeout + 2*time.Second):
		return // the pipeline's own bound failed: never hang the REPL
	}
	if len(d.Suggestions) == 0 {
		return
	}
	dim, reset := "", ""
	if f, ok := w.(*os.File); ok && isTerminal(f) {
		dim, reset = "\x1b[2m", "\x1b[0m"
	}
	var b strings.Builder
	for _, s := range d.Suggestions {
		fmt.Fprintf(&b, "%s  → %s%s\n", dim, strings.Join(strings.Fields(s), " "), reset)
	}
	fmt.Fprint(w, b.String())
}

// serveConfig is weft serve's pipeline: the cheap model is
// --compact-model's when set.
func (t *turnEndFlags) serveConfig(models interface {
	Resolve(string) (llm.Provider, llm.ModelInfo, error)
}, compactModel string, mem prompt.MemorySource, log *slog.Logger) (turnend.Config, error) {
	var cheap llm.Provider
	var model string
	if compactModel != "" {
		p, info, err := models.Resolve(compactModel)
		if err != nil {
			return turnend.Config{}, fmt.Errorf("--compact-model: %w", err)
		}
		cheap, model = p, info.ID
	}
	// The audit sink is the app's (the store's trail included).
	return t.config(mem, cheap, model, nil, log), nil
}
