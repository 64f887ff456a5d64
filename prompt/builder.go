package prompt

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/weft-run/weft/llm"
)

// Config configures a Builder. Zero values are documented per field.
type Config struct {
	// Bundles holds the bundles to choose from; nil means NewRegistry()
	// (the English default and the Chinese bundle).
	Bundles *Registry
	// Key is the bundle to use when a request names none; its empty parts
	// are inferred (the family from the model id, the scenario
	// DefaultScenario).
	Key BundleKey
	// Workspace is the directory the agent works in: the environment
	// section names it, and project instructions and skills are found from
	// it up to the repository root. "" means no project files.
	Workspace string
	// Home is the user's home directory, for ~/.weft/AGENTS.md,
	// ~/.claude/CLAUDE.md and the user's skills; "" means none.
	Home string
	// Append is added after everything else (--append-system).
	Append string
	// MaxInstructionFile and MaxInstructionTotal cap the project
	// instructions, per file and in all; 0 means the defaults.
	MaxInstructionFile, MaxInstructionTotal int
	// NoInstructions reads no AGENTS.md or CLAUDE.md; NoSkills lists no
	// skills (and SkillTool finds none).
	NoInstructions, NoSkills bool
	// Logger receives warnings about unusable instruction and skill files
	// (once per file and problem); nil means slog.Default().
	Logger *slog.Logger
	// Now gives the date the environment section shows; nil means
	// time.Now.
	Now func() time.Time
	// Memory supplies the memory section (what the agent remembered in
	// earlier sessions, package memory's FileStore); nil means none.
	Memory MemorySource
}

// MemorySource renders the agent's memory for the system prompt: an
// XML-tagged section, "" when there is nothing to show. Implementations
// cache (the builder asks on every model call) and keep their bytes
// stable while the memory does not change, because the section is part of
// the prompt's stable block.
type MemorySource interface {
	MemoryPrompt(ctx context.Context) string
}

// Builder assembles system prompts. It is safe for concurrent use and
// meant to be shared by every session of a front door: it caches the
// instruction and skill files it read (re-reading one only when its size
// or modification time changes) and the text of dynamic sections.
type Builder struct {
	cfg     Config
	bundles *Registry
	instr   *instructions
	skills  *skillSet
	log     *slog.Logger

	mu sync.Mutex
	// memo holds dynamic sections' text by section and environment, so
	// that a section is computed once per distinct environment: its bytes
	// then stay the same across the turns of a session whatever its
	// function does (reads a clock, say), which the prompt cache needs.
	memo map[string]string
}

// maxMemo bounds the memo; it is emptied when full.
const maxMemo = 1024

// New returns a builder for cfg.
func New(cfg Config) *Builder {
	b := &Builder{cfg: cfg, bundles: cfg.Bundles, log: cfg.Logger, memo: map[string]string{}}
	if b.bundles == nil {
		b.bundles = NewRegistry()
	}
	if b.log == nil {
		b.log = slog.Default()
	}
	if cfg.Workspace != "" {
		if abs, err := filepath.Abs(cfg.Workspace); err == nil {
			b.cfg.Workspace = abs
		}
	}
	b.instr = newInstructions(b.cfg.Workspace, cfg.Home, cfg.MaxInstructionFile, cfg.MaxInstructionTotal, b.log)
	b.skills = newSkillSet(b.cfg.Workspace, cfg.Home, b.log)
	return b
}

// Bundles is the builder's registry (register bundles of your own on it).
func (b *Builder) Bundles() *Registry { return b.bundles }

// Request is what a system prompt is built for.
type Request struct {
	// Model and Provider name the model; the bundle's family is inferred
	// from them when no key names it.
	Model, Provider string
	// Key is the caller's choice of bundle (agent.Config.Bundle); the
	// context's WithBundleKey wins over it, and it over Config.Key.
	Key BundleKey
	// Tools are the tools the model may call, in the order they are sent.
	Tools []llm.ToolSpec
	// Replace, when set, stands in for the bundle's own sections (weft's
	// role, guidance, environment and tool list: --system); the project's
	// instructions, the skills and Config.Append still follow it.
	Replace string
}

// Prompt is a built system prompt.
type Prompt struct {
	// Blocks are the system blocks to send: the static and dynamic
	// sections in one, then, when there are any, the volatile ones in a
	// second, so that the first stays byte-stable for the prompt cache.
	Blocks []llm.Block
	// Key is the bundle used: the key it was registered under.
	Key BundleKey
	// Instructions are the instruction files read; Skills the skills
	// listed.
	Instructions []InstructionFile
	Skills       []Skill
}

// Text is the prompt's blocks joined, as a provider without system blocks
// would see it.
func (p Prompt) Text() string {
	parts := make([]string, 0, len(p.Blocks))
	for _, bl := range p.Blocks {
		parts = append(parts, bl.Text)
	}
	return strings.Join(parts, "\n\n")
}

