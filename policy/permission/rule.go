package permission

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// kind is what a rule matches on.
type kind uint8

const (
	kindName      kind = iota + 1 // a tool name: Bash, Read, my_tool, mcp__s__t
	kindNameGlob                  // Tool(glob), mcp__s__*
	kindMcpServer                 // mcp__server: every tool of the server
	kindMcp                       // Mcp(glob): glob on the name after mcp__
	kindEffect                    // Effect(read)
	kindCommand                   // Command(spec), Bash(spec)
	kindPath                      // Read(glob), Edit(glob), Write(glob)
	kindDomain                    // WebFetch(domain:example.com)
)

// Rule is one parsed permission rule. The zero Rule matches nothing; build
// rules with ParseRule. Rules are comparable with ==.
type Rule struct {
	kind kind
	// head is the word before the parentheses as written (Tool, Bash,
	// Command, Read, Edit, Write, WebFetch, Effect, Mcp), "" for a bare
	// name; it decides how String spells the rule.
	head string
	// arg is the tool name, glob, command spec (without a trailing :*),
	// path glob, domain or effect.
	arg string
	// prefix is set for a command spec ending in :* (word-boundary prefix).
	prefix bool
}

// SyntaxError is a rule that does not parse.
type SyntaxError struct {
	Rule string // the rule as written
	Msg  string
}

// Error returns the rule, quoted, and what is wrong with it.
func (e *SyntaxError) Error() string { return fmt.Sprintf("%q: %s", e.Rule, e.Msg) }

// RuleError places a SyntaxError in its source: which file, which list
// and which entry (1-based).
type RuleError struct {
	Source string // a file path, or "" when unknown
	List   string // "allow", "ask" or "deny"
	Index  int    // 1-based position in the list
	Err    error
}

// Error returns "SOURCE: permissions.LIST[N]: " followed by Err.
func (e *RuleError) Error() string {
	where := fmt.Sprintf("permissions.%s[%d]", e.List, e.Index)
	if e.Source != "" {
		where = e.Source + ": " + where
	}
	return where + ": " + e.Err.Error()
}

// Unwrap returns the underlying *SyntaxError.
func (e *RuleError) Unwrap() error { return e.Err }

const ruleKinds = "Tool, Command, Bash, Read, Edit, Write, WebFetch, Effect or Mcp"

// ParseRule parses one rule. Accepted forms: a bare tool name (Bash, Read,
// my_tool, mcp__server, mcp__server__tool, mcp__server__*), Tool(glob),
// Command(spec), Bash(spec), Read(glob), Edit(glob), Write(glob),
// WebFetch(domain:example.com), Effect(read|write|execute|external) and
// Mcp(glob). Anything else is an error: a rule that is silently ignored is
// a rule that silently does not protect.
func ParseRule(s string) (Rule, error) {
	raw := s
	s = strings.TrimSpace(s)
	fail := func(format string, args ...any) (Rule, error) {
		return Rule{}, &SyntaxError{Rule: raw, Msg: fmt.Sprintf(format, args...)}
	}
	if s == "" {
		return fail("empty rule")
	}
	open := strings.IndexByte(s, '(')
	if open < 0 {
		if strings.ContainsAny(s, ")") {
			return fail("unbalanced parenthesis")
		}
		return parseBare(s, fail)
	}
	if !strings.HasSuffix(s, ")") {
		return fail("a rule with arguments must end with \")\"")
	}
	head := strings.TrimSpace(s[:open])
	arg := strings.TrimSpace(s[open+1 : len(s)-1])
	if arg == "" {
		return fail("empty parentheses; write %s alone to match every call", head)
	}
	if hasControl(arg) {
		return fail("control characters are not allowed")
	}
	switch head {
	case "Tool":
		if err := checkNameGlob(arg); err != nil {
			return fail("%v", err)
		}
		return Rule{kind: kindNameGlob, head: head, arg: arg}, nil
	case "Mcp":
		if err := checkNameGlob(arg); err != nil {
			return fail("%v", err)
		}
		return Rule{kind: kindMcp, head: head, arg: arg}, nil
	case "Effect":
		switch arg {
		case "read", "write", "execute", "external":
			return Rule{kind: kindEffect, head: head, arg: arg}, nil
		}
		return fail("unknown effect %q; use read, write, execute or external", arg)
	case "Command", "Bash":
		spec := strings.Join(strings.Fields(arg), " ")
		prefix := false
		if strings.HasSuffix(spec, ":*") {
			prefix = true
			spec = strings.TrimSpace(strings.TrimSuffix(spec, ":*"))
		}
		if strings.Contains(spec, ":*") {
			return fail("\":*\" is only allowed at the end")
		}
		if spec == "" {
			return fail("empty command prefix; write %s alone to match every command", head)
		}
		return Rule{kind: kindCommand, head: head, arg: spec, prefix: prefix}, nil
	case "Read", "Edit", "Write":
		if !doublestar.ValidatePattern(arg) {
			return fail("invalid path pattern %q", arg)
		}
		return Rule{kind: kindPath, head: head, arg: arg}, nil
	case "WebFetch":
		d, ok := strings.CutPrefix(arg, "domain:")
		if !ok {
			return fail("WebFetch takes domain:NAME, e.g. WebFetch(domain:example.com)")
		}
		d = strings.TrimSuffix(strings.TrimPrefix(strings.ToLower(strings.TrimSpace(d)), "*."), ".")
		if !validDomain(d) {
			return fail("invalid domain %q", d)
		}
		return Rule{kind: kindDomain, head: head, arg: d}, nil
	}
	if !validName(head) {
		return fail("invalid rule")
	}
	return fail("unknown rule kind %q; use %s", head, ruleKinds)
}

