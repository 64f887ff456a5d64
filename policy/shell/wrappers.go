package shell

// This file sees through the commands that run other commands: env,
// sudo, timeout, xargs, bash -c, eval, find -exec and the like. Each
// wrapper's options are parsed as the real tool parses them (see
// getopt.go), so the analysis finds the command where the wrapper does.

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

var shells = map[string]bool{"sh": true, "bash": true, "rbash": true, "zsh": true, "dash": true, "ksh": true, "mksh": true, "ash": true, "fish": true}

var interpreters = map[string]bool{
	"python": true, "python2": true, "python3": true, "perl": true, "ruby": true,
	"node": true, "php": true, "bun": true, "deno": true,
}

var downloaders = map[string]bool{"curl": true, "wget": true, "fetch": true}

// wrapper describes a command that runs the command given in its
// operands.
type wrapper struct {
	opts optSpec
	// skip is how many operands come before the command: timeout's
	// duration, chroot's new root, taskset's mask, chrt's priority.
	skip int
	// none lists the options with which no command runs (ionice -p): the
	// operands are something else.
	none []string
	// assigns: NAME=VALUE operands before the command (sudo).
	assigns bool
	// records: the wrapper is a command of its own that rules must cover
	// (sudo, doas), not only a way to run one.
	records bool
}

// wrappers are the options of each wrapper as the real tool (GNU
// coreutils, util-linux, findutils, sudo) defines them.
var wrappers = map[string]wrapper{
	"timeout": {opts: optSpec{"+k:s:v", []string{"preserve-status", "foreground", "kill-after=", "signal=", "verbose", "help", "version"}}, skip: 1},
	"nohup":   {opts: optSpec{"+", []string{"help", "version"}}},
	"stdbuf":  {opts: optSpec{"+i:o:e:", []string{"input=", "output=", "error=", "help", "version"}}},
	"setsid":  {opts: optSpec{"+cfhVw", []string{"ctty", "fork", "help", "version", "wait"}}},
	"chroot":  {opts: optSpec{"+", []string{"groups=", "userspec=", "skip-chdir", "help", "version"}}, skip: 1},
	"ionice": {opts: optSpec{"+c:n:p:P:u:tVh", []string{"class=", "classdata=", "pid=", "pgid=", "uid=", "ignore", "help", "version"}},
		none: []string{"p", "P", "u", "pid", "pgid", "uid", "h", "V", "help", "version"}},
	"taskset": {opts: optSpec{"+apchV", []string{"all-tasks", "pid", "cpu-list", "help", "version"}}, skip: 1,
		none: []string{"p", "pid", "h", "V", "help", "version"}},
	"chrt": {opts: optSpec{"+abdD:fhimopP:rRT:vV", []string{"all-tasks", "batch", "deadline", "fifo", "help", "idle", "max", "other",
		"pid", "reset-on-fork", "rr", "sched-deadline=", "sched-period=", "sched-runtime=", "verbose", "version"}}, skip: 1,
		none: []string{"p", "pid", "m", "max", "h", "V", "help", "version"}},
	"prlimit": {opts: optSpec{"+c::d::e::f::i::l::m::n::q::r::s::t::u::v::x::y::p:o:hV", []string{"pid=", "output=", "noheadings", "raw", "verbose",
		"help", "version", "core=?", "data=?", "nice=?", "fsize=?", "sigpending=?", "memlock=?", "rss=?", "nofile=?", "msgqueue=?",
		"rtprio=?", "stack=?", "cpu=?", "nproc=?", "as=?", "locks=?", "rttime=?"}}, none: []string{"p", "pid", "h", "V", "help", "version"}},
	"nsenter": {opts: optSpec{"+ahVt:m::u::i::n::p::C::U::T::S:G:r::w::W:FZ", []string{"all", "help", "version", "target=", "mount=?", "uts=?",
		"ipc=?", "net=?", "pid=?", "cgroup=?", "user=?", "time=?", "setuid=", "setgid=", "preserve-credentials", "root=?", "wd=?", "wdns=",
		"no-fork", "follow-context", "user-parent", "keep-caps", "join-cgroup", "env"}}},
	"unshare": {opts: optSpec{"+fhVmuinpCTUrR:w:S:G:cl", []string{"mount=?", "uts=?", "ipc=?", "net=?", "pid=?", "user=?", "cgroup=?", "time=?",
		"fork", "kill-child=?", "mount-proc=?", "mount-binfmt=?", "map-user=", "map-users=", "map-group=", "map-groups=", "map-root-user",
		"map-current-user", "map-auto", "propagation=", "setgroups=", "keep-caps", "setuid=", "setgid=", "root=", "wd=", "monotonic=",
		"boottime=", "load-interp=", "help", "version"}}},
	// GNU time, as a program (command time, /usr/bin/time); the bash
	// keyword is syntax the parser already sees through.
	"time": {opts: optSpec{"+af:o:pqvV", []string{"append", "format=", "output=", "portability", "quiet", "verbose", "help", "version"}}},
	"sudo": {opts: optSpec{"+Aa:BbC:c:D:Eeg:Hh::iKklNnPp:R:r:SsT:t:U:u:Vv", []string{"askpass", "auth-type=", "background", "bell",
		"close-from=", "login-class=", "chdir=", "preserve-env=?", "edit", "group=", "set-home", "help", "host=", "login",
		"remove-timestamp", "reset-timestamp", "list", "non-interactive", "no-update", "preserve-groups", "prompt=", "chroot=",
		"role=", "stdin", "shell", "type=", "command-timeout=", "other-user=", "user=", "version", "validate"}},
		none:    []string{"e", "edit", "l", "list", "v", "validate", "K", "remove-timestamp", "V", "version", "h", "help"},
		assigns: true, records: true},
	"doas":    {opts: optSpec{"+a:C:Lnsu:", nil}, none: []string{"C", "L"}, records: true},
	"busybox": {opts: optSpec{"+", []string{"list", "list-full", "install", "help"}}, none: []string{"list", "list-full", "install", "help"}},
	"builtin": {opts: optSpec{"+", nil}},
	"exec":    {opts: optSpec{"+cla:", nil}},
	// expect's unbuffer: -p only.
	"unbuffer": {opts: optSpec{"+p", nil}},
}

