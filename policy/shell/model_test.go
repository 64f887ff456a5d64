package shell

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func paths(ps []Path) []string {
	var out []string
	for _, p := range ps {
		s := p.Name
		switch p.Kind {
		case Glob:
			s = "glob:" + s
		case Dynamic:
			s = "dynamic:" + s
		}
		if p.Tree {
			s += "/**"
		}
		if p.Unrooted {
			s = "?/" + s
		}
		out = append(out, s)
	}
	return out
}

func hasProblem(a Analysis, sub string) bool {
	return slices.ContainsFunc(a.Problems, func(p string) bool { return strings.Contains(p, sub) })
}

func hasOpaque(a Analysis, sub string) bool {
	return slices.ContainsFunc(a.Opaque, func(p string) bool { return strings.Contains(p, sub) })
}

// Which script a shell runs: the last redirection of fd 0 wins, N<...
// changes descriptor N only, <&N copies, a pipe or an unknown descriptor
// is code nobody can see.
func TestStdinModel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src      string
		commands []string
		opaque   string // a substring of an Opaque entry; "" means none
	}{
		{"bash <<<'git status' <evil.sh", []string{"bash"}, ""},
		{"bash <evil.sh <<<'git status'", []string{"git status"}, ""},
		{"bash 3<<<'rm x' <<<'ls'", []string{"ls"}, ""},
		{"bash 3<<<'rm x' <<<'ls' 0<&3", []string{"rm x"}, ""},
		{"bash 3<<<'rm x' <<<'ls' <&3-", []string{"rm x"}, ""},
		{"bash 3<<<'rm x' 0>&3", []string{"rm x"}, ""},
		{"bash <&-", []string{"bash"}, ""},
		{"bash <<<'ls' 0<&-", []string{"bash"}, ""},
		{"bash /dev/fd/5 5<<<'rm x' <<<'ls'", []string{"rm x"}, ""},
		{"bash - <<<'ls'", []string{"ls"}, ""},
		{"bash -s a b <<<'ls'", []string{"ls"}, ""},
		{"bash -x -o pipefail <<<'ls'", []string{"ls"}, ""},
		{"bash {fd}<<<'rm x' <<<'ls'", []string{"ls"}, ""},
		{"{ bash; } <<<'ls'", []string{"ls"}, ""},
		{"{ bash <<<'ls'; } <evil.sh", []string{"ls"}, ""},
		{"while bash; do :; done <<<'ls'", []string{"ls", ":"}, ""},
		{"cat x | bash <<<'ls'", []string{"cat x", "ls"}, ""},
		{"cat x | { bash; }", []string{"cat x", "bash"}, "from a pipe"},
		{"cat x | echo $(bash)", []string{"cat x", "echo $(bash)", "bash"}, "from a pipe"},
		{"echo $(bash) <<<'ls'", []string{"echo $(bash)", "bash"}, "its statement redirects"},
		{"bash <<<\"$X\"", []string{"bash"}, "here-string only known"},
		{"bash <<EOF\n$(id)\nEOF", []string{"bash", "id"}, "here-document only known"},
		{"bash <&3", []string{"bash"}, ""}, // the Bash tool opens no descriptor 3: nothing to read
		{"exec 3<<<'rm x'; bash <&3", []string{"exec", "bash"}, "exec redirects"},
		{"f() { bash; }", []string{"bash"}, "function's caller"},
		{"trap 'bash' EXIT", []string{"trap bash EXIT", "bash"}, "when the trap fires"},
		{"bash <<'EOF'\nbash\nrm x\nEOF", []string{"bash", "rm x"}, ""},
		{"ls | xargs bash -c 'bash'", []string{"ls", "bash"}, ""}, // xargs gives it an empty stdin
		{"ls | xargs -a list bash -c 'bash'", []string{"ls", "bash"}, "from a pipe"},
		{"source <<<'ls'", []string{"source"}, ""}, // source needs a file operand
		{"source /dev/stdin <<<'ls'", []string{"ls"}, ""},
		{". /proc/self/fd/0 <<<'ls'", []string{"ls"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			t.Parallel()
			a := Analyze(tt.src)
			if got := texts(a); !slices.Equal(got, tt.commands) {
				t.Errorf("commands = %q, want %q", got, tt.commands)
			}
			if tt.opaque == "" && len(a.Opaque) > 0 {
				t.Errorf("unexpected opaque %q", a.Opaque)
			}
			if tt.opaque != "" && !hasOpaque(a, tt.opaque) {
				t.Errorf("opaque = %q, want one containing %q", a.Opaque, tt.opaque)
			}
		})
	}
}

