package session

import (
	"net/url"
	"slices"
	"strings"

	"github.com/weft-run/weft/policy/hook"
	"github.com/weft-run/weft/policy/secret"
)

// HookInfo describes one configured hook for GET /v1/hooks: what runs and
// when, with nothing that is a secret. A command is shown with the
// server's secret values and anything that looks like a credential
// redacted; an HTTP hook's URL without its userinfo and query; the
// environment and headers it gets by name only.
type HookInfo struct {
	Name    string `json:"name"`
	Event   string `json:"event"`
	Matcher string `json:"matcher,omitempty"`
	// Type is "command", "http" or "func" (a hook written in Go).
	Type      string `json:"type"`
	Command   string `json:"command,omitempty"`
	URL       string `json:"url,omitempty"`
	TimeoutMS int64  `json:"timeout_ms"`
	Async     bool   `json:"async,omitempty"`
	// Plugin is the plugin that contributed the hook, "" for the
	// settings' own; Trusted says whether it may run (always for those).
	Plugin  string   `json:"plugin,omitempty"`
	Trusted bool     `json:"trusted"`
	Dir     string   `json:"dir,omitempty"`
	Env     []string `json:"env,omitempty"`
	Headers []string `json:"headers,omitempty"`
}

// Hooks lists the hooks of the server's policy: the settings' first, then
// the plugins', trusted or not.
func (rt *Service) Hooks() []HookInfo {
	if rt.hooks == nil {
		return nil
	}
	guard := secret.NewDefaultGuard()
	redact := func(s string) string { return guard.Redact(rt.secrets.Redact(s)) }
	defs := rt.hooks.Defs()
	out := make([]HookInfo, 0, len(defs))
	for _, d := range defs {
		h := HookInfo{Name: d.Name, Event: string(d.Event), Matcher: d.Matcher, Async: d.Async,
			Plugin: d.Source, Trusted: rt.hooks.Trusted(d.Source), Dir: d.Dir}
		h.TimeoutMS = d.Timeout.Milliseconds()
		if d.Timeout <= 0 {
			h.TimeoutMS = hook.DefaultTimeout.Milliseconds()
		}
		switch {
		case d.Command != "":
			h.Type, h.Command = "command", redact(d.Command)
		case d.URL != "":
			h.Type, h.URL = "http", safeURL(d.URL)
		default:
			h.Type = "func"
		}
		for _, kv := range d.Env {
			name, _, _ := strings.Cut(kv, "=")
			h.Env = append(h.Env, name)
		}
		for k := range d.Headers {
			h.Headers = append(h.Headers, k)
		}
		slices.Sort(h.Headers)
		out = append(out, h)
	}
	return out
}

// safeURL is u without what may carry a credential: userinfo, query and
// fragment.
func safeURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(invalid URL)"
	}
	p.User, p.RawQuery, p.ForceQuery, p.Fragment, p.RawFragment = nil, "", false, "", ""
	return p.String()
}