// command records one command, seeing through wrappers.
func (z *analyzer) command(args []word, c ctx) {
	for len(args) > 0 {
		name := args[0]
		switch name.kind {
		case Dynamic:
			z.record(args, c)
			z.opaque(fmt.Sprintf("the command name %s is only known when it runs", name.val))
			return
		case Glob:
			if file := path.Base(name.val); hasWildcard(file) {
				z.record(args, c)
				z.problem(fmt.Sprintf("the command name %s is a pattern the shell replaces by matching file names", name.val))
				if runner := z.mayRun(file); runner != "" {
					z.opaque(fmt.Sprintf("the command name %s may be %s, which runs other commands", name.val, runner))
				}
				return
			}
			// Only the directory is a pattern: the command is still its
			// last component.
		}
		rest, ok := z.unwrap(base(name.val), args, &c)
		if !ok {
			return
		}
		args = rest
	}
}

// mayRun returns a command that runs other commands and whose name the
// pattern matches, or "".
func (z *analyzer) mayRun(pattern string) string {
	var names []string
	for n := range wrappers {
		names = append(names, n)
	}
	for n := range shells {
		names = append(names, n)
	}
	names = append(names, "env", "xargs", "nice", "command", "eval", "source", ".", "trap", "find", "flock",
		"script", "watch", "su", "runuser", "alias", "mapfile", "readarray", "git")
	slices.Sort(names)
	for _, n := range names {
		if ok, _ := path.Match(pattern, n); ok {
			return n
		}
	}
	return ""
}

