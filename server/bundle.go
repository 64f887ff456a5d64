package server

import (
	"net/http"
	"strings"

	"github.com/weft-run/weft/prompt"
)

// BundleHeader selects a turn's prompt bundle when the request body has
// no "bundle" (docs/agents.md, "Prompt bundles").
const BundleHeader = "X-Weft-Bundle"

// bundleFrom settles the turn's bundle key: the body's "bundle" wins over
// the header, as a request's own field is the more specific choice. It
// returns what is wrong with it, "" when nothing. Only the key's form is
// checked: a well-formed key no bundle is registered under falls back to
// the family's bundle or the default when the prompt is built, as
// prompt.WithBundleKey does in the SDK, so that a client written for a
// server with more bundles still works.
func (q *turnRequest) bundleFrom(h http.Header) string {
	what := "bundle"
	if strings.TrimSpace(q.Bundle) == "" {
		q.Bundle, what = h.Get(BundleHeader), BundleHeader
	}
	k, err := prompt.ParseKey(q.Bundle)
	if err != nil {
		return what + " " + quote(q.Bundle) + ": want family/scenario of letters, digits, '.', '_' and '-', at most 64 characters a part (e.g. qwen/programming)"
	}
	if !k.IsZero() {
		q.Bundle = k.String()
	}
	return ""
}
