package agent

import (
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/prompt"
	"github.com/weft-run/weft/vision"
)

// systemPrompt is the system prompt of one model call: Config.System as
// it is, or what Config.Prompt builds for this model, tools and bundle.
// It is built for every call so that edited instruction files take effect
// at the next turn; the builder re-reads a file only when it changed and
// keeps the bytes identical otherwise, which the prompt cache needs.
func (r *run) systemPrompt(tools []llm.ToolSpec) []llm.Block {
	cfg := &r.a.cfg
	if cfg.Prompt == nil {
		return llm.SystemText(cfg.System)
	}
	p := cfg.Prompt.Build(r.ctx, prompt.Request{
		Model: cfg.Model, Provider: cfg.Provider.Name(), Key: r.a.bundle, Tools: tools, Replace: cfg.System,
	})
	// Instruction files are the project's text, not the model's, but the
	// rule holds for everything sent: no registered secret's value.
	if sec := r.a.pol.Secrets; sec != nil {
		for i := range p.Blocks {
			p.Blocks[i].Text = sec.Redact(p.Blocks[i].Text)
		}
	}
	return p.Blocks
}

// stableText is the text of the first system block: the part that names
// the conversation (volatile sections, in a later block, change).
func stableText(system []llm.Block) string {
	if len(system) == 0 {
		return ""
	}
	return system[0].Text
}

// prepareImages hands a model that cannot see images (by the catalogue)
// the vision model's descriptions instead, or notes saying why they are
// missing. The request's messages are copies; the history keeps the
// images, for a later model that can see them.
func (r *run) prepareImages(req *llm.Request) {
	if !r.a.info.Known || r.a.info.Images {
		return
	}
	vision.Replace(r.ctx, req, r.a.cfg.Vision, r.a.cfg.Model)
}