// unwrap handles one command. It returns the wrapped command to look at
// next, or ok=false when there is none (the command was recorded).
func (z *analyzer) unwrap(name string, args []word, c *ctx) ([]word, bool) {
	if w, ok := wrappers[name]; ok {
		return z.wrapped(name, w, args, c)
	}
	switch name {
	case "env":
		return z.env(args, c)
	case "nice":
		return z.nice(args, c)
	case "command":
		p := optSpec{"+pvV", nil}.parse(args, 1)
		if p.err != "" {
			return z.unclear(name, p.err, args, *c)
		}
		if p.has("v", "V") || len(p.operands) == 0 {
			z.record(args, *c) // command -v only looks the name up
			return nil, false
		}
		return p.operands, true
	case "xargs":
		return z.xargs(args, c)
	case "flock":
		return z.flock(args, c)
	case "script":
		z.scriptCmd(args, *c)
		return nil, false
	case "watch":
		return z.watch(args, c)
	case "su", "runuser":
		return z.su(name, args, c)
	case "eval":
		z.eval(args, *c)
		return nil, false
	case "trap":
		z.trap(args, *c)
		return nil, false
	case "find":
		z.record(args, *c)
		z.findExec(args, *c)
		return nil, false
	case "git":
		z.record(args, *c)
		z.gitConfig(args, *c)
		return nil, false
	case "alias":
		z.alias(args, *c)
		return nil, false
	case "cd", "pushd", "popd":
		z.chdir(name, args)
	case "source", ".":
		z.anyVars = true // the file can set any variable
		i := 1
		if i < len(args) && args[i].literal() && args[i].val == "--" {
			i++
		}
		if i >= len(args) {
			z.record(args, *c)
			return nil, false
		}
		z.scriptOperand(name, args, *c, args[i])
		return nil, false
	}
	if shells[name] {
		z.shell(name, args, *c)
		return nil, false
	}
	z.builtin(name, args, *c)
	z.record(args, *c)
	if downloaders[name] {
		if p, i := z.stage(); p != nil {
			p.downloads = append(p.downloads, i)
		}
	}
	if interpreters[name] {
		z.interpreter(name, args, *c)
	}
	return nil, false
}

// unclear records a command whose options cannot be understood: which
// command it runs is unknown.
func (z *analyzer) unclear(name, why string, args []word, c ctx) ([]word, bool) {
	z.record(args, c)
	z.opaque(fmt.Sprintf("%s: %s; cannot tell which command it runs", name, why))
	return nil, false
}

// wrapped handles a wrapper from the table.
func (z *analyzer) wrapped(name string, w wrapper, args []word, c *ctx) ([]word, bool) {
	p := w.opts.parse(args, 1)
	if p.err != "" {
		return z.unclear(name, p.err, args, *c)
	}
	if w.records || p.has(w.none...) {
		z.record(args, *c)
	}
	if p.has(w.none...) {
		return nil, false
	}
	ops := p.operands
	if w.assigns {
		for len(ops) > 0 && isAssignment(ops[0].val) {
			z.assignText(ops[0])
			ops = ops[1:]
		}
	}
	if len(ops) <= w.skip {
		if !w.records {
			z.record(args, *c)
		}
		return nil, false
	}
	return ops[w.skip:], true
}

var assignRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=`)

func isAssignment(s string) bool { return assignRe.MatchString(s) }

// env: env [-i] [-u NAME] [-C DIR] [-S STRING] [NAME=VALUE...] [command].
// Any operand with a '=' before the command is an assignment (even
// BASH_FUNC_f%%=...), and -S splits its string into further words.
func (z *analyzer) env(args []word, c *ctx) ([]word, bool) {
	spec := optSpec{"+iu:C:S:v0", []string{"ignore-environment", "null", "unset=", "chdir=", "split-string=", "debug",
		"block-signal=?", "default-signal=?", "ignore-signal=?", "list-signal-handling", "help", "version"}}
	p := spec.parse(args, 1)
	if p.err != "" {
		return z.unclear("env", p.err, args, *c)
	}
	for _, d := range p.values("C", "chdir") {
		z.cd = true
		z.cdTargets = append(z.cdTargets, cdTarget{d, z.repeating()})
	}
	ops := p.operands
	if len(ops) > 0 && ops[0].literal() && ops[0].val == "-" {
		ops = ops[1:] // the same as -i
	}
	if split := p.values("S", "split-string"); len(split) > 0 {
		var words []word
		for _, s := range split {
			ws, ok := envSplit(s)
			if !ok {
				return z.unclear("env", fmt.Sprintf("-S %s uses escapes or variables", s.val), args, *c)
			}
			words = append(words, ws...)
		}
		rest := append(append([]word{args[0]}, words...), ops...)
		return z.env(rest, c)
	}
	for len(ops) > 0 && strings.Contains(ops[0].val, "=") {
		z.assignText(ops[0])
		ops = ops[1:]
	}
	if len(ops) == 0 {
		z.record(args, *c)
		return nil, false
	}
	return ops, true
}

// envSplit splits env -S's string as env does, for the strings without
// escapes or ${VAR}: words separated by blanks, with ” and "" quoting.
func envSplit(s word) ([]word, bool) {
	if !s.literal() || strings.ContainsAny(s.val, `\$#`) {
		return nil, false
	}
	var out []word
	var cur strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(s.val); i++ {
		ch := s.val[i]
		switch {
		case quote != 0 && ch == quote:
			quote = 0
		case quote != 0:
			cur.WriteByte(ch)
		case ch == '\'' || ch == '"':
			quote, in = ch, true
		case ch == ' ' || ch == '\t' || ch == '\n':
			if in {
				out = append(out, word{val: cur.String()})
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(ch)
			in = true
		}
	}
	if quote != 0 {
		return nil, false
	}
	if in {
		out = append(out, word{val: cur.String()})
	}
	return out, true
}

