// Package prompt builds weft's system prompt: a bundle of named sections
// chosen for the model's family and the scenario (seed 000's PromptBundle),
// the environment the agent works in, the project's instructions
// (AGENTS.md, CLAUDE.md) and the skills it may load (SKILL.md, Claude
// Code's format, through the Skill tool).
//
// A system prompt is sent with every model call, and providers cache a
// prompt's prefix only while it stays byte-for-byte the same. So sections
// come in three kinds, assembled in this order whatever order a bundle
// lists them in: static text (the role, the rules; the same for every
// session), dynamic text (computed from the session: working directory,
// model, tools, instructions, skills; the same bytes while those do not
// change) and volatile text (recomputed for every call, which costs the
// cache everything after it). Static and dynamic sections form the first
// system block, volatile ones a second, so that a provider's breakpoint
// on the system prompt covers the stable part whenever nothing volatile
// is used.
//
// Instructions and skills are prompt text only: nothing in them changes
// which tool calls the policy allows (a skill's allowed-tools is ignored).
package prompt

import "context"

// Kind says when a section's text is computed.
type Kind int

const (
	// Static text never changes: it is the same for every session.
	Static Kind = iota
	// Dynamic text is computed from the session's environment (working
	// directory, model, tools, instructions, skills, the date) and is
	// recomputed only when one of those changes, so that it stays
	// byte-stable across the turns of a session.
	Dynamic
	// Volatile text is recomputed for every model call. It is placed after
	// everything else, in a system block of its own; when it changes, the
	// provider's cache of everything after it is lost. Use it sparingly.
	Volatile
)

func (k Kind) String() string {
	switch k {
	case Static:
		return "static"
	case Dynamic:
		return "dynamic"
	case Volatile:
		return "volatile"
	}
	return "unknown"
}

// Section is one named part of a system prompt. Sections are values a
// bundle hands out; treat them as immutable once a bundle is registered.
type Section struct {
	// Name identifies the section within its bundle ("intro",
	// "env_info", ...); overlays replace sections by name.
	Name string
	Kind Kind
	// Text is a static section's text.
	Text string
	// Compute returns a dynamic or volatile section's text; ctx carries
	// the session's values (CwdFrom, ModelIDFrom, ToolDescriptionsFrom,
	// ...). An empty result leaves the section out.
	Compute func(ctx context.Context) string
	// Reason says why a volatile section must be recomputed every call
	// (documentation for whoever wonders why the cache breaks).
	Reason string
}

// StaticSection is a section of fixed text.
func StaticSection(name, text string) *Section {
	return &Section{Name: name, Kind: Static, Text: text}
}

// DynamicSection is a section computed from the session's environment.
func DynamicSection(name string, fn func(ctx context.Context) string) *Section {
	return &Section{Name: name, Kind: Dynamic, Compute: fn}
}

// VolatileSection is a section recomputed for every model call; reason
// says why it has to be.
func VolatileSection(name string, fn func(ctx context.Context) string, reason string) *Section {
	return &Section{Name: name, Kind: Volatile, Compute: fn, Reason: reason}
}

// text renders the section in ctx.
func (s *Section) text(ctx context.Context) string {
	if s == nil {
		return ""
	}
	if s.Kind == Static || s.Compute == nil {
		return s.Text
	}
	return s.Compute(ctx)
}
