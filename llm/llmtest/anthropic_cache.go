package llmtest

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"sync"

	"github.com/weft-run/weft/llm"
)

// AnthropicCacheLookback is how many blocks before a breakpoint the API
// looks for an earlier cache entry.
const AnthropicCacheLookback = 20

// WithPromptCache makes an Anthropic fake account for prompt caching as the
// Messages API does, in place of the scripts' prompt token counts (output
// tokens still come from the script):
//
//   - The prompt is the sequence tools, system blocks, then each message's
//     role and blocks. A cache_control marker on an element is a
//     breakpoint; the marker itself is not part of what is cached.
//   - A breakpoint whose prefix (model included) was written by an earlier
//     request is a hit; so is one up to AnthropicCacheLookback blocks before
//     a breakpoint. The longest hit is read: cache_read_input_tokens.
//   - Prefixes up to each later breakpoint are written, when at least
//     minTokens long (the API's per-model minimum, 1024 for Sonnet and
//     Opus): cache_creation_input_tokens is what they add past the hit.
//   - input_tokens is what follows: tokens neither read nor written.
//
// Tokens are estimated as a quarter of each element's bytes, at least one.
// Entries never expire. It panics on a server that is not an Anthropic
// fake.
func (s *Server) WithPromptCache(minTokens int) *Server {
	if _, ok := s.proto.(AnthropicProtocol); !ok {
		panic("llmtest: WithPromptCache needs an Anthropic fake")
	}
	c := &anthropicCache{min: minTokens, entries: map[[32]byte]bool{}}
	s.mu.Lock()
	s.usage = func(req *Request, u llm.Usage) llm.Usage {
		read, write, input, err := c.account(req.Body)
		if err != nil {
			return u
		}
		u.CacheReadTokens, u.CacheWriteTokens, u.InputTokens = read, write, input
		return u
	}
	s.mu.Unlock()
	return s
}

type anthropicCache struct {
	mu      sync.Mutex
	min     int
	entries map[[32]byte]bool // prefix hashes written
}

// cacheElement is one element of the prompt in cache order.
type cacheElement struct {
	bytes  []byte // canonical JSON without cache_control
	marked bool
}

// PromptElements returns an Anthropic request body's prompt in the order
// the cache sees it (tools, system, then per message a role element and
// its blocks), each element as canonical JSON (keys sorted) without its
// cache_control, and which elements carried one.
func PromptElements(body []byte) (elems [][]byte, marked []bool, err error) {
	es, err := promptElements(body)
	if err != nil {
		return nil, nil, err
	}
	for _, e := range es {
		elems = append(elems, e.bytes)
		marked = append(marked, e.marked)
	}
	return elems, marked, nil
}

func promptElements(body []byte) ([]cacheElement, error) {
	var req struct {
		Tools    []json.RawMessage `json:"tools"`
		System   json.RawMessage   `json:"system"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, err
	}
	var out []cacheElement
	add := func(raw json.RawMessage) error {
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			return err
		}
		_, marked := m["cache_control"]
		delete(m, "cache_control")
		b, err := json.Marshal(m)
		if err != nil {
			return err
		}
		out = append(out, cacheElement{bytes: b, marked: marked})
		return nil
	}
	blocks := func(raw json.RawMessage) error {
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 || string(raw) == "null" {
			return nil
		}
		if raw[0] == '"' { // a bare string is one text block
			var text string
			if err := json.Unmarshal(raw, &text); err != nil {
				return err
			}
			b, _ := json.Marshal(map[string]string{"type": "text", "text": text})
			return add(b)
		}
		var list []json.RawMessage
		if err := json.Unmarshal(raw, &list); err != nil {
			return err
		}
		for _, b := range list {
			if err := add(b); err != nil {
				return err
			}
		}
		return nil
	}
	for _, t := range req.Tools {
		if err := add(t); err != nil {
			return nil, err
		}
	}
	if err := blocks(req.System); err != nil {
		return nil, err
	}
	for _, m := range req.Messages {
		out = append(out, cacheElement{bytes: []byte(`{"role":"` + m.Role + `"}`)})
		if err := blocks(m.Content); err != nil {
			return nil, err
		}
	}
	if len(out) == 0 {
		return nil, errors.New("empty prompt")
	}
	return out, nil
}

// account works out a request's usage and records what it writes.
func (c *anthropicCache) account(body []byte) (read, write, input int, err error) {
	var head struct {
		Model string `json:"model"`
	}
	if err := json.Unmarshal(body, &head); err != nil {
		return 0, 0, 0, err
	}
	elems, err := promptElements(body)
	if err != nil {
		return 0, 0, 0, err
	}
	n := len(elems)
	hashes := make([][32]byte, n)
	cum := make([]int, n) // tokens up to and including element i
	h := sha256.Sum256([]byte(head.Model))
	total := 0
	var bps []int
	for i, e := range elems {
		h = sha256.Sum256(append(h[:], e.bytes...))
		hashes[i] = h
		total += max(len(e.bytes)/4, 1)
		cum[i] = total
		if e.marked {
			bps = append(bps, i)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	hit := -1
	for _, p := range bps {
		for q := p; q >= 0 && q > p-AnthropicCacheLookback; q-- {
			if c.entries[hashes[q]] {
				hit = max(hit, q)
				break
			}
		}
	}
	if hit >= 0 {
		read = cum[hit]
	}
	written := hit
	for _, p := range bps {
		if p > hit && cum[p] >= c.min {
			c.entries[hashes[p]] = true
			written = p
		}
	}
	if written > hit {
		write = cum[written] - read
	}
	return read, write, total - read - write, nil
}