// Values bash evaluates as code: a use is fine only when every value the
// variable can hold is harmless.
func TestValuesModel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src    string
		opaque bool
	}{
		{"(( 1 + 2 ))", false},
		{"echo $((0x1f + 2#101 + 64#_@))", false},
		{"(( x ))", false}, // from the environment weft starts the tool with
		{"x=5; (( x ))", false},
		{"x=y; y=7; (( x ))", false},
		{"x=y; y=x; (( x ))", false}, // bash refuses the recursion
		{"x='1 + y'; (( x ))", false},
		{"x='a[1]'; (( x ))", false},
		{"x='a[i]'; i=$((3)); (( x ))", false},
		{"x='a[$(id)]'; (( x ))", true},
		{"x='a[`id`]'; (( x ))", true},
		{"x='$(id)'; (( x ))", true},
		{"x=\"$y\"; y='a[$(id)]'; (( x ))", true},
		{"x+=1; (( x ))", true},
		{"x=$(id); (( x ))", true},
		{"x=${#y}; (( x ))", false},
		{"read x; (( x ))", true},
		{"read -a x; (( x ))", true},
		{"mapfile x; (( x ))", true},
		{"printf -v x %s 1; (( x ))", true},
		{"getopts ab x; (( x ))", true},
		{"for x in 1 2; do (( x )); done", false},
		{"for x; do (( x )); done", true},
		{"for x in *; do (( x )); done", true},
		{"select x in a b; do (( x )); done", true},
		{": ${x:=a[\\$(id)]}; (( x ))", true},
		{"x='a[$(id)]'; let x+1", true},
		{"x='a[$(id)]'; builtin let x+1", true},
		{"let 'y = 2 * 3'", false},
		{"x='a[$(id)]'; [[ $x -lt 1 ]]", true},
		{"x='a[$(id)]'; [[ $x < 1 ]]", false},     // a string comparison
		{"x='a[$(id)]'; [ \"$x\" -eq 1 ]", false}, // test does not evaluate
		{"x='a[$(id)]'; echo ${a[x]}", true},
		{"x='a[$(id)]'; echo ${a[@]} ${#a[*]}", false},
		{"x='a[$(id)]'; a[x]=1", true},
		{"x='a[$(id)]'; a=([x]=1)", true},
		{"x='a[$(id)]'; declare -A m; m[x]=1; echo ${m[x]} ${m[$x]}", false},
		{"x='a[$(id)]'; echo ${s:1:x}", true},
		{"x='a[$(id)]'; echo ${!x}", true},
		{"x=HOME; echo ${!x}", false},
		{"x='a[1]'; echo ${!x}", false},
		{"x='a[@]'; echo ${!x}", false},
		{"echo ${!1}", true},
		{"echo ${!prefix*} ${!a[@]}", false},
		{"x='\\u@\\h'; echo ${x@P}", true},
		{"x=plain; echo ${x@P} ${x@Q} ${x@U}", false},
		{"echo ${PS1@P}", false},
		{"declare -n r=x", true},
		{"typeset -n r=x", true},
		{"builtin declare -n r=PATH", true},
		{"export -n x", false},
		{"declare -i n=5; n=6", false},
		{"declare -i n; n='x+1'", false},
		{"declare -i n; n='a[$(id)]'", true},
		{"local -i n; n=$1", true},
		{"declare \"$x\"", true},
		{"declare 'a[$(id)]=1'", true},
		{"unset 'a[$(id)]'", true},
		{"unset 'a[1]' b", false},
		{"read 'a[$(id)]'", true},
		{"[[ -v a[1] ]]", false},
		{"[[ -v 'a[$(id)]' ]]", true},
		{"test -v 'a[$(id)]'", true},
		{"wait -p 'a[$(id)]'", true},
		{"echo $(( $(cat n) ))", true},
		{"echo $(( ${x:-0} ))", true},
		{"source ./env.sh; (( x ))", true},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			t.Parallel()
			a := Analyze(tt.src)
			if got := len(a.Opaque) > 0; got != tt.opaque {
				t.Errorf("opaque = %q, want opaque %v", a.Opaque, tt.opaque)
			}
		})
	}
}

