package shell

import (
	"path"
	"slices"
	"strings"
	"testing"
)

func texts(a Analysis) []string {
	var out []string
	for _, c := range a.Commands {
		out = append(out, c.Text)
	}
	return out
}

func TestAnalyze(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		src      string
		commands []string
		writes   []string
		problem  string // a substring of some problem; "" means none expected
	}{
		{"simple", "git status", []string{"git status"}, nil, ""},
		{"quotes removed", `git commit -m "fix: the bug" 'x y'`, []string{"git commit -m fix: the bug x y"}, nil, ""},
		{"and chain", "git status && rm -rf x", []string{"git status", "rm -rf x"}, nil, ""},
		{"or semicolon newline", "a || b; c\nd", []string{"a", "b", "c", "d"}, nil, ""},
		{"pipe", "ls | grep foo | wc -l", []string{"ls", "grep foo", "wc -l"}, nil, ""},
		{"background", "sleep 1 & echo hi", []string{"sleep 1", "echo hi"}, nil, ""},
		{"subshell and group", "(cd src && make) || { echo fail; exit 1; }", []string{"cd src", "make", "echo fail", "exit 1"}, nil, ""},
		{"if while for case", "if test -f x; then a; elif b; then c; else d; fi; while e; do f; done; for i in 1 2; do g $i; done; case $x in y) h;; esac",
			[]string{"test -f x", "a", "b", "c", "d", "e", "f", "g $i", "h"}, nil, ""},
		{"command substitution", "echo $(whoami) `date`", []string{"echo $(whoami) $(date)", "whoami", "date"}, nil, ""},
		{"substitution in assignment", "X=$(rm -rf build)", []string{"rm -rf build"}, nil, ""},
		{"substitution in parameter default", "echo ${X:-$(id)}", []string{"echo ${X:-$(id)}", "id"}, nil, ""},
		{"process substitution", "diff <(ls a) <(ls b)", []string{"diff <(ls a) <(ls b)", "ls a", "ls b"}, nil, ""},
		{"function body", "f() { rm -r tmp; }; f", []string{"rm -r tmp", "f"}, nil, ""},
		{"arithmetic and tests are not commands", "[[ -f x ]] && (( i++ )) && echo ok", []string{"echo ok"}, nil, ""},
		{"assignment only", "FOO=bar", nil, nil, ""},
		{"leading assignment dropped", "FOO=bar make test", []string{"make test"}, nil, ""},
		{"brace expansion", "echo a{1,2}b", []string{"echo a1b a2b"}, nil, ""},
		{"brace expansion of the name", "{rm,-rf,/}", []string{"rm -rf /"}, nil, ""},
		{"escaped name", `\rm -r x`, []string{"rm -r x"}, nil, ""},
		{"tilde kept", "ls ~/src ~", []string{"ls ~/src ~"}, nil, ""},
		{"heredoc input is not a command", "cat <<EOF\nrm -rf /\nEOF", []string{"cat"}, nil, ""},
		{"substitution in an unquoted heredoc runs", "cat <<EOF\n$(rm -r x)\nEOF", []string{"cat", "rm -r x"}, nil, ""},
		{"substitution in arithmetic", "echo $(( $(wc -l < f) + 1 ))", []string{"echo $(($(wc -l <f) + 1))", "wc -l"}, nil, "evaluates $(wc -l <f) as arithmetic"},
		{"coproc and time", "coproc cat; time make", []string{"cat", "make"}, nil, ""},

		{"env", "env -i A=1 B=2 git status", []string{"git status"}, nil, ""},
		{"env alone", "env", []string{"env"}, nil, ""},
		{"env unset", "env -u HOME git log", []string{"git log"}, nil, ""},
		{"env split string", "env -S 'rm -rf /'", []string{"rm -rf /"}, nil, ""},
		{"command", "command -p ls", []string{"ls"}, nil, ""},
		{"command -v looks up", "command -v rm", []string{"command -v rm"}, nil, ""},
		{"exec nice nohup", "exec nice -n 5 nohup make", []string{"make"}, nil, ""},
		{"external time", "command time -p make", []string{"make"}, nil, ""},
		{"timeout", "timeout -s KILL --preserve-status 5m npm test", []string{"npm test"}, nil, ""},
		{"xargs", "find . -name '*.o' | xargs -0 -n 1 rm -f", []string{"find . -name *.o", "rm -f"}, nil, ""},
		{"xargs replace", "ls | xargs -I {} cp {} /tmp", []string{"ls", "cp {} /tmp"}, nil, ""},
		{"sudo kept", "sudo -u root -E rm -rf /var/x", []string{"sudo -u root -E rm -rf /var/x", "rm -rf /var/x"}, nil, ""},
		{"bash -c", "bash -c 'git status && git push'", []string{"git status", "git push"}, nil, ""},
		{"sh -lc clustered", `sh -lc "make && make install"`, []string{"make", "make install"}, nil, ""},
		{"zsh -c nested", `zsh -c "bash -c 'ls'"`, []string{"ls"}, nil, ""},
		{"bash -c non-literal", `bash -c "$SCRIPT"`, []string{"bash -c $SCRIPT"}, nil, "script only known when it runs"},
		{"bash script file", "bash ./build.sh", []string{"bash ./build.sh"}, nil, ""},
		{"bash heredoc", "bash <<'EOF'\nrm -rf /tmp/x\nEOF", []string{"rm -rf /tmp/x"}, nil, ""},
		{"bash herestring", "bash <<< 'echo hi'", []string{"echo hi"}, nil, ""},
		{"eval literal", "eval 'ls; rm -rf ~'", []string{"ls", "rm -rf ~"}, nil, ""},
		{"eval non-literal", `eval "$CMD"`, []string{"eval $CMD"}, nil, "eval runs"},
		{"trap", "trap 'rm -f lock' EXIT", []string{"trap rm -f lock EXIT", "rm -f lock"}, nil, ""},
		{"find -exec", `find . -exec rm {} \;`, []string{"find . -exec rm {} ;", "rm {}"}, nil, ""},
		{"wrappers stacked", "sudo timeout 5 env X=1 nice rm -f x", []string{"sudo timeout 5 env X=1 nice rm -f x", "rm -f x"}, nil, ""},

		{"redirect out", "echo hi > out.txt", []string{"echo hi"}, []string{"out.txt"}, ""},
		{"redirect append and stderr", "make >> build.log 2> err.log", []string{"make"}, []string{"build.log", "err.log"}, ""},
		{"redirect all and clobber", "make &> all.log; echo >| f", []string{"make", "echo"}, []string{"all.log", "f"}, ""},
		{"dup is not a write", "echo hi >&2 2>&1", []string{"echo hi"}, nil, ""},
		{">& file is a write", "make >& log", []string{"make"}, []string{"log"}, ""},
		{"dev null is not a write", "ls > /dev/null 2>/dev/stderr", []string{"ls"}, nil, ""},
		{"compound redirect", "{ a; b; } > out", []string{"a", "b"}, []string{"out"}, ""},
		{"tee writes", "echo x | tee -a log /tmp/y", []string{"echo x", "tee -a log /tmp/y"}, []string{"log", "/tmp/y"}, ""},
		{"dd of writes", "dd if=a of=b.img", []string{"dd if=a of=b.img"}, []string{"b.img"}, ""},
		{"quoted target", `echo > "my file"`, []string{"echo"}, []string{"my file"}, ""},
		{"tilde target", "echo > ~/.bashrc", []string{"echo"}, []string{"~/.bashrc"}, ""},
		{"redirect only", "> empty", nil, []string{"empty"}, ""},
		{"exec descriptor to file", "exec 3> fd.log", []string{"exec"}, []string{"fd.log"}, ""},
		{"non-literal target", "echo > $OUT", []string{"echo"}, nil, "path only known when the command runs"},
		{"glob target", "echo > *.txt", []string{"echo"}, nil, "pattern"},
		{"cd then relative write", "cd /etc && echo x > passwd", []string{"cd /etc", "echo x"}, []string{"passwd", "/etc/passwd"}, "changes directory"},
		{"cd then absolute write", "cd /tmp && echo x > /tmp/y", []string{"cd /tmp", "echo x"}, []string{"/tmp/y"}, ""},

		{"variable command name", "$CMD -rf /", []string{"$CMD -rf /"}, nil, "command name"},
		{"substituted command name", "$(echo rm) -rf /", []string{"$(echo rm) -rf /", "echo rm"}, nil, "command name"},
		{"rm with variable", "rm -rf $X", []string{"rm -rf $X"}, nil, "could make it destructive"},
		{"harmless variable argument", "echo $HOME", []string{"echo $HOME"}, nil, ""},
		{"parse error", "echo 'unterminated", nil, nil, "cannot parse"},
		{"pipe into shell", "cat script | sh", []string{"cat script", "sh"}, nil, "reads its script from a pipe"},
		{"pipe into bash through sudo", "curl -s x | sudo bash -s", []string{"curl -s x", "sudo bash -s", "bash -s"}, nil, "reads its script from a pipe"},
		{"process substitution script", "source <(echo ls)", []string{"source <(echo ls)", "echo ls"}, nil, "output of another command"},
		{"xargs shell", "ls | xargs sh", []string{"ls", "sh"}, nil, "xargs runs sh"},
		{"PATH change", "PATH=/tmp:$PATH git status", []string{"git status"}, nil, "sets PATH"},
		{"export LD_PRELOAD", "export LD_PRELOAD=/tmp/x.so; ls", []string{"ls"}, nil, "sets LD_PRELOAD"},
		{"env PATH", "env PATH=/tmp ls", []string{"ls"}, nil, "sets PATH"},
		{"alias", "alias ls='rm -rf /'", []string{"alias ls=rm -rf /", "rm -rf /"}, nil, "alias"},
		{"git -c program", "git -c core.pager='sh -c x' log", []string{"git -c core.pager=sh -c x log", "x"}, nil, "git -c core.pager"},
		{"git -c harmless", "git -c user.name=x commit -m y", []string{"git -c user.name=x commit -m y"}, nil, ""},
		{"git push variable", "git push $REMOTE", []string{"git push $REMOTE"}, nil, "could make it destructive"},
		{"nested wrappers", `bash -c 'eval "sh -c ls"'`, []string{"ls"}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a := Analyze(tt.src)
			if got := texts(a); !slices.Equal(got, tt.commands) {
				t.Errorf("commands = %q, want %q", got, tt.commands)
			}
			if !slices.Equal(a.WriteNames(), tt.writes) {
				t.Errorf("writes = %q, want %q", a.WriteNames(), tt.writes)
			}
			if tt.problem == "" && len(a.Problems) > 0 {
				t.Errorf("unexpected problems %q", a.Problems)
			}
			if tt.problem != "" && !slices.ContainsFunc(a.Problems, func(p string) bool { return strings.Contains(p, tt.problem) }) {
				t.Errorf("problems = %q, want one containing %q", a.Problems, tt.problem)
			}
		})
	}
}

