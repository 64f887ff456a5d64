package prompt

import (
	"context"
	"time"

	"github.com/weft-run/weft/llm"
)

// Env is what a dynamic section may read about the session (seed 000's
// context values). The builder puts it in the ctx it computes sections
// with; the accessors below read it.
type Env struct {
	// Cwd is the workspace the tools work in.
	Cwd string
	// RepoRoot is the enclosing repository's root ("" outside one).
	RepoRoot string
	// ModelID and Provider name the model the prompt is for.
	ModelID  string
	Provider string
	// Bundle is the key the bundle was resolved under.
	Bundle BundleKey
	// Tools are the tools the model may call, in registration order.
	Tools []llm.ToolSpec
	// Instructions is the project instructions text (AGENTS.md,
	// CLAUDE.md), already capped; "" when there are none.
	Instructions string
	// Skills are the skills the Skill tool can load (empty when the tool
	// is not among Tools).
	Skills []Skill
	// Memory is the memory section's text (Config.Memory), "" for none.
	Memory string
	// Append is the caller's text to add at the end (--append-system).
	Append string
	// Language is the prompt's language ("en", "zh"), for sections shared
	// between bundles.
	Language string
	// Date is the day the prompt is built on.
	Date time.Time
	// OS and Arch are the platform the tools run on.
	OS, Arch string
}

type envCtx struct{}

// WithEnv returns ctx carrying env, as the builder does before it computes
// sections; for tests of a bundle of your own.
func WithEnv(ctx context.Context, env Env) context.Context {
	return context.WithValue(ctx, envCtx{}, env)
}

// EnvFrom returns the Env in ctx (the zero Env when there is none).
func EnvFrom(ctx context.Context) Env {
	e, _ := ctx.Value(envCtx{}).(Env)
	return e
}

// CwdFromCtx and the functions after it are seed 000's accessors.
func CwdFromCtx(ctx context.Context) string { return EnvFrom(ctx).Cwd }

// ModelIDFromCtx is the model the prompt is built for.
func ModelIDFromCtx(ctx context.Context) string { return EnvFrom(ctx).ModelID }

// ToolDescriptionsFromCtx are the tools the model may call.
func ToolDescriptionsFromCtx(ctx context.Context) []llm.ToolSpec { return EnvFrom(ctx).Tools }

// AppendPromptFromCtx is the caller's appended text.
func AppendPromptFromCtx(ctx context.Context) string { return EnvFrom(ctx).Append }

// PromptLanguageFromCtx is the prompt's language ("en" or "zh").
func PromptLanguageFromCtx(ctx context.Context) string { return EnvFrom(ctx).Language }

// InstructionsFromCtx is the project instructions text.
func InstructionsFromCtx(ctx context.Context) string { return EnvFrom(ctx).Instructions }

// SkillsFromCtx are the skills the model may load.
func SkillsFromCtx(ctx context.Context) []Skill { return EnvFrom(ctx).Skills }

// MemoryFromCtx is the memory section's text.
func MemoryFromCtx(ctx context.Context) string { return EnvFrom(ctx).Memory }