// nice: nice [-n N | -N | --adjustment=N] command; -5, --5 and -+5 are
// the old adjustment syntax.
func (z *analyzer) nice(args []word, c *ctx) ([]word, bool) {
	i := 1
	if i < len(args) && args[i].literal() {
		a := args[i].val
		if len(a) > 1 && a[0] == '-' {
			num := strings.TrimLeft(a[1:], "-+")
			if num != "" && isDigits(num) {
				i++
			}
		}
	}
	p := optSpec{"+n:", []string{"adjustment=", "help", "version"}}.parse(args, i)
	if p.err != "" {
		return z.unclear("nice", p.err, args, *c)
	}
	if len(p.operands) == 0 {
		z.record(args, *c)
		return nil, false
	}
	return p.operands, true
}

// xargs runs its operands (echo by default) with the words it reads
// appended, or put in place of the replace string (-I R); the command's
// stdin is empty unless xargs reads its words from a file (-a).
func (z *analyzer) xargs(args []word, c *ctx) ([]word, bool) {
	spec := optSpec{"+0a:E:e::I:i::l::L:n:oprs:txP:d:", []string{"null", "arg-file=", "delimiter=", "eof=?", "replace=?",
		"max-lines=?", "max-args=", "open-tty", "interactive", "no-run-if-empty", "max-chars=", "verbose", "show-limits",
		"exit", "max-procs=", "process-slot-var=", "version", "help"}}
	p := spec.parse(args, 1)
	if p.err != "" {
		return z.unclear("xargs", p.err, args, *c)
	}
	files := p.values("a", "arg-file")
	for _, f := range files {
		z.readFrom(f, false)
	}
	replace := ""
	for _, o := range p.opts {
		switch o.name {
		case "I", "i", "replace":
			replace = "{}"
			if o.has {
				replace = o.value.val
			}
		}
	}
	ops := slices.Clone(p.operands)
	if len(ops) == 0 {
		ops = []word{{val: "echo"}}
	}
	fds := c.fds.clone()
	switch {
	case len(files) > 0:
	case p.has("o", "open-tty"):
		fds.set(0, source{kind: srcUnknown, text: "the terminal"})
	default:
		fds.set(0, source{kind: srcEmpty})
	}
	c.fds = fds
	if replace == "" {
		c.xargs = true
		return ops, true
	}
	for i, w := range ops {
		if strings.Contains(w.val, replace) {
			ops[i].kind = Dynamic
		}
	}
	return ops, true
}

// flock [options] FILE|DIR COMMAND... or FILE -c COMMAND-LINE; with a
// single operand (a descriptor number) it runs nothing.
func (z *analyzer) flock(args []word, c *ctx) ([]word, bool) {
	spec := optSpec{"+sexnoFuw:E:hV", []string{"shared", "exclusive", "unlock", "nonblocking", "nb", "timeout=", "wait=",
		"conflict-exit-code=", "close", "no-fork", "verbose", "help", "version"}}
	p := spec.parse(args, 1)
	if p.err != "" {
		return z.unclear("flock", p.err, args, *c)
	}
	ops := p.operands
	if len(ops) < 2 {
		z.record(args, *c)
		return nil, false
	}
	if ops[1].literal() && (ops[1].val == "-c" || ops[1].val == "--command") {
		z.record(args, *c)
		if len(ops) > 2 {
			z.runScript("flock -c", ops[2], *c)
		}
		return nil, false
	}
	return ops[1:], true
}

