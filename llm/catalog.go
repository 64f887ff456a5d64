package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
)

// ModelInfo is what weft knows about one model: its limits, its list prices
// and what it can do.
type ModelInfo struct {
	ID          string `json:"id"`
	Provider    string `json:"provider"`
	DisplayName string `json:"display_name,omitempty"`

	ContextWindow   int `json:"context_window"`
	MaxOutputTokens int `json:"max_output_tokens"`

	// Prices are USD per million tokens. InputPrice applies to uncached
	// prompt tokens only (Usage.InputTokens already excludes cached ones).
	InputPrice      float64 `json:"input_price"`
	OutputPrice     float64 `json:"output_price"`
	CacheReadPrice  float64 `json:"cache_read_price"`
	CacheWritePrice float64 `json:"cache_write_price"`

	Thinking bool `json:"thinking"`
	Images   bool `json:"images"`
	Caching  bool `json:"caching"`
	Tools    bool `json:"tools"`

	// Known is false for the conservative defaults that Lookup gives a
	// model the catalogue does not have, so that callers can warn that
	// limits are guessed and cost is not tracked.
	Known bool `json:"known"`
}

// Cost is the list price of a call's usage in USD.
func (m ModelInfo) Cost(u Usage) float64 {
	return (float64(u.InputTokens)*m.InputPrice +
		float64(u.OutputTokens)*m.OutputPrice +
		float64(u.CacheReadTokens)*m.CacheReadPrice +
		float64(u.CacheWriteTokens)*m.CacheWritePrice) / 1e6
}

// Conservative limits for models the catalogue does not know: small enough
// that every current chat model accepts them, so that an unknown model is
// not sent a max_tokens it rejects.
const (
	UnknownContextWindow   = 32768
	UnknownMaxOutputTokens = 4096
)

// Catalog is a table of models keyed by provider and id. It is safe for
// concurrent use.
type Catalog struct {
	mu     sync.RWMutex
	models map[string]map[string]ModelInfo // provider -> id -> info
}

// NewCatalog returns a catalogue holding models (later entries replace
// earlier ones with the same provider and id).
func NewCatalog(models ...ModelInfo) *Catalog {
	c := &Catalog{models: map[string]map[string]ModelInfo{}}
	for _, m := range models {
		c.add(m)
	}
	return c
}

// DefaultCatalog returns a new catalogue holding the built-in table. Each
// call returns a fresh copy, so that one caller's overrides never leak into
// another's.
func DefaultCatalog() *Catalog { return NewCatalog(builtinModels()...) }

// Add adds m, or replaces the entry with the same provider and id. Catalogued
// entries are Known by definition.
func (c *Catalog) Add(m ModelInfo) {
	c.mu.Lock()
	c.add(m)
	c.mu.Unlock()
}

func (c *Catalog) add(m ModelInfo) {
	m.Known = true
	byID := c.models[m.Provider]
	if byID == nil {
		byID = map[string]ModelInfo{}
		c.models[m.Provider] = byID
	}
	byID[m.ID] = m
}

// Lookup returns what the catalogue knows about provider's model. It tries
// the exact id, then the longest catalogued id that is a prefix of model
// followed by '-', '@' or ':', so that dated snapshots
// (claude-sonnet-4-5-20250929), Vertex-style versions (claude-opus-4-1@20250805)
// and Ollama tags (llama3.3:70b) find their family's entry. An empty
// provider searches every provider (in List order).
//
// The result's ID is always the model asked for (not the entry it matched),
// because that is the name to send to the server. A model the catalogue does
// not have gets conservative defaults with Known false.
func (c *Catalog) Lookup(provider, model string) ModelInfo {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var (
		best  ModelInfo
		found bool
	)
	try := func(byID map[string]ModelInfo) bool {
		if m, ok := byID[model]; ok {
			best, found = m, true
			return true
		}
		for id, m := range byID {
			if len(id) >= len(model) || !strings.HasPrefix(model, id) {
				continue
			}
			switch model[len(id)] {
			case '-', '@', ':':
			default:
				continue
			}
			if !found || len(id) > len(best.ID) {
				best, found = m, true
			}
		}
		return found
	}
	if provider != "" {
		try(c.models[provider])
	} else {
		for _, p := range slices.Sorted(maps.Keys(c.models)) {
			if try(c.models[p]) {
				break
			}
		}
	}
	if !found {
		return ModelInfo{ID: model, Provider: provider,
			ContextWindow: UnknownContextWindow, MaxOutputTokens: UnknownMaxOutputTokens, Tools: true}
	}
	best.ID = model
	return best
}