// Wrappers are parsed as the real tools parse their options.
func TestWrapperOptions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src      string
		commands []string
		opaque   string
	}{
		{"env --uns echo rm -rf victim", []string{"rm -rf victim"}, ""},
		{"env --u=X -- rm x", []string{"rm x"}, ""},
		{"env -i - A=1 'BASH_FUNC_f%%=() { id; }' rm x", []string{"id", "rm x"}, ""},
		{"env -S 'A=1 rm x'", []string{"rm x"}, ""},
		{"env -S 'rm \"a b\"'", []string{"rm a b"}, ""},
		{"env -S 'rm\\_x'", []string{"env -S rm\\_x"}, "escapes or variables"},
		{"env --bogus rm x", []string{"env --bogus rm x"}, "unknown option --bogus"},
		{"env -Z rm x", []string{"env -Z rm x"}, "unknown option -Z"},
		{"env -u", []string{"env -u"}, "needs a value"},
		{"env $OPTS rm x", []string{"env $OPTS rm x"}, "could be an option"},
		{"timeout 5", []string{"timeout 5"}, ""},
		{"timeout -s9 5 rm x", []string{"rm x"}, ""},
		{"timeout --verb 5 rm x", []string{"rm x"}, ""},
		{"nice -n5 rm x", []string{"rm x"}, ""},
		{"nice -+5 rm x", []string{"rm x"}, ""},
		{"stdbuf -o0 -eL rm x", []string{"rm x"}, ""},
		{"xargs -0 -n1 -P4 rm", []string{"rm"}, ""},
		{"xargs -i rm {}", []string{"rm {}"}, ""},
		{"xargs -I% sh -c 'rm %'", []string{"sh -c rm %"}, "a script only known"},
		{"xargs -r -- rm", []string{"rm"}, ""},
		{"xargs", []string{"echo"}, ""},
		{"sudo -u root -E rm x", []string{"sudo -u root -E rm x", "rm x"}, ""},
		{"sudo -- A=1 rm x", []string{"sudo -- A=1 rm x", "rm x"}, ""},
		{"sudo -l rm x", []string{"sudo -l rm x"}, ""},
		{"doas -s", []string{"doas -s"}, ""},
		{"chroot /srv rm x", []string{"rm x"}, ""},
		{"ionice -p 42", []string{"ionice -p 42"}, ""},
		{"ionice -c 2 -n 7 rm x", []string{"rm x"}, ""},
		{"taskset -p 1 42", []string{"taskset -p 1 42"}, ""},
		{"taskset -a 0x3 rm x", []string{"rm x"}, ""},
		{"chrt -m", []string{"chrt -m"}, ""},
		{"setsid -f rm x", []string{"rm x"}, ""},
		{"flock -x 9", []string{"flock -x 9"}, ""},
		{"flock -w 5 /tmp/l rm x", []string{"rm x"}, ""},
		{"flock --no /tmp/l rm x", []string{"flock --no /tmp/l rm x"}, "ambiguous"},
		{"script -q -c 'rm x' out.log", []string{"script -q -c rm x out.log", "rm x"}, ""},
		{"watch -x rm x", []string{"rm x"}, ""},
		{"watch -d=permanent 'ls; rm x'", []string{"watch -d=permanent ls; rm x", "ls", "rm x"}, ""},
		{"su -s /bin/zsh root", []string{"su -s /bin/zsh root"}, "as the shell"},
		{"su - root -c 'rm x'", []string{"su - root -c rm x", "rm x"}, ""},
		{"runuser -u u rm x", []string{"runuser -u u rm x", "rm x"}, ""},
		{"command -v rm", []string{"command -v rm"}, ""},
		{"command -pV rm", []string{"command -pV rm"}, ""},
		{"builtin eval 'rm x'", []string{"rm x"}, ""},
		{"exec -a name rm x", []string{"rm x"}, ""},
		{"command time -f %e -o t rm x", []string{"rm x"}, ""},
		{"prlimit -n100 rm x", []string{"rm x"}, ""},
		{"prlimit -n 100 rm x", []string{"100 rm x"}, ""}, // -n's value must be attached: 100 is the command
		{"unshare -rm rm x", []string{"rm x"}, ""},
		{"nsenter --target=1 --mount --uts rm x", []string{"rm x"}, ""},
		{"busybox --list", []string{"busybox --list"}, ""},
		{"trap - INT", []string{"trap - INT"}, ""},
		{"trap 'rm x'", []string{"trap rm x"}, ""}, // one operand: a signal to reset
		{"trap -p EXIT", []string{"trap -p EXIT"}, ""},
		{"alias ls", []string{"alias ls"}, ""},
		{"find . -execdir rm {} ';'", []string{"find . -execdir rm {} ;", "rm {}"}, ""},
		{"/usr/*/env rm x", []string{"rm x"}, ""},
		{"/usr/bin/[e]nv rm x", []string{"/usr/bin/[e]nv rm x"}, "may be env"},
		{"@(rm) x", []string{"@(rm) x"}, "only known when it runs"},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			t.Parallel()
			a := Analyze(tt.src)
			if got := texts(a); !slices.Equal(got, tt.commands) {
				t.Errorf("commands = %q, want %q", got, tt.commands)
			}
			if tt.opaque == "" && len(a.Opaque) > 0 {
				t.Errorf("unexpected opaque %q", a.Opaque)
			}
			if tt.opaque != "" && !hasOpaque(a, tt.opaque) {
				t.Errorf("opaque = %q, want one containing %q", a.Opaque, tt.opaque)
			}
		})
	}
}

