package secret

import (
	"cmp"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/bmatcuk/doublestar/v4"
)

// Guard scans content about to be written to a file for secrets nobody
// registered (seed 000's SecretGuard).
type Guard interface {
	// Scan returns the secrets found in content, which is about to be
	// written to path (slash-separated; workspace-relative when the file is
	// inside the workspace). An error means the guard itself is broken
	// (e.g. a rule without a pattern); callers should not write then.
	Scan(path, content string) ([]Match, error)
	// Redact returns content with what Scan would find masked.
	Redact(content string) string
}

// Match is one secret a Guard found.
type Match struct {
	// Rule is the id of the rule that matched, for logs and tests only:
	// user-facing messages and audit entries never name it, so the rule
	// set cannot be probed for blind spots.
	Rule string
	// Line is the 1-based line the secret starts on.
	Line int
}

// Rule is one compiled detection rule.
//
// The secret a rule finds is the first capturing group of Pattern that
// took part in the match, or the whole match when none did: context such as
// `password = "` stays outside the group, so Redact keeps it and entropy is
// measured on the value alone.
type Rule struct {
	ID          string
	Description string
	Pattern     *regexp.Regexp
	// Keywords are lowercase strings one of which must occur in the
	// content (ASCII letters compared case-insensitively) for Pattern to be
	// tried at all; none means always.
	Keywords []string
	// MinEntropy, when positive, is the Shannon entropy (bits per byte) the
	// secret must reach; meant for generic assignments.
	MinEntropy float64

	// Tuning of builtin rules, which custom rules (whose patterns weft
	// cannot reason about) do without.
	//
	// identFilter makes the generic rule also skip values that lack a
	// letter or a digit or look like an identifier, URL or path.
	identFilter bool
	// wordStart stands for a leading \b removed from Pattern: a match must
	// not follow a letter, digit or '_'. Without it the pattern starts
	// with a literal, which regexp finds with a fast substring search
	// instead of running its automaton over every byte.
	wordStart bool
	// lineLocal says no match spans a line break, so only the lines that
	// contain a keyword need to be searched.
	lineLocal bool
}

// RuleSpec is a rule as configuration spells it (JSON), compiled by
// [CompileRules].
type RuleSpec struct {
	ID          string   `json:"id"`
	Description string   `json:"description,omitempty"`
	Pattern     string   `json:"pattern"`
	Keywords    []string `json:"keywords,omitempty"`
	MinEntropy  float64  `json:"min_entropy,omitempty"`
}

// CompileRules compiles rule specs (e.g. custom rules from a config file).
// Errors name the rule id. Keywords are lowercased.
func CompileRules(specs []RuleSpec) ([]Rule, error) {
	rules := make([]Rule, 0, len(specs))
	seen := map[string]bool{}
	for i, sp := range specs {
		if strings.TrimSpace(sp.ID) == "" {
			return nil, fmt.Errorf("secret rule #%d: the id is empty", i+1)
		}
		if seen[sp.ID] {
			return nil, fmt.Errorf("secret rule %q: duplicate id", sp.ID)
		}
		seen[sp.ID] = true
		if sp.Pattern == "" {
			return nil, fmt.Errorf("secret rule %q: the pattern is empty", sp.ID)
		}
		re, err := regexp.Compile(sp.Pattern)
		if err != nil {
			return nil, fmt.Errorf("secret rule %q: invalid pattern: %w", sp.ID, err)
		}
		if sp.MinEntropy < 0 || sp.MinEntropy > 8 || math.IsNaN(sp.MinEntropy) {
			return nil, fmt.Errorf("secret rule %q: min_entropy %v is outside 0..8 bits per byte", sp.ID, sp.MinEntropy)
		}
		var kws []string
		for _, k := range sp.Keywords {
			if k = strings.ToLower(k); k != "" {
				kws = append(kws, k)
			}
		}
		rules = append(rules, Rule{ID: sp.ID, Description: sp.Description, Pattern: re, Keywords: kws, MinEntropy: sp.MinEntropy})
	}
	return rules, nil
}

// DefaultGuard applies rules to content outside the exempt paths.
type DefaultGuard struct {
	// Rules to apply, most specific first: where two rules find
	// overlapping secrets, the earlier rule's match counts and the other
	// is dropped. Empty means [BuiltinRules]; use [NoopGuard] to turn
	// scanning off.
	Rules []Rule
	// ExemptPaths are not scanned: an entry matches when it is a substring
	// of the slash path ("testdata/") or a doublestar glob matching it
	// ("**/*.pem"; a relative glob also matches at any depth, as in
	// .gitignore).
	ExemptPaths []string
}