// List returns every entry, sorted by provider and then id.
func (c *Catalog) List() []ModelInfo {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []ModelInfo
	for _, byID := range c.models {
		for _, m := range byID {
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b ModelInfo) int {
		if a.Provider != b.Provider {
			return strings.Compare(a.Provider, b.Provider)
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

// catalogEntry is one LoadJSON entry. Pointers tell a field that was left
// out (keep the existing value) from one set to its zero value.
type catalogEntry struct {
	ID              *string  `json:"id"`
	Provider        *string  `json:"provider"`
	DisplayName     *string  `json:"display_name"`
	ContextWindow   *int     `json:"context_window"`
	MaxOutputTokens *int     `json:"max_output_tokens"`
	InputPrice      *float64 `json:"input_price"`
	OutputPrice     *float64 `json:"output_price"`
	CacheReadPrice  *float64 `json:"cache_read_price"`
	CacheWritePrice *float64 `json:"cache_write_price"`
	Thinking        *bool    `json:"thinking"`
	Images          *bool    `json:"images"`
	Caching         *bool    `json:"caching"`
	Tools           *bool    `json:"tools"`
	// Known is accepted so that List's JSON loads back, and ignored:
	// whatever is catalogued is known.
	Known *bool `json:"known"`
}

// LoadJSON adds or updates entries from a JSON array of objects with the
// snake_case fields of ModelInfo. An entry for a model already catalogued
// changes only the fields it sets, so a price update is one line:
//
//	[{"provider": "openai", "id": "gpt-4.1", "input_price": 1.5}]
//
// A new model must set id and provider; fields it leaves out are zero. The
// load is all or nothing: on error the catalogue is unchanged, and the error
// names the entry's index and the offending field.
func (c *Catalog) LoadJSON(r io.Reader) error {
	var raws []json.RawMessage
	dec := json.NewDecoder(r)
	if err := dec.Decode(&raws); err != nil {
		return fmt.Errorf("model catalogue: want a JSON array of model entries: %w", err)
	}
	if dec.More() {
		return errors.New("model catalogue: unexpected data after the JSON array")
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	type key struct{ provider, id string }
	staged := map[key]ModelInfo{}
	var order []key
	for i, raw := range raws {
		e, err := decodeEntry(raw)
		if err != nil {
			return fmt.Errorf("model catalogue: entry %d: %w", i, err)
		}
		if e.ID == nil || strings.TrimSpace(*e.ID) == "" {
			return fmt.Errorf("model catalogue: entry %d: field \"id\": required", i)
		}
		if e.Provider == nil || strings.TrimSpace(*e.Provider) == "" {
			return fmt.Errorf("model catalogue: entry %d (%s): field \"provider\": required", i, *e.ID)
		}
		k := key{*e.Provider, *e.ID}
		m, ok := staged[k]
		if !ok {
			m, ok = c.models[k.provider][k.id]
			if !ok {
				m = ModelInfo{ID: k.id, Provider: k.provider}
			}
			order = append(order, k)
		}
		if err := e.apply(&m); err != nil {
			return fmt.Errorf("model catalogue: entry %d (%s/%s): %w", i, k.provider, k.id, err)
		}
		staged[k] = m
	}
	for _, k := range order {
		c.add(staged[k])
	}
	return nil
}

func decodeEntry(raw json.RawMessage) (catalogEntry, error) {
	var e catalogEntry
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(&e)
	if err == nil {
		return e, nil
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return e, fmt.Errorf("want an object, got %s", te.Value)
		}
		return e, fmt.Errorf("field %q: want %s, got %s", te.Field, jsonKind(te.Type.Kind().String()), te.Value)
	}
	// Unknown fields (usually typos) come back as a plain error that
	// already names the field.
	return e, errors.New(strings.TrimPrefix(err.Error(), "json: "))
}

func jsonKind(goKind string) string {
	switch goKind {
	case "int":
		return "an integer"
	case "float64":
		return "a number"
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	}
	return goKind
}

func (e *catalogEntry) apply(m *ModelInfo) error {
	if e.DisplayName != nil {
		m.DisplayName = *e.DisplayName
	}
	for _, f := range []struct {
		name string
		src  *int
		dst  *int
	}{
		{"context_window", e.ContextWindow, &m.ContextWindow},
		{"max_output_tokens", e.MaxOutputTokens, &m.MaxOutputTokens},
	} {
		if f.src == nil {
			continue
		}
		if *f.src < 0 {
			return fmt.Errorf("field %q: must not be negative, got %d", f.name, *f.src)
		}
		*f.dst = *f.src
	}
	for _, f := range []struct {
		name string
		src  *float64
		dst  *float64
	}{
		{"input_price", e.InputPrice, &m.InputPrice},
		{"output_price", e.OutputPrice, &m.OutputPrice},
		{"cache_read_price", e.CacheReadPrice, &m.CacheReadPrice},
		{"cache_write_price", e.CacheWritePrice, &m.CacheWritePrice},
	} {
		if f.src == nil {
			continue
		}
		if *f.src < 0 {
			return fmt.Errorf("field %q: must not be negative, got %g", f.name, *f.src)
		}
		*f.dst = *f.src
	}
	for _, f := range []struct {
		src *bool
		dst *bool
	}{
		{e.Thinking, &m.Thinking}, {e.Images, &m.Images}, {e.Caching, &m.Caching}, {e.Tools, &m.Tools},
	} {
		if f.src != nil {
			*f.dst = *f.src
		}
	}
	return nil
}

// CatalogDate is when the built-in table's prices were last checked.
const CatalogDate = "2025-11"

// builtinModels is the built-in table. Prices are the vendors' published
// list prices (USD per million tokens) as of CatalogDate, for the standard
// tier and prompts under any long-context surcharge (Gemini 2.5 Pro doubles
// its rates above 200k prompt tokens). They change: override them with
// Catalog.Add or Catalog.LoadJSON rather than trusting this table for
// billing. Local servers (Ollama, LM Studio) cost nothing per token; their
// context windows are the models' own, which the server may cap lower.
//
// It is a function, not a variable, so that no caller can mutate the table
// another caller sees.
func builtinModels() []ModelInfo {
	// Anthropic: cache writes (5-minute TTL) cost 1.25x input, cache reads
	// 0.1x input.
	anthropic := func(id, name string, maxOut int, in, out float64, thinking bool) ModelInfo {
		return ModelInfo{ID: id, Provider: "anthropic", DisplayName: name,
			ContextWindow: 200_000, MaxOutputTokens: maxOut,
			InputPrice: in, OutputPrice: out, CacheReadPrice: in / 10, CacheWritePrice: in * 1.25,
			Thinking: thinking, Images: true, Caching: true, Tools: true}
	}
	// OpenAI caches prompts automatically: reads are discounted, writes
	// cost nothing extra.
	openai := func(id, name string, ctx, maxOut int, in, cached, out float64, thinking, images bool) ModelInfo {
		return ModelInfo{ID: id, Provider: "openai", DisplayName: name,
			ContextWindow: ctx, MaxOutputTokens: maxOut,
			InputPrice: in, OutputPrice: out, CacheReadPrice: cached,
			Thinking: thinking, Images: images, Caching: true, Tools: true}
	}
	// Gemini 2.5: implicit caching bills reads only (explicit caches also
	// bill storage per hour, which a per-token price cannot express).
	gemini := func(id, name string, in, cached, out float64) ModelInfo {
		return ModelInfo{ID: id, Provider: "gemini", DisplayName: name,
			ContextWindow: 1_048_576, MaxOutputTokens: 65_536,
			InputPrice: in, OutputPrice: out, CacheReadPrice: cached,
			Thinking: true, Images: true, Caching: true, Tools: true}
	}
	// DeepSeek caches on disk automatically; InputPrice is the cache-miss
	// rate.
	deepseek := func(id, name string, maxOut int, thinking bool) ModelInfo {
		return ModelInfo{ID: id, Provider: "deepseek", DisplayName: name,
			ContextWindow: 131_072, MaxOutputTokens: maxOut,
			InputPrice: 0.28, OutputPrice: 0.42, CacheReadPrice: 0.028,
			Thinking: thinking, Caching: true, Tools: true}
	}
	local := func(provider, id, name string, ctx, maxOut int, thinking bool) ModelInfo {
		return ModelInfo{ID: id, Provider: provider, DisplayName: name,
			ContextWindow: ctx, MaxOutputTokens: maxOut, Thinking: thinking, Tools: true}
	}
	return []ModelInfo{
		anthropic("claude-opus-4-5", "Claude Opus 4.5", 64_000, 5, 25, true),
		anthropic("claude-opus-4-1", "Claude Opus 4.1", 32_000, 15, 75, true),
		anthropic("claude-opus-4", "Claude Opus 4", 32_000, 15, 75, true),
		anthropic("claude-sonnet-4-5", "Claude Sonnet 4.5", 64_000, 3, 15, true),
		anthropic("claude-sonnet-4", "Claude Sonnet 4", 64_000, 3, 15, true),
		anthropic("claude-haiku-4-5", "Claude Haiku 4.5", 64_000, 1, 5, true),
		anthropic("claude-3-5-haiku", "Claude Haiku 3.5", 8_192, 0.8, 4, false),

		openai("gpt-5", "GPT-5", 400_000, 128_000, 1.25, 0.125, 10, true, true),
		openai("gpt-5-mini", "GPT-5 mini", 400_000, 128_000, 0.25, 0.025, 2, true, true),
		openai("gpt-5-nano", "GPT-5 nano", 400_000, 128_000, 0.05, 0.005, 0.4, true, true),
		openai("gpt-4.1", "GPT-4.1", 1_047_576, 32_768, 2, 0.5, 8, false, true),
		openai("gpt-4.1-mini", "GPT-4.1 mini", 1_047_576, 32_768, 0.4, 0.1, 1.6, false, true),
		openai("gpt-4.1-nano", "GPT-4.1 nano", 1_047_576, 32_768, 0.1, 0.025, 0.4, false, true),
		openai("gpt-4o", "GPT-4o", 128_000, 16_384, 2.5, 1.25, 10, false, true),
		openai("gpt-4o-mini", "GPT-4o mini", 128_000, 16_384, 0.15, 0.075, 0.6, false, true),
		openai("o3", "o3", 200_000, 100_000, 2, 0.5, 8, true, true),
		openai("o3-mini", "o3-mini", 200_000, 100_000, 1.1, 0.55, 4.4, true, false),
		openai("o4-mini", "o4-mini", 200_000, 100_000, 1.1, 0.275, 4.4, true, true),

		gemini("gemini-2.5-pro", "Gemini 2.5 Pro", 1.25, 0.125, 10),
		gemini("gemini-2.5-flash", "Gemini 2.5 Flash", 0.3, 0.03, 2.5),
		gemini("gemini-2.5-flash-lite", "Gemini 2.5 Flash-Lite", 0.1, 0.01, 0.4),

		deepseek("deepseek-chat", "DeepSeek Chat", 8_192, false),
		deepseek("deepseek-reasoner", "DeepSeek Reasoner", 65_536, true),

		local("ollama", "llama3.3", "Llama 3.3", 131_072, 8_192, false),
		local("ollama", "qwen3", "Qwen3", 40_960, 32_768, true),
		local("ollama", "gpt-oss", "gpt-oss", 131_072, 32_768, true),
		local("lmstudio", "llama-3.3", "Llama 3.3", 131_072, 8_192, false),
		local("lmstudio", "qwen/qwen3", "Qwen3", 40_960, 32_768, true),
		local("lmstudio", "openai/gpt-oss", "gpt-oss", 131_072, 32_768, true),
	}
}