func TestReads(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src   string
		reads []string
	}{
		{"cat a b", []string{"a", "b"}},
		{"cat < a; wc -l <> b", []string{"a", "b"}},
		{"echo $(<.env)", []string{".env"}},
		{"diff <(ls) <(ls -a)", nil},
		{"cat - /dev/stdin /dev/null", nil},
		{"head -n 5 -- -f", []string{"5", "-f"}},
		{"grep -e x -f pats a b", []string{"pats", "a", "b"}},
		{"grep x a", []string{"a"}},
		{"grep -r x", []string{"./**"}},
		{"grep -d recurse x src", []string{"src/**"}},
		{"rg x src", []string{"x/**", "src/**", "./**"}},
		{"cp -r a b dest", []string{"a/**", "b/**"}},
		{"cp -t dest a", []string{"a/**"}},
		{"tar czf out.tgz src", []string{"out.tgz/**", "src/**"}},
		{"tar -C /x -cf out.tgz src", []string{"?/out.tgz/**", "?/src/**", "/x/**"}}, // -C's value counts too
		{"dd if=a of=b", []string{"a"}},
		{"curl -d @a -F f=@b --data-binary=@c https://x", []string{"a", "b", "c", "https://x"}},
		{"cat *.go", []string{"glob:*.go"}},
		{"cat $f", []string{"dynamic:$f"}},
		{"cat \"$HOME/x\"", []string{"~/x"}},
		{"HOME=/tmp; cat $HOME/x", []string{"dynamic:$HOME/x"}},
		{"for f in a 'b c'; do cat \"$f\"; done", []string{"a", "b c"}},
		{"for f in a 'b c'; do cat $f; done", []string{"a", "b", "c"}},
		{"for f in *.md; do cat \"$f\"; done", []string{"glob:*.md"}},
		{"f=x; f=$(ls); cat $f", []string{"dynamic:$f"}},
		{"cd sub && cat a", []string{"a", "sub/a"}},
		{"cd /etc; cd ..; cat a", []string{"a", "/etc/a", "../a", "/a"}},
		{"cd $d && cat a", []string{"?/a"}},
		{"for d in a b; do cd $d; done; cat x", []string{"?/x"}},
		{"shopt -s dotglob; cat *", []string{"dynamic:*"}},
		{"ls | xargs cat", []string{"dynamic:(names cat gets from xargs)"}},
		{"bash x.sh < y", []string{"y", "x.sh"}},
		{"source lib.sh", []string{"lib.sh"}},
		{"source -- lib.sh a b", []string{"lib.sh"}},
		{"bash --rcfile rc -i -c ls", []string{"rc"}},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			t.Parallel()
			a := Analyze(tt.src)
			if got := paths(a.Reads); !slices.Equal(got, tt.reads) {
				t.Errorf("reads = %q, want %q", got, tt.reads)
			}
		})
	}
}

