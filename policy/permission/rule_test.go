package permission

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestParseRule(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, canonical string }{
		{"Bash", "Bash"},
		{"Read", "Read"},
		{"my_tool", "my_tool"},
		{"WebFetch", "WebFetch"},
		{"  Bash(git status)  ", "Bash(git status)"},
		{"Bash(git   status)", "Bash(git status)"},
		{"Command(git:*)", "Command(git:*)"},
		{"Bash(npm run test :*)", "Bash(npm run test:*)"},
		{"Bash(git * main)", "Bash(git * main)"},
		{"Bash(*)", "Bash(*)"},
		{"Tool(excel_*)", "Tool(excel_*)"},
		{"Tool(browser_navigate)", "Tool(browser_navigate)"},
		{"Effect(read)", "Effect(read)"},
		{"Effect(external)", "Effect(external)"},
		{"Mcp(github__*)", "Mcp(github__*)"},
		{"mcp__github", "mcp__github"},
		{"mcp__github__create_issue", "mcp__github__create_issue"},
		{"mcp__github__*", "mcp__github__*"},
		{"WebFetch(domain:Example.COM)", "WebFetch(domain:example.com)"},
		{"WebFetch(domain:*.example.com)", "WebFetch(domain:example.com)"},
		{"Read(./src/**)", "Read(./src/**)"},
		{"Read(~/.ssh/**)", "Read(~/.ssh/**)"},
		{"Edit(//etc/**)", "Edit(//etc/**)"},
		{"Write(/tmp/*.{log,txt})", "Write(/tmp/*.{log,txt})"},
		{"Edit(*.lock)", "Edit(*.lock)"},
		{"Bash(echo (a))", "Bash(echo (a))"},
	}
	for _, tt := range tests {
		r, err := ParseRule(tt.in)
		if err != nil {
			t.Errorf("ParseRule(%q): %v", tt.in, err)
			continue
		}
		if got := r.String(); got != tt.canonical {
			t.Errorf("ParseRule(%q).String() = %q, want %q", tt.in, got, tt.canonical)
		}
		if again, err := ParseRule(r.String()); err != nil || again != r {
			t.Errorf("%q does not round-trip: %+v, %v", tt.in, again, err)
		}
	}
}

func TestParseRuleErrors(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, msg string }{
		{"", "empty rule"},
		{"   ", "empty rule"},
		{"Bash(foo:*bar)", `":*" is only allowed at the end`},
		{"Bash(a:* b:*)", `":*" is only allowed at the end`},
		{"Command(:*)", "empty command prefix"},
		{"Bash()", "empty parentheses"},
		{"Bash(git status", `must end with ")"`},
		{"Bash)", "unbalanced parenthesis"},
		{"Foo(bar)", `unknown rule kind "Foo"`},
		{"bash(ls)", `unknown rule kind "bash"`},
		{"Effect(delete)", `unknown effect "delete"`},
		{"WebFetch(example.com)", "domain:NAME"},
		{"WebFetch(domain:)", "invalid domain"},
		{"WebFetch(domain:a/b)", "invalid domain"},
		{"Tool([)", "invalid pattern"},
		{"Tool(a b)", "invalid tool name pattern"},
		{"Read([)", "invalid path pattern"},
		{"Edit({a,b)", "invalid path pattern"},
		{"excel_*", "use Tool(excel_*)"},
		{"my tool", "invalid tool name"},
		{"Bash(l\ns)", "control characters"},
		{"Mcp(x y)", "invalid tool name pattern"},
		{" (x)", "invalid rule"},
	}
	for _, tt := range tests {
		_, err := ParseRule(tt.in)
		if err == nil {
			t.Errorf("ParseRule(%q) succeeded, want an error containing %q", tt.in, tt.msg)
			continue
		}
		var se *SyntaxError
		if !errors.As(err, &se) || se.Rule != tt.in {
			t.Errorf("ParseRule(%q) error %v is not a *SyntaxError for the rule", tt.in, err)
		}
		if !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("ParseRule(%q) = %q, want it to contain %q", tt.in, err, tt.msg)
		}
	}
}

func TestParseRuleSetErrors(t *testing.T) {
	t.Parallel()
	_, err := ParseRuleSet("settings.json",
		[]string{"Bash(ls)", "Read", "Bash(foo:*bar)"},
		[]string{"Nope(x)"},
		[]string{"Bash", ""})
	if err == nil {
		t.Fatal("want an error")
	}
	want := []string{
		`settings.json: permissions.allow[3]: "Bash(foo:*bar)": ":*" is only allowed at the end`,
		`settings.json: permissions.ask[1]: "Nope(x)": unknown rule kind "Nope"`,
		`settings.json: permissions.deny[2]: "": empty rule`,
	}
	got := strings.Split(err.Error(), "\n")
	for i := range got {
		if i < len(want) && !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("line %d = %q, want prefix %q", i+1, got[i], want[i])
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %d errors, want %d:\n%v", len(got), len(want), err)
	}
	var re *RuleError
	if !errors.As(err, &re) || re.Source != "settings.json" || re.List != "allow" || re.Index != 3 {
		t.Errorf("errors.As RuleError = %+v", re)
	}

	_, err = ParseRuleSet("", []string{"Bash("}, nil, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "permissions.allow[1]: ") {
		t.Errorf("without a source: %v", err)
	}
}

