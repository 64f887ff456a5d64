package main

import (
	"fmt"
	"log/slog"
	"strconv"

	"github.com/spf13/pflag"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/registry"
	"github.com/weft-run/weft/prompt"
	"github.com/weft-run/weft/tool"
	"github.com/weft-run/weft/tool/builtin"
	"github.com/weft-run/weft/vision"
)

// promptFlags shape the system prompt: run, chat and serve share them.
// (--system is each command's own: it predates them.)
type promptFlags struct {
	appendSystem string
	bundle       string
	visionModel  string
	noMemory     bool
	// mem is the file memory openMemory opened; builder shows it.
	mem prompt.MemorySource
}

func (p *promptFlags) register(f *pflag.FlagSet) {
	f.StringVar(&p.appendSystem, "append-system", "", "text added at the end of the system prompt, after weft's (or --system's) and the project's instructions")
	f.StringVar(&p.bundle, "bundle", "", "prompt bundle as family/scenario, e.g. qwen/programming or claude/programming (default: the bundle for the model's family; see docs/agents.md)")
	f.BoolVar(&p.noMemory, "no-memory", false, "no file memory: no memory_remember/search/forget tools and no memory section in the system prompt (see docs/memory.md)")
	f.StringVar(&p.visionModel, "vision-model", "", "provider:model that describes images for a model without image input, e.g. gemini:gemini-2.5-flash (images are otherwise replaced by a note)")
}

// fromEnv fills the flags left empty from WEFT_APPEND_SYSTEM, WEFT_BUNDLE,
// WEFT_VISION_MODEL and WEFT_NO_MEMORY (weft serve does this for every
// flag itself).
func (p *promptFlags) fromEnv(getenv func(string) string) {
	for _, f := range []struct {
		v    *string
		name string
	}{{&p.appendSystem, "WEFT_APPEND_SYSTEM"}, {&p.bundle, "WEFT_BUNDLE"}, {&p.visionModel, "WEFT_VISION_MODEL"}} {
		if *f.v == "" {
			*f.v = getenv(f.name)
		}
	}
	if v, err := strconv.ParseBool(getenv("WEFT_NO_MEMORY")); err == nil && v {
		p.noMemory = true
	}
}

// builder is the prompt builder of a command working in ws.
func (p *promptFlags) builder(env environ, ws string, log *slog.Logger) (*prompt.Builder, error) {
	key, err := prompt.ParseKey(p.bundle)
	if err != nil {
		return nil, fmt.Errorf("--bundle: %w", err)
	}
	return prompt.New(prompt.Config{Key: key, Workspace: ws, Home: env.getenv("HOME"), Append: p.appendSystem, Logger: log, Memory: p.mem}), nil
}

// describer resolves --vision-model through reg; nil without one.
func (p *promptFlags) describer(reg *registry.Registry, log *slog.Logger) (*vision.Describer, error) {
	if p.visionModel == "" {
		return nil, nil
	}
	vp, info, err := reg.Resolve(p.visionModel)
	if err != nil {
		return nil, fmt.Errorf("--vision-model: %w", err)
	}
	if info.Known && !info.Images {
		return nil, fmt.Errorf("--vision-model %s: the model catalogue says it does not accept images; pick one that does (or say it does in a models file, docs/models.md)", p.visionModel)
	}
	return vision.New(vision.Config{Provider: vp, Model: info.ID, Logger: log}), nil
}

// promptTools are the tools the prompt features add: Skill always, and
// describe_image for a model the catalogue knows cannot see images.
func promptTools(pb *prompt.Builder, cfg builtin.Config, info llm.ModelInfo, d *vision.Describer) []tool.Tool {
	tools := []tool.Tool{pb.SkillTool()}
	if info.Known && !info.Images {
		var desc builtin.ImageDescriber
		if d != nil {
			desc = d
		}
		tools = append(tools, builtin.NewDescribeImage(cfg, desc))
	}
	return tools
}