func TestPattern(t *testing.T) {
	t.Parallel()
	cmd := func(args ...string) Command {
		c := Command{Args: args, Text: strings.Join(args, " ")}
		for _, a := range args {
			k := Literal
			switch {
			case strings.HasPrefix(a, "$"):
				k = Dynamic
			case hasWildcard(a):
				k = Glob
			}
			c.Kinds = append(c.Kinds, k)
		}
		return c
	}
	tests := []struct {
		name string
		p, q Pattern
		want bool
	}{
		{"literal equal", LiteralPattern("a b"), LiteralPattern("a b"), true},
		{"literal differ", LiteralPattern("a b"), LiteralPattern("a c"), false},
		{"wildcard", WildcardPattern("rm *"), LiteralPattern("rm -rf x"), true},
		{"wildcard needs the space", WildcardPattern("rm *"), LiteralPattern("rmdir x"), false},
		{"two wildcards", WildcardPattern("a*c"), WildcardPattern("*b*"), true},
		{"any", AnyPattern(), LiteralPattern("whatever"), true},
		{"empty pattern", Pattern{}, AnyPattern(), false},
		{"dynamic name", WildcardPattern("rm *"), cmd("$X", "x").Pattern(false), true},
		{"dynamic argument", WildcardPattern("git push --force*"), cmd("git", "push", "$F").Pattern(false), true},
		{"literal name, dynamic argument", WildcardPattern("rm *"), cmd("ls", "$F").Pattern(false), false},
		{"glob name", WildcardPattern("rm *"), cmd("/bin/r[m]", "x").Pattern(true), true},
		{"glob name that cannot be rm", WildcardPattern("rm *"), cmd("/bin/l[s]", "x").Pattern(true), false},
		{"more args", WildcardPattern("rm -rf *"), Command{Args: []string{"rm"}, Text: "rm", Kinds: []Kind{Literal}, MoreArgs: true}.Pattern(false), true},
		{"below", LiteralPattern("/ws/secrets").Below(), LiteralPattern("/ws/secrets/key"), true},
		{"below is not a prefix", LiteralPattern("/ws/.env").Below(), LiteralPattern("/ws/.env.example"), false},
		{"below of a star does not loop", LiteralPattern("ab").Below(), LiteralPattern("abc"), false},
		{"glob star", GlobPattern("/ws", "*.go"), LiteralPattern("/ws/a.go"), true},
		{"glob star is one component", GlobPattern("/ws", "*.go"), LiteralPattern("/ws/d/a.go"), false},
		{"glob star skips dotfiles", GlobPattern("/ws", "*"), LiteralPattern("/ws/.env"), false},
		{"glob star before a dot", GlobPattern("/ws", "*env"), LiteralPattern("/ws/.env"), false},
		{"glob question skips dotfiles", GlobPattern("/ws", "?env"), LiteralPattern("/ws/.env"), false},
		{"glob explicit dot", GlobPattern("/ws", ".e*"), LiteralPattern("/ws/.env"), true},
		{"glob bracket", GlobPattern("/ws", ".[e]nv"), LiteralPattern("/ws/.env"), true},
		{"glob dir then dot", GlobPattern("/ws", "*/.env"), LiteralPattern("/ws/sub/.env"), true},
		{"glob escaped", GlobPattern("/ws", `\*`), LiteralPattern("/ws/x"), false},
		{"glob dotdot", GlobPattern("/ws", "sub/../.e*"), LiteralPattern("/ws/.env"), true},
		{"glob absolute", GlobPattern("/ws", "/etc/*"), LiteralPattern("/etc/passwd"), true},
		{"glob dir with pattern chars", GlobPattern("/w*s", "a"), LiteralPattern("/wxs/a"), false},
		{"doublestar", DoublestarPattern("/ws/**/.env"), LiteralPattern("/ws/.env"), true},
		{"doublestar deep", DoublestarPattern("/ws/**/.env"), LiteralPattern("/ws/a/b/.env"), true},
		{"doublestar star", DoublestarPattern("/ws/*.pem"), LiteralPattern("/ws/a/b.pem"), false},
		{"doublestar braces", DoublestarPattern("/ws/{a,b}"), LiteralPattern("/ws/c/d"), true},
		{"doublestar against glob", DoublestarPattern("/ws/**/.env"), GlobPattern("/ws", "src/.e*"), true},
		{"doublestar against glob that skips dots", DoublestarPattern("/ws/**/.env"), GlobPattern("/ws", "src/*"), false},
	}
	for _, tt := range tests {
		if got := tt.p.Intersects(tt.q); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
		if got := tt.q.Intersects(tt.p); got != tt.want {
			t.Errorf("%s (reversed): %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestPathPattern(t *testing.T) {
	t.Parallel()
	envFile := LiteralPattern("/ws/.env")
	tests := []struct {
		p    Path
		want bool // might name /ws/.env
	}{
		{Path{Name: ".env"}, true},
		{Path{Name: "./sub/../.env"}, true},
		{Path{Name: ".env.example"}, false},
		{Path{Name: "~/.env"}, false},
		{Path{Name: "~x/.env"}, true},
		{Path{Name: "$F", Kind: Dynamic}, true},
		{Path{Name: "*", Kind: Glob}, false},
		{Path{Name: ".*", Kind: Glob}, true},
		{Path{Name: ".", Tree: true}, true},
		{Path{Name: "src", Tree: true}, false},
		{Path{Name: ".env", Unrooted: true}, true},
		{Path{Name: "main.go", Unrooted: true}, false},
		{Path{Name: "../x", Unrooted: true}, true},
	}
	for _, tt := range tests {
		if got := tt.p.Pattern("/ws", "/home/u").Intersects(envFile); got != tt.want {
			t.Errorf("%+v: %v, want %v", tt.p, got, tt.want)
		}
	}
	if !(Path{Name: "x"}).Pattern("", "/home/u").Intersects(envFile) {
		t.Error("a relative path without a base may be anything")
	}
}

func TestGetopt(t *testing.T) {
	t.Parallel()
	spec := optSpec{"+ab:c::", []string{"alpha", "beta=", "gamma=?", "alphabet"}}
	lit := func(ss ...string) []word {
		var out []word
		for _, s := range ss {
			out = append(out, word{val: s})
		}
		return out
	}
	show := func(p parsedOpts) string {
		var parts []string
		for _, o := range p.opts {
			if o.has {
				parts = append(parts, o.name+"="+o.value.val)
			} else {
				parts = append(parts, o.name)
			}
		}
		return fmt.Sprintf("%v %v %s", parts, wordVals(p.operands), p.err)
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"x", "-a", "op", "-b", "1"}, "[a] [op -b 1] "},
		{[]string{"x", "-ab1", "op"}, "[a b=1] [op] "},
		{[]string{"x", "-ab", "1", "op"}, "[a b=1] [op] "},
		{[]string{"x", "-c", "op"}, "[c] [op] "},
		{[]string{"x", "-cv", "op"}, "[c=v] [op] "},
		{[]string{"x", "--alpha", "op"}, "[alpha] [op] "},
		{[]string{"x", "--alphab", "op"}, "[alphabet] [op] "},
		{[]string{"x", "--alp", "op"}, "[] [] --alp is ambiguous (--alpha, --alphabet)"},
		{[]string{"x", "--be", "v", "op"}, "[beta=v] [op] "},
		{[]string{"x", "--be=v", "op"}, "[beta=v] [op] "},
		{[]string{"x", "--g", "op"}, "[gamma] [op] "},
		{[]string{"x", "--g=v", "op"}, "[gamma=v] [op] "},
		{[]string{"x", "--alpha=v"}, "[] [] --alpha takes no value"},
		{[]string{"x", "--beta"}, "[] [] --beta needs a value"},
		{[]string{"x", "--delta"}, "[] [] unknown option --delta"},
		{[]string{"x", "-z"}, "[] [] unknown option -z"},
		{[]string{"x", "--", "-a"}, "[] [-a] "},
		{[]string{"x", "-", "-a"}, "[] [- -a] "},
	}
	for _, tt := range tests {
		if got := show(spec.parse(lit(tt.args...), 1)); got != tt.want {
			t.Errorf("%q: %s, want %s", tt.args, got, tt.want)
		}
	}
	// Without '+', options may follow operands, as GNU tools allow.
	permute := optSpec{"qc:", nil}
	if got := show(permute.parse(lit("script", "out", "-q", "-c", "ls", "more"), 1)); got != "[q c=ls] [out more] " {
		t.Errorf("permuting: %s", got)
	}
}

// Patterns grow linearly with what they describe, so a hostile command
// (a glob of ten thousand stars) cannot make the check slow.
func TestPatternSize(t *testing.T) {
	t.Parallel()
	glob := strings.Repeat("*?", 5000) + ".env"
	if n := len(GlobPattern("/ws", glob).states); n > 20*len(glob) {
		t.Errorf("%d states for a %d-byte glob", n, len(glob))
	}
	cmd := Command{Args: []string{"rm", strings.Repeat("$x", 5000)}, Kinds: []Kind{Literal, Dynamic}}
	cmd.Text = strings.Join(cmd.Args, " ")
	if n := len(cmd.Pattern(true).states); n > 100 {
		t.Errorf("%d states for a dynamic word", n)
	}
	// Many uses of many variables: each answer is computed once.
	var b strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&b, "x%d=x%d; ", i, i+1)
	}
	for range 2000 {
		b.WriteString("echo $((x0)); ")
	}
	if a := Analyze(b.String()); len(a.Opaque) != 0 {
		t.Errorf("opaque = %q", a.Opaque)
	}
	a := Analyze("cat " + glob)
	if len(a.Reads) != 1 || a.Reads[0].Kind != Glob {
		t.Errorf("reads = %v", paths(a.Reads))
	}
}