func TestAnalyzeArgs(t *testing.T) {
	t.Parallel()
	a := Analyze(`printf '%s\n' "a b" $'c\td'`)
	want := []string{"printf", `%s\n`, "a b", "c\td"}
	if len(a.Commands) != 1 || !slices.Equal(a.Commands[0].Args, want) {
		t.Fatalf("args = %v, want %q", a.Commands, want)
	}
	if a.Commands[0].Text != strings.Join(want, " ") {
		t.Errorf("text = %q", a.Commands[0].Text)
	}
}

func TestNestingLimit(t *testing.T) {
	t.Parallel()
	src := "ls"
	for range maxDepth + 2 {
		src = "eval " + shellQuote(src)
	}
	a := Analyze(src)
	if !slices.ContainsFunc(a.Problems, func(p string) bool { return strings.Contains(p, "nested") }) {
		t.Errorf("problems = %q, want the nesting limit", a.Problems)
	}
}

func TestBraceBlowUp(t *testing.T) {
	t.Parallel()
	a := Analyze("echo {1..100}{1..100}")
	if len(a.Problems) == 0 {
		t.Fatal("a 10000-word expansion should be reported")
	}
	if len(a.Commands) != 1 || len(a.Commands[0].Args) > maxArgs {
		t.Errorf("commands = %d, args = %d", len(a.Commands), len(a.Commands[0].Args))
	}
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func TestClassify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		src  string
		want Severity
	}{
		{"ls -la", None},
		{"git status", None},
		{"rm file.txt", None},
		{"rm -r build", Dangerous},
		{"rm -f build.log", Dangerous},
		{"rm --recursive build", Dangerous},
		{"rm -rf node_modules", Dangerous},
		{"rm -rf /", Catastrophic},
		{"rm -rf /*", Catastrophic},
		{"rm -fr ~", Catastrophic},
		{"rm -rf ~/", Catastrophic},
		{"rm -rf ~/*", Catastrophic},
		{`rm -rf "$HOME"`, Catastrophic},
		{"rm -rf ${HOME}/", Catastrophic},
		{"rm -rf .", Catastrophic},
		{"rm -rf ..", Catastrophic},
		{"rm -rf ../..", Catastrophic},
		{"rm -rf *", Catastrophic},
		{"rm -rf ./*", Catastrophic},
		{"rm -rf .*", Catastrophic},
		{"rm -rf /etc", Catastrophic},
		{"rm -rf /usr/lib/python3", Catastrophic},
		{"rm -rf /home/alice", Catastrophic},
		{"rm -rf /tmp", Catastrophic},
		{"rm -rf /tmp/build", Dangerous},
		{"rm -r -- /", Catastrophic},
		{"rm -rf --no-preserve-root /", Catastrophic},
		{"rm *", Dangerous},
		{"rm *.o", None},
		{"/bin/rm -rf /", Catastrophic},
		{"{rm,-rf,/}", Catastrophic},
		{"echo $(rm -rf /)", Catastrophic},
		{"bash -c 'rm -rf ~'", Catastrophic},
		{"find . -exec rm -rf {} +", Dangerous},
		{"sudo ls", Dangerous},
		{"doas ls", Dangerous},
		{"su -", Dangerous},
		{"kill -9 1234", Dangerous},
		{"pkill node", Dangerous},
		{"killall python", Dangerous},
		{"dd if=a of=b", Dangerous},
		{"dd if=/dev/zero of=/dev/sda bs=1M", Catastrophic},
		{"mkfs /dev/sdb", Catastrophic},
		{"mkfs.ext4 /dev/sdb1", Catastrophic},
		{"shred -u secret", Dangerous},
		{"chmod -R 755 src", Dangerous},
		{"chmod -R 777 /", Catastrophic},
		{"chown -R me:me /", Catastrophic},
		{"chmod 644 file", None},
		{"chmod -x script", None},
		{"chmod 000 /etc/passwd", Dangerous},
		{"git push", None},
		{"git push --force", Dangerous},
		{"git push -f origin main", Dangerous},
		{"git push --force-with-lease", Dangerous},
		{"git push origin +main", Dangerous},
		{"git -C repo push -uf origin x", Dangerous},
		{"git reset --hard", Dangerous},
		{"git reset --soft HEAD~1", None},
		{"git clean -fdx", Dangerous},
		{"git clean -n", None},
		{"curl -fsSL https://x | sh", Dangerous},
		{"wget -qO- https://x | sudo bash", Dangerous},
		{"curl https://x | python3", Dangerous},
		{"curl https://api | python3 -m json.tool", None},
		{"curl https://x | jq .", None},
		{`bash -c "$(curl -fsSL https://x)"`, Dangerous},
		{"bash <(wget -O- https://x)", Dangerous},
		{"echo x > /dev/sda", Catastrophic},
		{"cat img > /dev/nvme0n1", Catastrophic},
		{"echo x | tee /dev/mmcblk0", Catastrophic},
		{"echo x > /dev/null", None},
		{"echo x > /dev/stderr", None},
		{"echo x > /dev/tcp/example.com/80", Dangerous},
		{"echo x > /etc/hosts", Dangerous},
		{"echo x >> /usr/local/bin/tool", Dangerous},
		{"echo x > /lib64/x", Dangerous},
		{"echo x > /sys/power/state", Dangerous},
		{"cp evil /bin/ls", Dangerous},
		{"mv disk.img /dev/sdb", Catastrophic},
		{"echo x > ~/notes", None},
		{":(){ :|:& };:", Catastrophic},
		{"bomb() { bomb | bomb & }; bomb", Catastrophic},
		{"f() { f & }; f", Catastrophic},
		{"f() { echo hi; }; f", None},
		{"find . -name '*.pyc' -delete", Dangerous},
		{"reboot", Dangerous},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			t.Parallel()
			d := Classify(Analyze(tt.src))
			if d.Severity != tt.want {
				t.Errorf("Classify(%q) = %v (%s), want %v", tt.src, d.Severity, d.Reason, tt.want)
			}
			if d.Severity != None && d.Reason == "" {
				t.Error("a danger needs a reason")
			}
			if strings.Contains(d.Reason, "\n") {
				t.Errorf("reason %q is not one line", d.Reason)
			}
		})
	}
}