func TestMerge(t *testing.T) {
	t.Parallel()
	user := rules(t, []string{"Bash(ls:*)", "Read"}, nil, []string{"Bash(rm:*)"})
	project := rules(t, []string{"Read", "Bash(make)"}, []string{"Bash(git push:*)"}, []string{"Edit(.env)"})
	m := user.Merge(project)
	str := func(rs []Rule) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.String())
		}
		return out
	}
	if got, want := str(m.Allow), []string{"Bash(ls:*)", "Read", "Bash(make)"}; !slices.Equal(got, want) {
		t.Errorf("allow = %q, want %q", got, want)
	}
	if got, want := str(m.Ask), []string{"Bash(git push:*)"}; !slices.Equal(got, want) {
		t.Errorf("ask = %q, want %q", got, want)
	}
	if got, want := str(m.Deny), []string{"Bash(rm:*)", "Edit(.env)"}; !slices.Equal(got, want) {
		t.Errorf("deny = %q, want %q", got, want)
	}
	if len(user.Allow) != 2 {
		t.Error("Merge modified its receiver")
	}
	// A deny from either scope wins over an allow from the other.
	if d := Evaluate(m, ModeBypass, bash("rm x")); d.Verdict != Deny {
		t.Errorf("merged deny: %+v", d)
	}
}

func FuzzParseRule(f *testing.F) {
	for _, s := range []string{
		"Bash", "Bash(git status)", "Command(git:*)", "Bash(npm run test:*)", "Bash(git * main)", "Bash(foo:*bar)",
		"Tool(excel_*)", "Effect(read)", "Mcp(github__*)", "mcp__github", "mcp__github__x", "mcp__a__*",
		"WebFetch(domain:example.com)", "Read(./src/**)", "Edit(//etc/**)", "Write(~/x)", "Read({a,b}/*.go)",
		"Bash(echo (a))", "Bash( x  y :*)", "WebFetch(domain:*.A.b.)", "(", ")", "a(b)c", "\x00",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := ParseRule(s)
		if err != nil {
			if r != (Rule{}) {
				t.Fatalf("error %v with a non-zero rule", err)
			}
			return
		}
		again, err := ParseRule(r.String())
		if err != nil {
			t.Fatalf("%q -> %q does not parse: %v", s, r.String(), err)
		}
		if again != r {
			t.Fatalf("%q -> %q -> %+v, want %+v", s, r.String(), again, r)
		}
	})
}

// Adding a deny rule never turns a denied or asked call into an allowed
// one: the verdict either stays or becomes deny.
func FuzzDenyMonotonic(f *testing.F) {
	for _, s := range [][2]string{
		{"git status", "Bash(git:*)"}, {"git status && rm -rf x", "Bash(rm:*)"}, {"echo hi > out/x", "Edit(./out/**)"},
		{"sudo make", "Bash(sudo:*)"}, {"$X", "Bash"}, {"curl x | sh", "Command(sh)"}, {"ls", "Read"},
		{"bash -c 'ls; make'", "Bash(make)"}, {"echo > /etc/x", "Write(//etc/**)"}, {"timeout 5 npm test", "Tool(Bash)"},
	} {
		f.Add(s[0], s[1])
	}
	base := rules(f, []string{"Bash(git:*)", "Bash(ls:*)", "Command(echo:*)", "Bash(make)", "Edit(./out/**)", "Write"},
		[]string{"Bash(git push:*)"}, []string{"Bash(shutdown:*)"})
	f.Fuzz(func(t *testing.T, cmd, deny string) {
		r, err := ParseRule(deny)
		if err != nil {
			return
		}
		more := base.Merge(RuleSet{Deny: []Rule{r}})
		calls := []Call{
			bash(cmd),
			call("Write", metaWrite, map[string]any{"file_path": cmd}),
			call("WebFetch", metaWeb, map[string]any{"url": cmd}),
		}
		for _, c := range calls {
			for _, m := range modes {
				before, after := Evaluate(base, m, c), Evaluate(more, m, c)
				if after.Verdict != before.Verdict && after.Verdict != Deny {
					t.Fatalf("%s %q in %s mode: %s became %s after adding deny %s", c.Tool, cmd, m, before.Verdict, after.Verdict, r)
				}
			}
		}
	})
}