// scriptCmd: script [options] [file]; -c runs a command line with the
// user's shell, and without it an interactive shell reads script's stdin.
// script parses options anywhere (no '+'), like most GNU tools.
func (z *analyzer) scriptCmd(args []word, c ctx) {
	spec := optSpec{"ac:B:eE:fhI:O:o:qm:T:t::V", []string{"append", "command=", "echo=", "return", "flush", "force",
		"log-in=", "log-out=", "log-io=", "log-timing=", "logging-format=", "output-limit=", "quiet", "timing=?", "version", "help"}}
	p := spec.parse(args, 1)
	if p.err != "" {
		z.unclear("script", p.err, args, c)
		return
	}
	z.record(args, c)
	for _, f := range append(p.operands, p.values("B", "O", "log-io", "log-out", "log-in", "I", "log-timing", "T")...) {
		z.write(f)
	}
	if p.has("h", "help", "V", "version") {
		return
	}
	cmds := p.values("c", "command")
	if len(cmds) == 0 {
		z.runsInput("script", args, c, 0)
		return
	}
	for _, cmd := range cmds {
		z.runScript("script -c", cmd, c)
	}
}

// watch runs its operands joined by spaces with sh -c, or as a command
// with -x.
func (z *analyzer) watch(args []word, c *ctx) ([]word, bool) {
	spec := optSpec{"+bcCd::eghq:n:prs:tvwx", []string{"beep", "color", "no-color", "differences=?", "errexit", "chgexit",
		"equexit=", "interval=", "precise", "no-rerun", "shotsdir=", "no-title", "no-wrap", "exec", "help", "version"}}
	p := spec.parse(args, 1)
	if p.err != "" {
		return z.unclear("watch", p.err, args, *c)
	}
	if len(p.operands) == 0 || p.has("h", "help", "v", "version") {
		z.record(args, *c)
		return nil, false
	}
	if p.has("x", "exec") {
		return p.operands, true
	}
	z.record(args, *c)
	z.runScript("watch", joinWords(p.operands), *c)
	return nil, false
}

// joinWords joins words by spaces; the result is literal only if all are.
func joinWords(ws []word) word {
	vals := make([]string, len(ws))
	kind := Literal
	for i, w := range ws {
		vals[i] = w.val
		if w.kind != Literal {
			kind = Dynamic
		}
	}
	return word{val: strings.Join(vals, " "), kind: kind}
}

// su [options] [-] [user [shell-args...]] and runuser: -c gives a
// command line for the user's shell, -s another shell; with runuser -u
// the operands are the command itself.
func (z *analyzer) su(name string, args []word, c *ctx) ([]word, bool) {
	short, long := "c:fg:G:lmpPs:hVw:", []string{"command=", "session-command=", "fast", "group=", "supp-group=", "login",
		"preserve-environment", "pty", "shell=", "help", "version", "whitelist-environment="}
	if name == "runuser" {
		short, long = "+"+short+"u:", append(long, "user=")
	}
	p := optSpec{short, long}.parse(args, 1)
	if p.err != "" {
		return z.unclear(name, p.err, args, *c)
	}
	z.record(args, *c)
	if p.has("h", "help", "V", "version") {
		return nil, false
	}
	if p.has("u", "user") {
		if len(p.operands) == 0 {
			return nil, false
		}
		return p.operands, true
	}
	if sh := p.values("s", "shell"); len(sh) > 0 {
		z.opaque(fmt.Sprintf("%s -s runs %s as the shell; cannot check what it runs", name, sh[0].val))
		return nil, false
	}
	for _, cmd := range p.values("c", "command", "session-command") {
		z.runScript(name+" -c", cmd, *c)
	}
	ops := p.operands
	if len(ops) > 0 && ops[0].literal() && ops[0].val == "-" {
		ops = ops[1:]
	}
	if len(ops) > 1 {
		// The arguments after the user go to the shell: sh ARGS.
		z.shell("sh", append([]word{{val: "sh"}}, ops[1:]...), *c)
	} else if len(p.values("c", "command", "session-command")) == 0 {
		z.runsInput(name, args, *c, 0)
	}
	return nil, false
}

