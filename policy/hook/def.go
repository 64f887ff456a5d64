package hook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// Verdict is a hook's decision about the action it was asked about.
type Verdict string

// Verdicts. NoOpinion is what a hook that exits 0 without a decision says:
// the action proceeds through the rest of the policy pipeline.
const (
	NoOpinion Verdict = ""
	Allow     Verdict = "allow"
	Deny      Verdict = "deny"
	Ask       Verdict = "ask"
)

// Outcome is what the hooks of one Run decided together (or what one Go
// callback returns).
type Outcome struct {
	Verdict           Verdict
	Reason            string
	Hook              string          // the hook that decided, for audit: "settings/PreToolUse[0]", "plugin/<id>/<name>"
	UpdatedInput      json.RawMessage // replaces the tool input; later hooks already saw it
	AdditionalContext string          // for the model, joined across hooks
	Stop              bool            // a hook said continue:false
	StopReason        string
}

// Func is a hook written in Go (SDK callers). An error or a panic fails
// open, like a crashing script. It should honour ctx: when the hook's
// timeout passes, Run stops waiting for it.
type Func func(ctx context.Context, in Input) (Outcome, error)

// DefaultTimeout bounds a hook whose Def.Timeout is zero.
const DefaultTimeout = 60 * time.Second

// Def declares one hook. Exactly one of Command, URL and Func is set.
type Def struct {
	Name    string        // for logs and audit; when empty Register names it "global/<event>[n]" or "plugin/<id>/<event>[n]"
	Event   Event         // when it runs
	Matcher string        // "" or "*": always; "Bash" or "Edit|Write": exact names; anything else: a regexp matching the whole name
	Command string        // run with /bin/sh -c, the envelope on stdin
	URL     string        // POSTed the envelope
	Func    Func          // called in-process
	Timeout time.Duration // 0 means DefaultTimeout
	Async   bool          // fire and forget: never blocks Run, its outcome is only logged
	Source  string        // "" for global hooks, else the id of the plugin that contributed it
	Dir     string        // working directory of a command; "" means Input.Cwd
	Env     []string      // extra environment of a command ("K=V")

	// Headers are added to an HTTP hook's request. "$VAR" and "${VAR}" in
	// a value expand from the process environment only for names listed in
	// HeaderEnv (Claude Code's allowedEnvVars); other references expand to
	// "", so a hook file cannot exfiltrate arbitrary variables.
	Headers   map[string]string
	HeaderEnv []string
}

func (d *Def) timeout() time.Duration {
	if d.Timeout > 0 {
		return d.Timeout
	}
	return DefaultTimeout
}

// validate checks everything Register promises to check.
func (d *Def) validate() error {
	if !d.Event.Valid() {
		return fmt.Errorf("%w %q", ErrUnknownEvent, d.Event)
	}
	n := 0
	for _, set := range []bool{d.Command != "", d.URL != "", d.Func != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return errors.New("exactly one of Command, URL and Func must be set")
	}
	if d.Command != "" && strings.TrimSpace(d.Command) == "" {
		return errors.New("empty command")
	}
	if d.URL != "" {
		u, err := url.Parse(d.URL)
		if err != nil {
			return fmt.Errorf("bad url: %w", err)
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("bad url %q: want an absolute http or https URL", d.URL)
		}
	}
	if d.Timeout < 0 {
		return fmt.Errorf("negative timeout %s", d.Timeout)
	}
	if _, err := compileMatcher(d.Matcher); err != nil {
		return err
	}
	return nil
}

// matcher is a compiled Def.Matcher.
type matcher struct {
	all   bool
	names []string
	re    *regexp.Regexp
}

// simpleMatcher is Claude Code's test for "a list of exact names".
var simpleMatcher = regexp.MustCompile(`^[A-Za-z0-9_|]+$`)

func compileMatcher(s string) (matcher, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "" || s == "*":
		return matcher{all: true}, nil
	case simpleMatcher.MatchString(s):
		var names []string
		for _, n := range strings.Split(s, "|") {
			if n != "" {
				names = append(names, n)
			}
		}
		return matcher{names: names}, nil
	}
	re, err := regexp.Compile(`^(?:` + s + `)$`)
	if err != nil {
		return matcher{}, fmt.Errorf("bad matcher %q: %w", s, err)
	}
	return matcher{re: re}, nil
}

func (m matcher) match(subject string) bool {
	switch {
	case m.all:
		return true
	case m.re != nil:
		return m.re.MatchString(subject)
	}
	for _, n := range m.names {
		if n == subject {
			return true
		}
	}
	return false
}

// matchSubject is what a matcher is compared with for in, and whether the
// matcher applies at all: tool events match the tool name, session_start
// its "source" and pre_compact its "trigger" (as in Claude Code); other
// events ignore matchers.
func matchSubject(in Input) (string, bool) {
	if in.Event.isToolEvent() {
		return in.ToolName, true
	}
	var key string
	switch in.Event {
	case SessionStart:
		key = "source"
	case PreCompact:
		key = "trigger"
	default:
		return "", false
	}
	s, ok := in.Extra[key].(string)
	return s, ok
}
