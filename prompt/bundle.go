package prompt

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// Bundle is a system prompt as a list of sections (seed 000's
// PromptBundle). StaticSections are the fixed text; DynamicSections are
// computed per session (Kind Dynamic) or per call (Kind Volatile). The
// assembler orders them by kind, static first, whatever the lists say.
type Bundle interface {
	StaticSections() []*Section
	DynamicSections() []*Section
}

// BundleKey names a bundle by model family and scenario.
type BundleKey struct {
	ModelFamily string `json:"model_family"` // "claude", "qwen", "deepseek", "gpt", "gemini", ...
	Scenario    string `json:"scenario"`     // "programming", "warehouse", ...
}

// DefaultFamily and DefaultScenario make DefaultKey, the key of the
// built-in English programming bundle every other key falls back to.
const (
	DefaultFamily   = "claude"
	DefaultScenario = "programming"
)

// DefaultKey is the default bundle's key.
var DefaultKey = BundleKey{DefaultFamily, DefaultScenario}

// KeyFor is a BundleKey; names are lower-cased and trimmed.
func KeyFor(family, scenario string) BundleKey {
	return BundleKey{ModelFamily: normKeyPart(family), Scenario: normKeyPart(scenario)}
}

func normKeyPart(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// String is "family/scenario", the form ParseKey reads.
func (k BundleKey) String() string { return k.ModelFamily + "/" + k.Scenario }

// IsZero reports whether the key names nothing (infer everything).
func (k BundleKey) IsZero() bool { return k.ModelFamily == "" && k.Scenario == "" }

// maxKeyPart bounds a key's parts: they come from HTTP requests.
const maxKeyPart = 64

// ParseKey reads a bundle key as the CLI (--bundle) and the HTTP API
// ("bundle", X-Weft-Bundle) take it: "family/scenario", "family" (the
// default scenario) or "/scenario" (the family inferred from the model).
// "" is the zero key: everything inferred. Parts are letters, digits,
// '.', '_' and '-', at most 64 characters each.
func ParseKey(s string) (BundleKey, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return BundleKey{}, nil
	}
	family, scenario, _ := strings.Cut(s, "/")
	k := KeyFor(family, scenario)
	for _, part := range []string{k.ModelFamily, k.Scenario} {
		if len(part) > maxKeyPart {
			return BundleKey{}, fmt.Errorf("bundle %q: a part is longer than %d characters", s, maxKeyPart)
		}
		for _, c := range part {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
				return BundleKey{}, fmt.Errorf("bundle %q: want family/scenario of letters, digits, '.', '_' and '-' (e.g. qwen/programming)", s)
			}
		}
	}
	if k.IsZero() {
		return BundleKey{}, fmt.Errorf("bundle %q: want family/scenario (e.g. qwen/programming)", s)
	}
	return k, nil
}

// families maps model-name prefixes to families, longest match first
// within each entry's list. The family decides the default bundle: the
// Chinese one for qwen, deepseek, ernie, glm and hunyuan.
var families = []struct {
	family   string
	prefixes []string
}{
	{"claude", []string{"claude"}},
	{"gpt", []string{"gpt", "chatgpt", "o1", "o3", "o4", "codex"}},
	{"gemini", []string{"gemini"}},
	{"qwen", []string{"qwen", "qwq", "qvq"}},
	{"deepseek", []string{"deepseek"}},
	{"ernie", []string{"ernie"}},
	{"glm", []string{"glm", "chatglm", "codegeex"}},
	{"hunyuan", []string{"hunyuan"}},
	{"kimi", []string{"kimi", "moonshot"}},
	{"minimax", []string{"minimax", "abab"}},
	{"llama", []string{"llama", "codellama"}},
	{"mistral", []string{"mistral", "mixtral", "codestral", "devstral", "magistral"}},
}

// FamilyOf infers a model's family from its id, as seed 000 does
// (claude-sonnet-4-5 is "claude", gpt-4o "gpt", gemini-2.5-pro "gemini",
// qwen-max "qwen"), or "" when the id names no family weft knows (the
// default bundle then applies). The id may carry a provider
// ("dashscope:qwen-max", "openai-compatible:qwen-max") and a vendor path
// ("openrouter:qwen/qwen3-coder", "vllm:Qwen/Qwen2.5-72B"): the model's
// own name decides first, then its vendor, then the provider.
func FamilyOf(model string) string {
	parts := strings.FieldsFunc(strings.ToLower(model), func(r rune) bool { return r == ':' || r == '/' })
	for i := len(parts) - 1; i >= 0; i-- {
		p := parts[i]
		for _, f := range families {
			for _, prefix := range f.prefixes {
				if !strings.HasPrefix(p, prefix) {
					continue
				}
				// "o1" must not claim "o1x-foo"; a family name is followed
				// by the end, a digit, or a separator.
				rest := p[len(prefix):]
				if rest == "" || rest[0] >= '0' && rest[0] <= '9' || strings.ContainsRune("-_.@", rune(rest[0])) || len(prefix) > 2 {
					return f.family
				}
			}
		}
	}
	return ""
}

// Registry holds bundles by key. It is safe for concurrent use; bundles
// may be registered (or replaced) while agents resolve them.
type Registry struct {
	mu      sync.RWMutex
	bundles map[BundleKey]Bundle
	gen     uint64 // counts registrations
}

func (r *Registry) generation() uint64 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.gen
}

// NewRegistry returns a registry holding weft's built-in bundles: the
// English programming bundle under DefaultKey and the Chinese one under
// ChineseBundleKeys().
func NewRegistry() *Registry {
	r := &Registry{bundles: map[BundleKey]Bundle{DefaultKey: DefaultBundle()}}
	RegisterChineseBundle(r)
	return r
}