// runScript analyzes a command line some program runs with sh -c.
func (z *analyzer) runScript(what string, w word, c ctx) {
	if !w.literal() {
		z.opaque(fmt.Sprintf("%s runs %s, a script only known when it runs", what, w.val))
		return
	}
	z.script(w.val, c.depth+1, c.fds)
}

// eval joins its arguments into a script and analyzes it.
func (z *analyzer) eval(args []word, c ctx) {
	var parts []string
	for _, a := range args[1:] {
		if !a.literal() {
			z.record(args, c)
			z.opaque(fmt.Sprintf("eval runs %s, a script only known when it runs", a.val))
			z.downloadedCode(args, "eval")
			return
		}
		parts = append(parts, a.val)
	}
	z.script(strings.Join(parts, " "), c.depth+1, c.fds)
}

// trap [-lpP] [--] [action] [signal...]: the action is a script run when
// a signal arrives. With a single operand, or "-", or a number first,
// the operands are signals to reset.
func (z *analyzer) trap(args []word, c ctx) {
	z.record(args, c)
	p := optSpec{"+lpP", nil}.parse(args, 1)
	if p.err != "" {
		z.opaque(fmt.Sprintf("trap: %s; cannot tell what it runs", p.err))
		return
	}
	ops := p.operands
	if len(ops) < 2 || (ops[0].literal() && (ops[0].val == "-" || isDigits(ops[0].val))) {
		return
	}
	if !ops[0].literal() {
		z.opaque(fmt.Sprintf("trap runs %s, a script only known when it runs", ops[0].val))
		return
	}
	z.script(ops[0].val, c.depth+1, unknownFds("the shell when the trap fires"))
}

// alias NAME=VALUE: with expand_aliases, VALUE replaces NAME in later
// lines, so it is code like eval's.
func (z *analyzer) alias(args []word, c ctx) {
	z.record(args, c)
	for _, a := range args[1:] {
		name, val, ok := strings.Cut(a.val, "=")
		switch {
		case !ok && a.literal():
		case !a.literal():
			z.opaque(fmt.Sprintf("defines an alias %s from a value only known when it runs", name))
		default:
			z.problem("defines an alias, which can change what a command name runs")
			z.script(val, c.depth+1, unknownFds("wherever the alias is used"))
		}
	}
}

// shell handles sh/bash/zsh. Options are bash's: -abc clusters, -o/-O
// take the next word, long options are only bash's own, spelled in full;
// "-" ends the options. With -c the first operand is the script; with
// -s, or without an operand, the script is read from stdin; otherwise
// the first operand is a script file.
func (z *analyzer) shell(name string, args []word, c ctx) {
	i := 1
	cflag, sflag := false, false
	var rcfiles []word
	z.downloadedCode(args, name)
opts:
	for i < len(args) {
		a := args[i]
		if !a.literal() && (a.val == "" || a.val[0] == '$' || a.val[0] == '`' || a.val[0] == '-' || a.val[0] == '+') {
			// It may be an option, so the script may be any later word.
			z.record(args, c)
			if cflag {
				z.opaque(fmt.Sprintf("%s -c runs %s, a script only known when it runs", name, a.val))
			} else {
				z.opaque(fmt.Sprintf("%s has an option only known when it runs (%s)", name, a.val))
			}
			return
		}
		v := a.val
		if v == "--" || v == "-" {
			i++
			break
		}
		if len(v) < 2 || (v[0] != '-' && v[0] != '+') {
			break
		}
		i++
		if strings.HasPrefix(v, "--") {
			if v == "--rcfile" || v == "--init-file" {
				if i < len(args) {
					rcfiles = append(rcfiles, args[i])
					i++
				}
			}
			continue
		}
		for j := 1; j < len(v); j++ {
			switch v[j] {
			case 'c':
				cflag = cflag || v[0] == '-'
			case 's':
				sflag = sflag || v[0] == '-'
			case 'o', 'O':
				i++ // takes the next word
				if i > len(args) {
					break opts
				}
			}
		}
	}
	if len(rcfiles) > 0 {
		// The shell runs these files first: it is a command of its own.
		z.record(args, c)
		for _, f := range rcfiles {
			z.readFrom(f, false)
		}
	}
	switch {
	case cflag:
		if i >= len(args) {
			z.record(args, c)
			return
		}
		if !args[i].literal() {
			z.record(args, c)
		}
		z.runScript(name+" -c", args[i], c)
	case sflag || i >= len(args):
		if c.xargs && !sflag {
			z.record(args, c)
			z.opaque(fmt.Sprintf("xargs runs %s on names read from its input; cannot check what it runs", name))
			return
		}
		z.runsInput(name, args, c, 0)
	default:
		z.scriptOperand(name, args, c, args[i])
	}
}

