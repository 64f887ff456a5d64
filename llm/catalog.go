package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
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
	mu      sync.RWMutex
	models  map[string]map[string]ModelInfo // provider -> id -> info
	sources map[string]map[string][]string  // provider -> id -> where it came from
}

// NewCatalog returns a catalogue holding models (later entries replace
// earlier ones with the same provider and id).
func NewCatalog(models ...ModelInfo) *Catalog {
	c := &Catalog{models: map[string]map[string]ModelInfo{}, sources: map[string]map[string][]string{}}
	for _, m := range models {
		c.add(m)
	}
	return c
}

// DefaultCatalog returns a new catalogue holding the built-in table. Each
// call returns a fresh copy, so that one caller's overrides never leak into
// another's.
func DefaultCatalog() *Catalog {
	c := NewCatalog(builtinModels()...)
	for p, byID := range c.models {
		c.sources[p] = make(map[string][]string, len(byID))
		for id := range byID {
			c.sources[p][id] = []string{"builtin"}
		}
	}
	return c
}

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

// MaxModelsFileSize bounds what Load reads: a models file is a
// hand-written table, not a data set.
const MaxModelsFileSize = 8 << 20

// LoadOptions qualify a Load.
type LoadOptions struct {
	// Source names where the entries come from (a file path); Sources
	// reports it for every entry the load touches. Errors name it too.
	Source string
	// Providers, when set, are the provider names entries may use, so that
	// a typo ("olama") is an error rather than an entry nothing looks up.
	Providers []string
}

// LoadJSON is Load with no options.
func (c *Catalog) LoadJSON(r io.Reader) error { return c.Load(r, LoadOptions{}) }

// LoadFile loads the models file at path (see Load); the path is the
// entries' source and starts every error message ("path:line: ...").
func (c *Catalog) LoadFile(path string, opts LoadOptions) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("models file: %w", err)
	}
	defer f.Close()
	if opts.Source == "" {
		opts.Source = path
	}
	return c.Load(f, opts)
}

// Load adds or updates entries from a JSON array of objects with the
// snake_case fields of ModelInfo (the format of docs/models.md, which is
// also what List marshals to):
//
//	[{"provider": "ollama", "id": "qwen2.5-coder:32b", "context_window": 32768},
//	 {"provider": "openai", "id": "gpt-4.1", "input_price": 1.5}]
//
// An entry for a model already catalogued changes only the fields it sets,
// so a price update is one line. A new model must set id and provider; the
// fields it leaves out are what Lookup gives a model it does not know
// (UnknownContextWindow, UnknownMaxOutputTokens, tools on, no prices). The
// load is all or nothing: on error the catalogue is unchanged, and the
// error names the line, the entry's index and model, and the field: unknown
// fields (typos), fields given twice, wrong types, negative prices, limits
// that are not positive or an output limit over the window are errors.
// "known" and "sources" are accepted (List's output loads back) and
// ignored.
func (c *Catalog) Load(r io.Reader, opts LoadOptions) error {
	where := func(line int) string {
		switch {
		case opts.Source != "" && line > 0:
			return fmt.Sprintf("%s:%d", opts.Source, line)
		case opts.Source != "":
			return opts.Source
		case line > 0:
			return fmt.Sprintf("model catalogue: line %d", line)
		}
		return "model catalogue"
	}
	data, err := io.ReadAll(io.LimitReader(r, MaxModelsFileSize+1))
	if err != nil {
		return fmt.Errorf("%s: %w", where(0), err)
	}
	if len(data) > MaxModelsFileSize {
		return fmt.Errorf("%s: larger than %d MiB", where(0), MaxModelsFileSize>>20)
	}
	entries, err := splitEntries(data)
	if err != nil {
		var le *lineError
		if errors.As(err, &le) {
			return fmt.Errorf("%s: %s", where(le.line), le.msg)
		}
		return fmt.Errorf("%s: %w", where(0), err)
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	type key struct{ provider, id string }
	staged := map[key]ModelInfo{}
	var order []key
	for i, e := range entries {
		fail := func(line int, name, format string, args ...any) error {
			if name != "" {
				name = " (" + name + ")"
			}
			return fmt.Errorf("%s: entry %d%s: %s", where(line), i, name, fmt.Sprintf(format, args...))
		}
		if e.err != "" {
			return fail(e.errLine, "", "%s", e.err)
		}
		id, err := e.str("id")
		if err != nil {
			return fail(e.line(err), "", "%v", err)
		}
		provider, err := e.str("provider")
		if err != nil {
			return fail(e.line(err), id, "%v", err)
		}
		id, provider = strings.TrimSpace(id), strings.ToLower(strings.TrimSpace(provider))
		if id == "" {
			return fail(e.keyLine("id", e.line0), "", `field "id": required`)
		}
		if provider == "" {
			return fail(e.keyLine("provider", e.line0), id, `field "provider": required`)
		}
		name := provider + "/" + id
		if len(opts.Providers) > 0 && !slices.Contains(opts.Providers, provider) {
			return fail(e.keyLine("provider", e.line0), name, "field \"provider\": %q is not a provider weft knows (%s)",
				provider, strings.Join(opts.Providers, ", "))
		}
		k := key{provider, id}
		m, ok := staged[k]
		if !ok {
			m, ok = c.models[k.provider][k.id]
			if !ok {
				m = ModelInfo{ID: k.id, Provider: k.provider,
					ContextWindow: UnknownContextWindow, MaxOutputTokens: UnknownMaxOutputTokens, Tools: true}
			}
			order = append(order, k)
		}
		if err := e.apply(&m); err != nil {
			return fail(e.line(err), name, "%v", err)
		}
		if m.MaxOutputTokens > m.ContextWindow {
			line := e.keyLine("max_output_tokens", e.keyLine("context_window", e.line0))
			return fail(line, name, "max_output_tokens %d is more than context_window %d", m.MaxOutputTokens, m.ContextWindow)
		}
		staged[k] = m
	}
	for _, k := range order {
		c.add(staged[k])
		if c.sources[k.provider] == nil {
			c.sources[k.provider] = map[string][]string{}
		}
		src := c.sources[k.provider][k.id]
		if len(src) == 0 || src[len(src)-1] != opts.Source {
			c.sources[k.provider][k.id] = append(slices.Clip(src), opts.Source)
		}
	}
	return nil
}

// Sources says where an entry came from, oldest first: "builtin" for the
// built-in table, then the Source of every Load that changed it ("" for
// loads that named none). It is nil for a model the catalogue does not
// have, and for entries added with Add or NewCatalog.
func (c *Catalog) Sources(provider, id string) []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return slices.Clone(c.sources[provider][id])
}