// key is the bundle key a request resolves to before fallback: each part
// from the context's key, else the request's, else the configured one;
// the family then inferred from the model, the scenario DefaultScenario.
func (b *Builder) key(ctx context.Context, req Request) BundleKey {
	keys := []BundleKey{req.Key, b.cfg.Key}
	if ck, ok := BundleKeyFrom(ctx); ok {
		keys = append([]BundleKey{ck}, keys...)
	}
	var k BundleKey
	for _, c := range keys {
		c = KeyFor(c.ModelFamily, c.Scenario)
		if k.ModelFamily == "" {
			k.ModelFamily = c.ModelFamily
		}
		if k.Scenario == "" {
			k.Scenario = c.Scenario
		}
	}
	if k.ModelFamily == "" {
		k.ModelFamily = FamilyOf(req.Model)
		if k.ModelFamily == "" && req.Provider != "" {
			k.ModelFamily = FamilyOf(req.Provider + ":" + req.Model)
		}
	}
	return k
}

// Build assembles the system prompt for one model call.
func (b *Builder) Build(ctx context.Context, req Request) Prompt {
	bundle, key := b.bundles.Resolve(b.key(ctx, req))
	lang := languageOf(bundle)
	env := Env{Cwd: b.cfg.Workspace, ModelID: req.Model, Provider: req.Provider, Bundle: key, Tools: req.Tools,
		Append: b.cfg.Append, Language: lang, OS: runtime.GOOS, Arch: runtime.GOARCH}
	now := time.Now
	if b.cfg.Now != nil {
		now = b.cfg.Now
	}
	t := now()
	env.Date = time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, t.Location())
	var p Prompt
	p.Key = key
	if !b.cfg.NoInstructions {
		env.Instructions, env.RepoRoot, p.Instructions = b.instr.load()
	} else if b.cfg.Workspace != "" {
		_, env.RepoRoot = projectDirs(b.cfg.Workspace, b.cfg.Home)
	}
	if b.cfg.Memory != nil {
		env.Memory = b.cfg.Memory.MemoryPrompt(ctx)
	}
	if !b.cfg.NoSkills && hasTool(req.Tools, SkillToolName) {
		env.Skills = b.skills.list()
		p.Skills = env.Skills
	}

	static, dynamic := bundle.StaticSections(), bundle.DynamicSections()
	if req.Replace != "" {
		static = []*Section{StaticSection("system", req.Replace)}
		var keep []*Section
		for _, s := range dynamic {
			if s != nil && s.Name != "env_info" && s.Name != "tool_descs" {
				keep = append(keep, s)
			}
		}
		dynamic = keep
	}
	sctx := WithEnv(ctx, env)
	fp := fingerprint(env, req.Replace)
	var stable, volatile []string
	add := func(list *[]string, text string) {
		if text = strings.TrimSpace(text); text != "" {
			*list = append(*list, text)
		}
	}
	all := append(append([]*Section(nil), static...), dynamic...)
	if env.Memory != "" && !hasSection(all, MemorySectionName) {
		// A bundle of someone else's that predates memory still shows it.
		all = append(all, DynamicSection(MemorySectionName, memoryText))
	}
	for _, kind := range []Kind{Static, Dynamic} {
		for _, s := range all {
			if s != nil && s.Kind == kind {
				add(&stable, b.dynamicText(sctx, s, key, fp))
			}
		}
	}
	for _, s := range all {
		if s != nil && s.Kind == Volatile {
			add(&volatile, s.text(sctx))
		}
	}
	if len(stable) > 0 {
		p.Blocks = append(p.Blocks, llm.Text(strings.Join(stable, "\n\n")))
	}
	if len(volatile) > 0 {
		p.Blocks = append(p.Blocks, llm.Text(strings.Join(volatile, "\n\n")))
	}
	return p
}

// dynamicText is a static section's text, or a dynamic one's from the
// memo when its environment is unchanged.
func (b *Builder) dynamicText(ctx context.Context, s *Section, key BundleKey, fp string) string {
	if s.Kind == Static || s.Compute == nil {
		return s.Text
	}
	// The registry's generation: a bundle registered anew under the same
	// key computes afresh.
	mk := fmt.Sprintf("%d\x00%s\x00%s\x00%s", b.bundles.generation(), key, s.Name, fp)
	b.mu.Lock()
	text, ok := b.memo[mk]
	b.mu.Unlock()
	if ok {
		return text
	}
	text = s.text(ctx)
	b.mu.Lock()
	if len(b.memo) >= maxMemo {
		clear(b.memo)
	}
	b.memo[mk] = text
	b.mu.Unlock()
	return text
}

// fingerprint names an environment: everything a dynamic section may read.
func fingerprint(env Env, replace string) string {
	h := sha256.New()
	enc := json.NewEncoder(h)
	_ = enc.Encode(env)
	h.Write([]byte(replace))
	return hex.EncodeToString(h.Sum(nil)[:16])
}

func hasSection(list []*Section, name string) bool {
	for _, s := range list {
		if s != nil && s.Name == name {
			return true
		}
	}
	return false
}

func hasTool(tools []llm.ToolSpec, name string) bool {
	for _, t := range tools {
		if t.Name == name {
			return true
		}
	}
	return false
}