// scriptOperand handles a shell or source given a script path: a file
// (rules decide about it by name), a descriptor, or the output of another
// command.
func (z *analyzer) scriptOperand(name string, args []word, c ctx, op word) {
	if !op.literal() {
		z.record(args, c)
		switch {
		case op.node != nil && onlyProcSubst(op.node):
			z.opaque(fmt.Sprintf("%s runs the output of another command as a script; cannot check it", name))
		case op.node != nil && hasSubst(op.node):
			z.problem(fmt.Sprintf("%s runs a script named by another command's output; cannot check it", name))
			z.readFrom(op, false)
		default:
			z.readFrom(op, false)
		}
		return
	}
	if fd, ok := inputFd(op.val); ok {
		z.runsInput(name, args, c, fd)
		return
	}
	z.record(args, c)
	z.readFrom(op, false)
}

// codeFlags are the options that give an interpreter its program in
// the command line (python -c, perl -e, node --eval, ...).
var codeFlags = setOf("-c", "-m", "-e", "-E", "-p", "-r", "--eval", "--print")

// interpreter handles a python/perl/... whose program comes from its
// stdin when no script or code option is given: a pipe or a here-document
// hands it code no rule sees (an allow rule for "python3" would allow
// it), so that asks.
func (z *analyzer) interpreter(name string, args []word, c ctx) {
	z.downloadedCode(args, name)
	for _, a := range args[1:] {
		if codeFlags[a.val] || (!strings.HasPrefix(a.val, "-") && a.val != "/dev/stdin") || strings.HasPrefix(a.val, "--eval=") {
			return // the program is in the command line, or in a file
		}
	}
	switch src := c.fds.get(0); src.kind {
	case srcPipe:
		src.pipe.pipe.interprets = append(src.pipe.pipe.interprets, src.pipe.index)
		src.pipe.pipe.interpreter = name
		z.problem(fmt.Sprintf("%s runs a program it reads from a pipe; cannot check it", name))
	case srcText, srcFile, srcUnknown, srcOutput:
		z.problem(fmt.Sprintf("%s runs a program it reads from its input; cannot check it", name))
	}
}

// stage is the pipeline stage the statement being walked belongs to: the
// nearest enclosing statement that is a stage. What runs inside a command
// or process substitution or a function body is not that stage.
func (z *analyzer) stage() (*pipeline, int) {
	for i := len(z.stack) - 1; i >= 0; i-- {
		switch n := z.stack[i].(type) {
		case *syntax.CmdSubst, *syntax.ProcSubst, *syntax.FuncDecl:
			return nil, 0
		case *syntax.Stmt:
			if ref, ok := z.stages[n]; ok {
				return ref.pipe, ref.index
			}
		}
	}
	return nil, 0
}

// downloadedCode flags interpreters given code that a substitution
// fetched from the network: bash -c "$(curl ...)", bash <(wget ...).
func (z *analyzer) downloadedCode(args []word, name string) {
	for _, a := range args[1:] {
		if a.kind != Dynamic || a.node == nil {
			continue
		}
		if substDownloads(a.node) {
			z.hazard(Dangerous, fmt.Sprintf("%s runs code downloaded from the network, which nobody has read", name))
			return
		}
	}
}

// findExec records the commands find -exec/-execdir/-ok/-okdir runs; {}
// stands for the names find finds.
func (z *analyzer) findExec(args []word, c ctx) {
	for i := 1; i < len(args); i++ {
		switch args[i].val {
		case "-exec", "-ok":
		case "-execdir", "-okdir":
			z.cd, z.cdUnknown = true, true // runs in each found file's directory
		default:
			continue
		}
		j := i + 1
		for j < len(args) && args[j].val != ";" && args[j].val != "+" {
			j++
		}
		if inner := slices.Clone(args[i+1 : j]); len(inner) > 0 {
			for k := range inner {
				if strings.Contains(inner[k].val, "{}") {
					inner[k].kind = Dynamic
				}
			}
			z.command(inner, ctx{fds: c.fds, depth: c.depth})
		}
		i = j
	}
}