// lineError is a parse error at a line.
type lineError struct {
	line int
	msg  string
}

func (e *lineError) Error() string { return fmt.Sprintf("line %d: %s", e.line, e.msg) }

// rawEntry is one entry of a models file: its fields, undecoded, and the
// lines they are on.
type rawEntry struct {
	line0   int // where the entry starts
	fields  map[string]json.RawMessage
	lines   map[string]int
	err     string // a problem found while splitting (not an object, a duplicate field)
	errLine int
}

// fieldError is a problem with one field.
type fieldError struct {
	field string
	msg   string
}

func (e *fieldError) Error() string { return fmt.Sprintf("field %q: %s", e.field, e.msg) }

func (e *rawEntry) keyLine(field string, def int) int {
	if l, ok := e.lines[field]; ok {
		return l
	}
	return def
}

func (e *rawEntry) line(err error) int {
	var fe *fieldError
	if errors.As(err, &fe) {
		return e.keyLine(fe.field, e.line0)
	}
	return e.line0
}

// knownFields are the keys an entry may have.
var knownFields = []string{"id", "provider", "display_name", "context_window", "max_output_tokens",
	"input_price", "output_price", "cache_read_price", "cache_write_price",
	"thinking", "images", "caching", "tools", "known", "sources"}

// splitEntries reads the top-level array into entries, keeping each
// field's line.
func splitEntries(data []byte) ([]rawEntry, error) {
	lineAt := func(off int64) int { return bytes.Count(data[:min(int(off), len(data))], []byte("\n")) + 1 }
	// skip moves an offset past whitespace and the separators the decoder
	// has not consumed yet, to where the next value starts.
	skip := func(off int64) int64 {
		for int(off) < len(data) {
			switch data[off] {
			case ' ', '\t', '\r', '\n', ',', ':':
				off++
				continue
			}
			break
		}
		return off
	}
	syntax := func(err error) error {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return &lineError{lineAt(se.Offset), "not valid JSON: " + strings.TrimPrefix(se.Error(), "json: ")}
		}
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return &lineError{lineAt(int64(len(data))), "not valid JSON: unexpected end of input"}
		}
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("want a JSON array of model entries, got nothing")
		}
		return nil, syntax(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return nil, &lineError{1, "want a JSON array of model entries ([{...}, ...])"}
	}
	var entries []rawEntry
	for dec.More() {
		start := skip(dec.InputOffset())
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, syntax(err)
		}
		entries = append(entries, splitEntry(raw, lineAt(start), func(off int64) int { return lineAt(start + off) }))
	}
	if _, err := dec.Token(); err != nil {
		return nil, syntax(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, &lineError{lineAt(dec.InputOffset()), "unexpected data after the JSON array"}
	}
	return entries, nil
}