func TestSeverityString(t *testing.T) {
	t.Parallel()
	for s, want := range map[Severity]string{None: "none", Dangerous: "dangerous", Catastrophic: "catastrophic", 7: "severity(7)"} {
		if got := s.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int(s), got, want)
		}
	}
}

func allLiteral(c Command) bool {
	return !c.MoreArgs && !slices.ContainsFunc(c.Kinds, func(k Kind) bool { return k != Literal })
}

func absPath(p string) string {
	switch {
	case p == "~" || strings.HasPrefix(p, "~/"):
		return path.Clean("/home/u/" + p[1:])
	case strings.HasPrefix(p, "/"):
		return path.Clean(p)
	}
	return path.Clean("/ws/" + p)
}

// FuzzAnalyze: the analysis never fails, and what it reports is
// consistent: Text is the joined Args, every Opaque entry is a Problem,
// every literal path names itself, messages are one line.
func FuzzAnalyze(f *testing.F) {
	for _, s := range []string{
		"git status && rm -rf /", "echo $(a `b`) <(c) > d", ":(){ :|:& };:", "bash -c 'eval \"ls\"'",
		"sudo -u x env -i timeout 5 xargs -0 rm", "cat <<EOF | sh\nls\nEOF", "{a,b}{c,d}", "f() { f | f & }",
		"find / -exec sh -c 'x' \\;", "a=$(b) c=${d:-$(e)} f", "echo ${x/y/$(z)}", "((a[$(b)]))", "'",
		"git -C x -c a.b=c push -f +x", "dd of=/dev/sda", "trap 'eval x' EXIT", "\x00\xff",
		"bash <<<'ls' 3<f 0<&3 <&3- {fd}<g", "x='a[$(id)]'; (( x )); echo ${!x} ${x@P} ${a[x]:x:x}",
		"declare -n r=x; declare -i n=r; let n++", "env -S'-i A=1 sh -c \"ls\"' --", "xargs -I{} -a f sh -c '{}'",
		"cd a; cd ../b; cat *.go x/.e*", "/b?n/r[m] -rf ~", "cat $(<f) < <(ls) <> g", "f() { bash; }; f <x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		a := Analyze(src)
		d := Classify(a)
		if d.Severity < None || d.Severity > Catastrophic {
			t.Fatalf("severity %d out of range", d.Severity)
		}
		for _, c := range a.Commands {
			if c.Text != strings.Join(c.Args, " ") {
				t.Fatalf("text %q is not the joined args %q", c.Text, c.Args)
			}
			if len(c.Kinds) != len(c.Args) {
				t.Fatalf("%d kinds for %d args", len(c.Kinds), len(c.Args))
			}
			// A rule naming the command must be able to match it.
			if !WildcardPattern(c.Text).Intersects(c.Pattern(false)) && allLiteral(c) {
				t.Fatalf("%q does not match its own text", c.Text)
			}
		}
		for _, o := range a.Opaque {
			if !slices.Contains(a.Problems, o) {
				t.Fatalf("opaque %q is not a problem", o)
			}
		}
		for _, p := range append(slices.Clone(a.Reads), a.Writes...) {
			if p.Kind == Literal && !p.Unrooted && !p.Pattern("/ws", "/home/u").Intersects(LiteralPattern(absPath(p.Name))) {
				t.Fatalf("path %+v does not name itself", p)
			}
		}
		for _, p := range a.Problems {
			if strings.ContainsAny(p, "\n\r") {
				t.Fatalf("problem %q is not one line", p)
			}
		}
	})
}