// Register adds b under key, replacing what was there; registering under
// DefaultKey replaces the default every unknown key falls back to. A key
// with an empty part, or a nil bundle, is ignored (with the zero key, a
// caller's mistake would otherwise shadow inference).
func (r *Registry) Register(key BundleKey, b Bundle) {
	key = KeyFor(key.ModelFamily, key.Scenario)
	if b == nil || key.ModelFamily == "" || key.Scenario == "" {
		return
	}
	r.mu.Lock()
	if r.bundles == nil {
		r.bundles = map[BundleKey]Bundle{}
	}
	r.bundles[key] = b
	r.gen++
	r.mu.Unlock()
}

// Keys lists the registered keys, sorted.
func (r *Registry) Keys() []BundleKey {
	r.mu.RLock()
	defer r.mu.RUnlock()
	keys := make([]BundleKey, 0, len(r.bundles))
	for k := range r.bundles {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b BundleKey) int { return strings.Compare(a.String(), b.String()) })
	return keys
}

// Resolve returns the bundle for key and the key it was found under: the
// exact key, else the family's bundle for the default scenario, else the
// default bundle (seed 000: an unknown key falls back, never fails). Empty
// parts of key mean the default family and scenario.
func (r *Registry) Resolve(key BundleKey) (Bundle, BundleKey) {
	key = KeyFor(key.ModelFamily, key.Scenario)
	if key.ModelFamily == "" {
		key.ModelFamily = DefaultFamily
	}
	if key.Scenario == "" {
		key.Scenario = DefaultScenario
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, k := range []BundleKey{key, {key.ModelFamily, DefaultScenario}, DefaultKey} {
		if b, ok := r.bundles[k]; ok {
			return b, k
		}
	}
	// A registry whose default was never set (the zero Registry).
	return DefaultBundle(), DefaultKey
}

type bundleKeyCtx struct{}

// WithBundleKey selects the bundle for the runs started with ctx (seed
// 000's per-request choice): it wins over the agent's configured key and
// over the one inferred from the model. Zero parts are inferred.
func WithBundleKey(ctx context.Context, key BundleKey) context.Context {
	return context.WithValue(ctx, bundleKeyCtx{}, key)
}

// BundleKeyFrom returns the key WithBundleKey put in ctx.
func BundleKeyFrom(ctx context.Context) (BundleKey, bool) {
	k, ok := ctx.Value(bundleKeyCtx{}).(BundleKey)
	return k, ok
}

// funcBundle is NewBundleFromFunc's bundle.
type funcBundle struct {
	static, dynamic func() []*Section
}

// NewBundleFromFunc is a bundle defined from scratch: static returns its
// fixed sections, dynamic its computed ones (Dynamic or Volatile). Either
// may be nil.
func NewBundleFromFunc(static, dynamic func() []*Section) Bundle {
	return &funcBundle{static, dynamic}
}

func (b *funcBundle) StaticSections() []*Section {
	if b.static == nil {
		return nil
	}
	return b.static()
}

func (b *funcBundle) DynamicSections() []*Section {
	if b.dynamic == nil {
		return nil
	}
	return b.dynamic()
}

// Overlay is a bundle that replaces some sections of a base bundle by
// name and keeps the rest (seed 000's BundleOverlay). Each Override
// returns a new Overlay, so a registered overlay never changes under a
// reader. Overriding a name the base does not have does nothing (seed
// 000): add new sections with NewBundleFromFunc or your own Bundle.
type Overlay struct {
	base      Bundle
	overrides map[string]*Section
}

// NewOverlay starts an overlay of base.
func NewOverlay(base Bundle) *Overlay { return &Overlay{base: base} }

// NewBundleOverlay is NewOverlay under seed 000's name.
func NewBundleOverlay(base Bundle) *Overlay { return NewOverlay(base) }

// OverrideStatic replaces the section name by fixed text.
func (o *Overlay) OverrideStatic(name, text string) *Overlay {
	return o.OverrideSection(StaticSection(name, text))
}

// OverrideDynamic replaces the section name by text computed per session.
func (o *Overlay) OverrideDynamic(name string, fn func(ctx context.Context) string) *Overlay {
	return o.OverrideSection(DynamicSection(name, fn))
}

// OverrideVolatile replaces the section name by text computed for every
// call; reason says why (it costs the prompt cache).
func (o *Overlay) OverrideVolatile(name string, fn func(ctx context.Context) string, reason string) *Overlay {
	return o.OverrideSection(VolatileSection(name, fn, reason))
}

// OverrideSection replaces the section of the same name by s, kind and
// all.
func (o *Overlay) OverrideSection(s *Section) *Overlay {
	n := &Overlay{base: o.base, overrides: make(map[string]*Section, len(o.overrides)+1)}
	for k, v := range o.overrides {
		n.overrides[k] = v
	}
	if s != nil {
		n.overrides[s.Name] = s
	}
	return n
}

func (o *Overlay) apply(list []*Section) []*Section {
	out := make([]*Section, len(list))
	for i, s := range list {
		if r, ok := o.overrides[s.Name]; ok && s != nil {
			s = r
		}
		out[i] = s
	}
	return out
}

func (o *Overlay) StaticSections() []*Section {
	if o.base == nil {
		return nil
	}
	return o.apply(o.base.StaticSections())
}

func (o *Overlay) DynamicSections() []*Section {
	if o.base == nil {
		return nil
	}
	return o.apply(o.base.DynamicSections())
}