// splitEntry reads one entry's keys; lineAt maps an offset in raw to a line.
func splitEntry(raw json.RawMessage, line int, lineAt func(int64) int) rawEntry {
	e := rawEntry{line0: line, fields: map[string]json.RawMessage{}, lines: map[string]int{}}
	if raw[0] != '{' {
		e.err, e.errLine = "want an object, got "+jsonKindOf(raw), line
		return e
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	_, _ = dec.Token() // {
	for dec.More() {
		off := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			e.err, e.errLine = err.Error(), lineAt(off)
			return e
		}
		k, _ := tok.(string)
		for int(off) < len(raw) && raw[off] != '"' {
			off++ // past the separator to the key itself
		}
		kl := lineAt(off)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			e.err, e.errLine = err.Error(), kl
			return e
		}
		switch {
		case !slices.Contains(knownFields, k):
			e.err, e.errLine = fmt.Sprintf("unknown field %q (%s)", k, suggestField(k)), kl
			return e
		case e.fields[k] != nil:
			e.err, e.errLine = fmt.Sprintf("field %q is given twice", k), kl
			return e
		}
		e.fields[k], e.lines[k] = v, kl
	}
	return e
}

// suggestField names the known field closest to a misspelt one.
func suggestField(k string) string {
	best, bestD := "", 4 // further than 3 edits is no suggestion
	for _, f := range knownFields {
		if d := editDistance(k, f); d < bestD {
			best, bestD = f, d
		}
	}
	if best == "" {
		return "the fields are " + strings.Join(knownFields[:13], ", ")
	}
	return fmt.Sprintf("did you mean %q?", best)
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func jsonKindOf(raw json.RawMessage) string {
	switch raw[0] {
	case '"':
		return "a string"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// str reads a string field; "" when absent or null.
func (e *rawEntry) str(field string) (string, error) {
	var v *string
	if err := e.decode(field, &v, "a string"); err != nil || v == nil {
		return "", err
	}
	return *v, nil
}

// decode unmarshals a field into dst (a pointer to a pointer, left nil for
// an absent or null field).
func (e *rawEntry) decode(field string, dst any, want string) error {
	raw, ok := e.fields[field]
	if !ok {
		return nil
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return &fieldError{field, fmt.Sprintf("want %s, got %s", want, describe(raw))}
	}
	return nil
}

func describe(raw json.RawMessage) string {
	if raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9' {
		return "number " + string(raw)
	}
	return strings.TrimPrefix(strings.TrimPrefix(jsonKindOf(raw), "a "), "an ")
}

// apply sets the fields e has on m.
func (e *rawEntry) apply(m *ModelInfo) error {
	var name *string
	if err := e.decode("display_name", &name, "a string"); err != nil {
		return err
	}
	if name != nil {
		m.DisplayName = *name
	}
	for _, f := range []struct {
		name string
		dst  *int
	}{
		{"context_window", &m.ContextWindow},
		{"max_output_tokens", &m.MaxOutputTokens},
	} {
		var v *int
		if err := e.decode(f.name, &v, "an integer"); err != nil {
			return err
		}
		if v == nil {
			continue
		}
		if *v <= 0 {
			return &fieldError{f.name, fmt.Sprintf("must be a positive number of tokens, got %d", *v)}
		}
		*f.dst = *v
	}
	for _, f := range []struct {
		name string
		dst  *float64
	}{
		{"input_price", &m.InputPrice},
		{"output_price", &m.OutputPrice},
		{"cache_read_price", &m.CacheReadPrice},
		{"cache_write_price", &m.CacheWritePrice},
	} {
		var v *float64
		if err := e.decode(f.name, &v, "a number"); err != nil {
			return err
		}
		if v == nil {
			continue
		}
		if *v < 0 {
			return &fieldError{f.name, fmt.Sprintf("must not be negative, got %g", *v)}
		}
		*f.dst = *v
	}
	for _, f := range []struct {
		name string
		dst  *bool
	}{
		{"thinking", &m.Thinking}, {"images", &m.Images}, {"caching", &m.Caching}, {"tools", &m.Tools},
	} {
		var v *bool
		if err := e.decode(f.name, &v, "true or false"); err != nil {
			return err
		}
		if v != nil {
			*f.dst = *v
		}
	}
	// known and sources are List's, not settings.
	var known *bool
	if err := e.decode("known", &known, "true or false"); err != nil {
		return err
	}
	var sources []string
	return e.decode("sources", &sources, "an array of strings")
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
	// The Chinese services. Prices are the USD list prices of each
	// platform's international pages as published when these entries were
	// written (2025), for the lowest context tier where a service prices
	// by prompt length (DashScope); mainland prices are in CNY and differ.
	// They change often: override them with a models file
	// (docs/models.md), which is also where to correct an entry.
	//
	// MiniMax (Anthropic-compatible): 204,800-token window, text only,
	// thinking, cache_control honoured (reads 0.1x, writes 1.25x input).
	minimax := func(id, name string, in, out float64) ModelInfo {
		return ModelInfo{ID: id, Provider: "minimax", DisplayName: name,
			ContextWindow: 204_800, MaxOutputTokens: 131_072,
			InputPrice: in, OutputPrice: out, CacheReadPrice: in / 10, CacheWritePrice: in * 1.25,
			Thinking: true, Caching: true, Tools: true}
	}
	// DashScope, Zhipu and Moonshot cache repeated prefixes automatically
	// and bill cache hits at the read price.
	compat := func(provider, id, name string, ctx, maxOut int, in, cached, out float64, thinking, images bool) ModelInfo {
		return ModelInfo{ID: id, Provider: provider, DisplayName: name,
			ContextWindow: ctx, MaxOutputTokens: maxOut,
			InputPrice: in, OutputPrice: out, CacheReadPrice: cached,
			Thinking: thinking, Images: images, Caching: cached > 0, Tools: true}
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

		minimax("MiniMax-M2.7", "MiniMax M2.7", 0.3, 1.2),
		minimax("MiniMax-M2.7-highspeed", "MiniMax M2.7 highspeed", 0.6, 2.4),
		minimax("MiniMax-M2.5", "MiniMax M2.5", 0.3, 1.2),
		minimax("MiniMax-M2.1", "MiniMax M2.1", 0.3, 1.2),
		minimax("MiniMax-M2", "MiniMax M2", 0.3, 1.2),

		compat("dashscope", "qwen3-max", "Qwen3 Max", 262_144, 65_536, 1.2, 0.24, 6, false, false),
		compat("dashscope", "qwen-max", "Qwen Max", 32_768, 8_192, 1.6, 0.32, 6.4, false, false),
		compat("dashscope", "qwen-plus", "Qwen Plus", 131_072, 16_384, 0.4, 0.08, 1.2, true, false),
		compat("dashscope", "qwen-flash", "Qwen Flash", 1_000_000, 32_768, 0.05, 0.01, 0.4, true, false),
		compat("dashscope", "qwen3-coder-plus", "Qwen3 Coder Plus", 1_000_000, 65_536, 1, 0.1, 5, false, false),
		compat("dashscope", "qwen-vl-max", "Qwen VL Max", 131_072, 8_192, 0.8, 0, 3.2, false, true),

		compat("zhipu", "glm-4.6", "GLM-4.6", 200_000, 128_000, 0.6, 0.11, 2.2, true, false),
		compat("zhipu", "glm-4.5", "GLM-4.5", 131_072, 98_304, 0.6, 0.11, 2.2, true, false),
		compat("zhipu", "glm-4.5-air", "GLM-4.5-Air", 131_072, 98_304, 0.2, 0.03, 1.1, true, false),
		compat("zhipu", "glm-4.5v", "GLM-4.5V", 65_536, 16_384, 0.6, 0.11, 1.8, true, true),

		compat("moonshot", "kimi-k2-0905-preview", "Kimi K2 0905", 262_144, 32_768, 0.6, 0.15, 2.5, false, false),
		compat("moonshot", "kimi-k2-turbo-preview", "Kimi K2 Turbo", 262_144, 32_768, 1.15, 0.15, 8, false, false),
		compat("moonshot", "kimi-k2-thinking", "Kimi K2 Thinking", 262_144, 32_768, 0.6, 0.15, 2.5, true, false),
		compat("moonshot", "kimi-k2-thinking-turbo", "Kimi K2 Thinking Turbo", 262_144, 32_768, 1.15, 0.15, 8, true, false),
		compat("moonshot", "moonshot-v1-128k", "Moonshot v1 128K", 131_072, 32_768, 2, 0, 5, false, false),

		local("ollama", "llama3.3", "Llama 3.3", 131_072, 8_192, false),
		local("ollama", "qwen3", "Qwen3", 40_960, 32_768, true),
		local("ollama", "gpt-oss", "gpt-oss", 131_072, 32_768, true),
		local("lmstudio", "llama-3.3", "Llama 3.3", 131_072, 8_192, false),
		local("lmstudio", "qwen/qwen3", "Qwen3", 40_960, 32_768, true),
		local("lmstudio", "openai/gpt-oss", "gpt-oss", 131_072, 32_768, true),
	}
}