// NewDefaultGuard returns a guard with [BuiltinRules] and no exemptions.
func NewDefaultGuard() *DefaultGuard { return &DefaultGuard{Rules: BuiltinRules()} }

// NewGuardWithRules returns a guard with the given rules (for example
// append(BuiltinRules(), custom...)) and no exemptions.
func NewGuardWithRules(rules []Rule) *DefaultGuard { return &DefaultGuard{Rules: rules} }

// Scan implements [Guard].
func (g *DefaultGuard) Scan(path, content string) ([]Match, error) {
	if g.exempt(path) {
		return nil, nil
	}
	found, err := g.find(content)
	if err != nil {
		return nil, err
	}
	ms := make([]Match, 0, len(found))
	line, at := 1, 0
	for _, f := range found { // in position order
		line += strings.Count(content[at:f.start], "\n")
		at = f.start
		ms = append(ms, Match{Rule: f.rule, Line: line})
	}
	return ms, nil
}

// Redact implements [Guard]: each secret is replaced by "[REDACTED]".
func (g *DefaultGuard) Redact(content string) string {
	found, err := g.find(content)
	if err != nil || len(found) == 0 {
		return content
	}
	var b strings.Builder
	b.Grow(len(content))
	at := 0
	for _, f := range found {
		b.WriteString(content[at:f.start])
		b.WriteString("[REDACTED]")
		at = f.end
	}
	b.WriteString(content[at:])
	return b.String()
}