// riskyGitConfig are git -c keys that make git run a program.
var riskyGitConfig = []string{"alias.", "sshcommand", "pager", "editor", "fsmonitor", "hookspath",
	"external", "textconv", "helper", "askpass", "proxycommand", "program", "filter.", "sequence.editor", "core.gitproxy"}

// gitConfig checks git's -c options. A value that is a command line
// (core.pager, alias.x=!cmd, core.sshCommand, ...) is analyzed as one.
func (z *analyzer) gitConfig(args []word, c ctx) {
	_, sub := gitSubcommand(wordVals(args))
	for i := 1; i < sub; i++ {
		a := args[i]
		var kv word
		switch {
		case a.val == "-c" || a.val == "--config-env":
			if i+1 >= sub {
				continue
			}
			i++
			kv = args[i]
		case strings.HasPrefix(a.val, "-c"):
			kv = word{val: a.val[2:], kind: a.kind, node: a.node}
		case strings.HasPrefix(a.val, "--config-env="):
			kv = word{val: a.val[len("--config-env="):], kind: a.kind, node: a.node}
		default:
			continue
		}
		if !kv.literal() {
			z.opaque(fmt.Sprintf("git %s %s sets configuration only known when it runs", a.val, kv.val))
			continue
		}
		k, v, _ := strings.Cut(kv.val, "=")
		key := strings.ToLower(k)
		for _, r := range riskyGitConfig {
			if strings.Contains(key, r) {
				z.problem(fmt.Sprintf("git -c %s can make git run another program", key))
				if a.val != "--config-env" && !strings.HasPrefix(a.val, "--config-env") {
					z.script(strings.TrimPrefix(v, "!"), c.depth+1, c.fds)
				}
				break
			}
		}
	}
}

func wordVals(args []word) []string {
	vals := make([]string, len(args))
	for i, a := range args {
		vals[i] = a.val
	}
	return vals
}

// dangerArgs are commands whose danger depends on their arguments: an
// argument only known at run time could hide a broad target or a flag.
var dangerArgs = map[string]bool{
	"rm": true, "chmod": true, "chown": true, "chgrp": true, "dd": true, "find": true, "shred": true,
	"cp": true, "mv": true, "install": true, "ln": true,
}

// record adds a command and the files it reads and writes through its
// arguments.
func (z *analyzer) record(args []word, c ctx) {
	vals := wordVals(args)
	kinds := make([]Kind, len(args))
	for i, a := range args {
		kinds[i] = a.kind
	}
	z.out.Commands = append(z.out.Commands, Command{Args: vals, Text: strings.Join(vals, " "), Kinds: kinds, MoreArgs: c.xargs})
	name := base(vals[0])
	check := dangerArgs[name]
	if name == "git" {
		sub, _ := gitSubcommand(vals)
		check = sub == "push" || sub == "reset" || sub == "clean"
	}
	if check {
		for _, a := range args[1:] {
			if a.node != nil && !isStatic(a.node) {
				z.problem(fmt.Sprintf("%s has an argument only known when it runs (%s), which could make it destructive", name, a.val))
				break
			}
		}
	}
	switch name {
	case "tee":
		p := optSpec{"aip", []string{"append", "ignore-interrupts", "output-error=?", "help", "version"}}.parse(args, 1)
		for _, a := range p.operands {
			z.write(a)
		}
	case "dd":
		for _, a := range args[1:] {
			if v, ok := strings.CutPrefix(a.val, "of="); ok {
				z.write(word{val: v, kind: a.kind, node: a.node})
			}
		}
	}
	z.reads(name, args, c)
}

func hasSubst(w *syntax.Word) bool {
	found := false
	syntax.Walk(w, func(n syntax.Node) bool {
		switch n.(type) {
		case *syntax.CmdSubst, *syntax.ProcSubst:
			found = true
		}
		return !found
	})
	return found
}

func substDownloads(w *syntax.Word) bool {
	found := false
	syntax.Walk(w, func(n syntax.Node) bool {
		if c, ok := n.(*syntax.CallExpr); ok {
			for _, a := range c.Args {
				if downloaders[base(a.Lit())] {
					found = true
				}
			}
		}
		return !found
	})
	return found
}