func parseBare(s string, fail func(string, ...any) (Rule, error)) (Rule, error) {
	if strings.Contains(s, "*") {
		if !strings.HasPrefix(s, "mcp__") {
			return fail("a bare rule is a tool name; use Tool(%s) for a pattern", s)
		}
		if err := checkNameGlob(s); err != nil {
			return fail("%v", err)
		}
		return Rule{kind: kindNameGlob, arg: s}, nil
	}
	if !validName(s) {
		return fail("invalid tool name %q", s)
	}
	if rest, ok := strings.CutPrefix(s, "mcp__"); ok && rest != "" && !strings.Contains(rest, "__") {
		return Rule{kind: kindMcpServer, arg: s}, nil
	}
	return Rule{kind: kindName, arg: s}, nil
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		ok := r == '_' || r == '-' || r == '.' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')
		if !ok {
			return false
		}
	}
	return true
}

// validDomain accepts dot-separated non-empty labels of letters, digits,
// '-' and '_'.
func validDomain(d string) bool {
	for label := range strings.SplitSeq(d, ".") {
		if label == "" || !validName(label) {
			return false
		}
	}
	return true
}

func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// checkNameGlob validates a glob over tool names.
func checkNameGlob(g string) error {
	if _, err := path.Match(g, ""); err != nil {
		return fmt.Errorf("invalid pattern %q", g)
	}
	if strings.ContainsAny(g, " /()") {
		return fmt.Errorf("invalid tool name pattern %q", g)
	}
	return nil
}

// String returns the rule in canonical form; ParseRule(r.String()) == r.
func (r Rule) String() string {
	switch r.kind {
	case 0:
		return ""
	case kindCommand:
		if r.prefix {
			return r.head + "(" + r.arg + ":*)"
		}
	case kindDomain:
		return r.head + "(domain:" + r.arg + ")"
	}
	if r.head == "" {
		return r.arg
	}
	return r.head + "(" + r.arg + ")"
}

// RuleSet is the three rule lists. Evaluation does not depend on the
// order of rules within or across lists.
type RuleSet struct {
	Allow, Ask, Deny []Rule
}

// ParseRuleSet parses the three lists. src names where they came from
// (usually a file path) so errors can point at the rule: every rule that
// fails is reported, e.g.
//
//	settings.json: permissions.allow[3]: "Bash(foo:*bar)": ":*" is only allowed at the end
//
// Each error in the joined result is a *RuleError.
func ParseRuleSet(src string, allow, ask, deny []string) (RuleSet, error) {
	var rs RuleSet
	var errs []error
	for _, l := range []struct {
		name string
		in   []string
		out  *[]Rule
	}{{"allow", allow, &rs.Allow}, {"ask", ask, &rs.Ask}, {"deny", deny, &rs.Deny}} {
		for i, s := range l.in {
			r, err := ParseRule(s)
			if err != nil {
				errs = append(errs, &RuleError{Source: src, List: l.name, Index: i + 1, Err: err})
				continue
			}
			*l.out = append(*l.out, r)
		}
	}
	if len(errs) > 0 {
		return RuleSet{}, errors.Join(errs...)
	}
	return rs, nil
}

// Merge returns the union of rs and other: a rule from either list applies.
// Since deny always wins, merging scopes can only tighten what a deny
// forbids.
func (rs RuleSet) Merge(other RuleSet) RuleSet {
	union := func(a, b []Rule) []Rule {
		out := slices.Clone(a)
		for _, r := range b {
			if !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
		return out
	}
	return RuleSet{
		Allow: union(rs.Allow, other.Allow),
		Ask:   union(rs.Ask, other.Ask),
		Deny:  union(rs.Deny, other.Deny),
	}
}