func (g *DefaultGuard) exempt(path string) bool {
	// Backslashes too: a Windows path may reach a guard on any OS.
	path = strings.ReplaceAll(filepath.ToSlash(path), `\`, "/")
	for _, p := range g.ExemptPaths {
		if p == "" {
			continue
		}
		if strings.Contains(path, p) {
			return true
		}
		if ok, _ := doublestar.Match(p, path); ok {
			return true
		}
		if !strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "**/") {
			if ok, _ := doublestar.Match("**/"+p, path); ok {
				return true
			}
		}
	}
	return false
}

// finding turns a match of r in the window starting at off into a finding,
// unless a check outside the pattern rejects it.
func (r *Rule) finding(content string, off int, loc []int) (finding, bool) {
	start, end := loc[0], loc[1]
	for k := 2; k+1 < len(loc); k += 2 {
		if loc[k] >= 0 {
			start, end = loc[k], loc[k+1]
			break
		}
	}
	if start == end {
		return finding{}, false
	}
	val := content[off+start : off+end]
	if placeholder(val) || r.MinEntropy > 0 && Entropy(val) < r.MinEntropy || r.identFilter && identLike(val) {
		return finding{}, false
	}
	return finding{rule: r.ID, start: off + start, end: off + end}, true
}

func wordByte(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// asciiLower lowercases ASCII letters only, so that offsets into the
// result are offsets into s.
func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// keywordLines returns the spans of the lines of lower that contain a
// keyword, sorted, with adjacent lines merged into one span.
func keywordLines(lower string, keywords []string) [][2]int {
	var spans [][2]int
	for _, k := range keywords {
		for from := 0; from < len(lower); {
			j := strings.Index(lower[from:], k)
			if j < 0 {
				break
			}
			p := from + j
			ls := strings.LastIndexByte(lower[:p], '\n') + 1
			le := len(lower)
			if n := strings.IndexByte(lower[p:], '\n'); n >= 0 {
				le = p + n
			}
			spans = append(spans, [2]int{ls, le})
			from = le + 1
		}
	}
	slices.SortFunc(spans, func(a, b [2]int) int { return cmp.Compare(a[0], b[0]) })
	merged := spans[:0]
	for _, sp := range spans {
		if n := len(merged); n > 0 && sp[0] <= merged[n-1][1]+1 {
			merged[n-1][1] = max(merged[n-1][1], sp[1])
			continue
		}
		merged = append(merged, sp)
	}
	return merged
}

type finding struct {
	rule       string
	prio       int // index of the rule
	start, end int // the secret's span in content
}

// find returns the non-overlapping secrets in content, in position order.
func (g *DefaultGuard) find(content string) ([]finding, error) {
	rules := g.Rules
	if len(rules) == 0 {
		rules = BuiltinRules()
	}
	var lower string // computed once, for the first rule with keywords
	lowered := false
	var all []finding
	for ri, r := range rules {
		if r.Pattern == nil {
			return nil, fmt.Errorf("secret rule %q has no pattern", r.ID)
		}
		windows := [][2]int{{0, len(content)}}
		if len(r.Keywords) > 0 {
			if !lowered {
				lower, lowered = asciiLower(content), true
			}
			if !slices.ContainsFunc(r.Keywords, func(k string) bool { return strings.Contains(lower, k) }) {
				continue
			}
			if r.lineLocal {
				windows = keywordLines(lower, r.Keywords)
			}
		}
		add := func(off int, loc []int) {
			if f, ok := r.finding(content, off, loc); ok {
				f.prio = ri
				all = append(all, f)
			}
		}
		for _, w := range windows {
			text := content[w[0]:w[1]]
			if !r.wordStart {
				for _, loc := range r.Pattern.FindAllStringSubmatchIndex(text, -1) {
					add(w[0], loc)
				}
				continue
			}
			// A match that fails the boundary check must not hide one
			// starting inside it, so search again from its next byte.
			for pos := 0; pos <= len(text); {
				loc := r.Pattern.FindStringSubmatchIndex(text[pos:])
				if loc == nil {
					break
				}
				if at := w[0] + pos + loc[0]; at > 0 && wordByte(content[at-1]) {
					pos += loc[0] + 1
					continue
				}
				add(w[0]+pos, loc)
				pos += max(loc[1], loc[0]+1)
			}
		}
	}
	if len(all) == 0 {
		return nil, nil
	}
	// Keep the earliest rule's finding where findings overlap (a token in
	// `api_key = "..."` is one secret, not two).
	slices.SortStableFunc(all, func(a, b finding) int {
		return cmp.Or(cmp.Compare(a.prio, b.prio), cmp.Compare(a.start, b.start))
	})
	var kept []finding
	for _, f := range all {
		if !slices.ContainsFunc(kept, func(k finding) bool { return f.start < k.end && k.start < f.end }) {
			kept = append(kept, f)
		}
	}
	slices.SortFunc(kept, func(a, b finding) int { return cmp.Compare(a.start, b.start) })
	return kept, nil
}

// placeholderParts mark documentation and template values: a secret that
// contains one is not a real secret.
var placeholderParts = []string{
	"xxxxxx", "******", "......", "example", "changeme", "change_me", "change-me",
	"placeholder", "your_", "your-", "yourkey", "your.", "<your", "dummy",
	"redacted", "${", "{{", "%(", "12345678", "abcdefgh", "[secret:",
}

// placeholderWords are common defaults that are not worth blocking a write
// for when they stand alone (postgres://postgres:postgres@localhost).
var placeholderWords = map[string]bool{
	"password": true, "pass": true, "passwd": true, "pwd": true, "secret": true,
	"postgres": true, "mysql": true, "root": true, "admin": true, "user": true,
	"username": true, "guest": true, "test": true, "redis": true, "mongo": true,
	"mongodb": true, "rabbitmq": true, "dbpass": true, "db_password": true,
	"token": true, "none": true, "null": true, "empty": true,
}

func placeholder(v string) bool {
	l := strings.ToLower(v)
	if placeholderWords[l] {
		return true
	}
	switch l[0] {
	case '$', '<', '{', '%':
		return true
	}
	for _, p := range placeholderParts {
		if strings.Contains(l, p) {
			return true
		}
	}
	return false
}

// identLike reports whether v looks like code rather than a secret: no
// letter or no digit, a URL or path, or an identifier (CONSTANT_CASE,
// snake_case, kebab-case).
func identLike(v string) bool {
	if !strings.ContainsFunc(v, unicode.IsDigit) || !strings.ContainsFunc(v, unicode.IsLetter) {
		return true
	}
	if strings.Contains(v, "://") || strings.HasPrefix(v, "/") || strings.HasPrefix(v, "./") || strings.HasPrefix(v, "~/") {
		return true
	}
	if !strings.ContainsAny(v, "_-") || (v != strings.ToUpper(v) && v != strings.ToLower(v)) {
		return false
	}
	return !strings.ContainsFunc(v, func(r rune) bool {
		return !(r == '_' || r == '-' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
	})
}

// Entropy returns the Shannon entropy of s in bits per byte.
func Entropy(s string) float64 {
	if s == "" {
		return 0
	}
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	n := float64(len(s))
	var h float64
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}

// NoopGuard finds nothing: scanning is off. It must be chosen explicitly;
// a nil guard means [NewDefaultGuard].
type NoopGuard struct{}

// Scan implements [Guard]; it finds nothing.
func (NoopGuard) Scan(string, string) ([]Match, error) { return nil, nil }

// Redact implements [Guard]; it returns content unchanged.
func (NoopGuard) Redact(content string) string { return content }
