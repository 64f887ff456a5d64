package shell

// This file sees through the commands that run other commands: env,
// sudo, timeout, xargs, bash -c, eval, find -exec and the like.

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

var shells = map[string]bool{"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "mksh": true, "ash": true}

var interpreters = map[string]bool{
	"python": true, "python2": true, "python3": true, "perl": true, "ruby": true,
	"node": true, "php": true, "bun": true, "deno": true, "fish": true,
}

var downloaders = map[string]bool{"curl": true, "wget": true, "fetch": true}

// command records one command, seeing through wrappers.
func (z *analyzer) command(args []word, c ctx) {
	for len(args) > 0 {
		name := args[0]
		if !name.static {
			z.problem(fmt.Sprintf("the command name %s is only known when it runs", name.val))
			z.record(args)
			return
		}
		rest, ok := z.unwrap(base(name.val), args, &c)
		if !ok {
			return
		}
		args = rest
	}
}

// unwrap handles one command. It returns the wrapped command to look at
// next, or ok=false when there is none (the command was recorded).
func (z *analyzer) unwrap(name string, args []word, c *ctx) ([]word, bool) {
	switch name {
	case "env":
		return z.env(args)
	case "command":
		i, flags := options(args, 1, "", nil)
		if strings.ContainsAny(flags, "vV") || i >= len(args) {
			z.record(args) // command -v only looks the name up
			return nil, false
		}
		return args[i:], true
	case "builtin", "nohup":
		return z.after(args, 1)
	case "exec":
		i, _ := options(args, 1, "a", nil)
		return z.after(args, i)
	case "nice":
		i, _ := options(args, 1, "n", []string{"--adjustment"})
		return z.after(args, i)
	case "time":
		i, _ := options(args, 1, "fo", []string{"--format", "--output"})
		return z.after(args, i)
	case "stdbuf":
		i, _ := options(args, 1, "ioe", []string{"--input", "--output", "--error"})
		return z.after(args, i)
	case "setsid":
		i, _ := options(args, 1, "", nil)
		return z.after(args, i)
	case "ionice":
		i, flags := options(args, 1, "cnpP", []string{"--class", "--classdata", "--pid", "--pgid", "--uid"})
		if strings.ContainsAny(flags, "pPu") {
			z.record(args)
			return nil, false
		}
		return z.after(args, i)
	case "timeout":
		i, _ := options(args, 1, "ks", []string{"--kill-after", "--signal"})
		return z.after(args, i+1) // skip the duration
	case "xargs":
		i, _ := options(args, 1, "adEILnPs", []string{"--arg-file", "--delimiter", "--max-args", "--max-procs", "--max-chars", "--process-slot-var"})
		if i >= len(args) {
			z.record(args)
			return nil, false
		}
		c.xargs = true
		return args[i:], true
	case "sudo", "doas":
		z.record(args)
		var i int
		if name == "sudo" {
			i, _ = options(args, 1, "CDghpRrTtUu", []string{"--close-from", "--chdir", "--group", "--host", "--prompt", "--chroot", "--role", "--type", "--command-timeout", "--other-user", "--user"})
		} else {
			i, _ = options(args, 1, "uC", nil)
		}
		for i < len(args) && isAssignment(args[i].val) {
			z.assignName(args[i].val[:strings.IndexByte(args[i].val, '=')])
			i++
		}
		if i >= len(args) {
			return nil, false
		}
		return args[i:], true
	case "eval":
		z.eval(args, *c)
		return nil, false
	case "trap":
		z.record(args)
		if len(args) >= 2 && args[1].val != "-" && !strings.HasPrefix(args[1].val, "-") {
			if !args[1].static {
				z.problem(fmt.Sprintf("trap runs %s, a script only known when it runs", args[1].val))
			} else {
				z.script(args[1].val, c.depth+1)
			}
		}
		return nil, false
	case "find":
		z.record(args)
		z.findExec(args, *c)
		return nil, false
	case "git":
		z.record(args)
		z.gitConfig(args)
		return nil, false
	case "alias":
		z.record(args)
		for _, a := range args[1:] {
			if strings.Contains(a.val, "=") {
				z.problem("defines an alias, which can change what a command name runs")
			}
		}
		return nil, false
	case "cd", "pushd", "popd":
		z.cd = true
	case "source", ".":
		z.runsInput(name, args, *c, 1)
		return nil, false
	}
	if shells[name] {
		return z.shell(name, args, *c)
	}
	z.record(args)
	if downloaders[name] && c.pipe != nil {
		c.pipe.downloads = append(c.pipe.downloads, c.stage)
	}
	if interpreters[name] {
		z.interpreter(name, args, *c)
	}
	return nil, false
}

// after returns args[i:] as the wrapped command, or records the wrapper
// alone when nothing follows.
func (z *analyzer) after(args []word, i int) ([]word, bool) {
	if i >= len(args) {
		z.record(args)
		return nil, false
	}
	return args[i:], true
}

// options skips the options of a command starting at args[i]. withArg
// lists the short options that take a value; long lists the long options
// that take one when given without "=". It returns the index of the first
// operand and the short flags seen.
func options(args []word, i int, withArg string, long []string) (int, string) {
	var flags strings.Builder
	for i < len(args) {
		a := args[i].val
		if a == "--" {
			return i + 1, flags.String()
		}
		if len(a) < 2 || a[0] != '-' {
			break
		}
		i++
		if strings.HasPrefix(a, "--") {
			if !strings.Contains(a, "=") && slices.Contains(long, a) {
				i++
			}
			continue
		}
		for j := 1; j < len(a); j++ {
			flags.WriteByte(a[j])
			if strings.IndexByte(withArg, a[j]) >= 0 {
				if j == len(a)-1 {
					i++ // the value is the next word
				}
				break
			}
		}
	}
	return i, flags.String()
}

var assignRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)

func isAssignment(s string) bool { return assignRe.MatchString(s) }

// env: env [-i] [-u NAME] [-C DIR] [NAME=VALUE...] [command].
func (z *analyzer) env(args []word) ([]word, bool) {
	i := 1
	split := false
opts:
	for i < len(args) {
		a := args[i].val
		switch {
		case a == "--":
			i++
			break opts
		case a == "-":
			i++ // the same as -i
			continue
		case len(a) < 2 || a[0] != '-':
			break opts
		}
		i++
		if strings.HasPrefix(a, "--") {
			if a == "--split-string" || strings.HasPrefix(a, "--split-string=") {
				split = true
			}
			if a == "--unset" || a == "--chdir" {
				i++
			}
			continue
		}
		for j := 1; j < len(a); j++ {
			if a[j] == 'S' {
				split = true
			}
			if a[j] == 'u' || a[j] == 'C' || a[j] == 'S' {
				if j == len(a)-1 {
					i++
				}
				break
			}
		}
	}
	if split {
		z.problem("env -S splits a string into a command; cannot check what it runs")
		z.record(args)
		return nil, false
	}
	// Assignments: printWord keeps NAME= of a non-literal one visible.
	for i < len(args) && isAssignment(args[i].val) {
		z.assignName(args[i].val[:strings.IndexByte(args[i].val, '=')])
		i++
	}
	return z.after(args, i)
}

// eval joins its arguments into a script and analyzes it.
func (z *analyzer) eval(args []word, c ctx) {
	var parts []string
	for _, a := range args[1:] {
		if !a.static {
			z.problem(fmt.Sprintf("eval runs %s, a script only known when it runs", a.val))
			z.record(args)
			z.downloadedCode(args, "eval")
			return
		}
		parts = append(parts, a.val)
	}
	z.script(strings.Join(parts, " "), c.depth+1)
}

// shell handles sh/bash/zsh: -c 'script' is analyzed; a shell reading its
// script from a pipe cannot be.
func (z *analyzer) shell(name string, args []word, c ctx) ([]word, bool) {
	i := 1
	cflag := false
	for i < len(args) {
		a := args[i].val
		if a == "--" {
			i++
			break
		}
		if len(a) < 2 || (a[0] != '-' && a[0] != '+') {
			break
		}
		i++
		if strings.HasPrefix(a, "--") {
			if a == "--rcfile" || a == "--init-file" {
				i++
			}
			continue
		}
		for j := 1; j < len(a); j++ {
			switch a[j] {
			case 'c':
				cflag = true
			case 'o', 'O':
				if j == len(a)-1 {
					i++
				}
			}
		}
	}
	z.downloadedCode(args, name)
	if cflag {
		if i >= len(args) {
			z.record(args)
			return nil, false
		}
		if !args[i].static {
			z.problem(fmt.Sprintf("%s -c runs %s, a script only known when it runs", name, args[i].val))
			z.record(args)
			return nil, false
		}
		z.script(args[i].val, c.depth+1)
		return nil, false
	}
	if c.xargs {
		z.record(args)
		z.problem(fmt.Sprintf("xargs runs %s on names read from its input; cannot check what it runs", name))
		return nil, false
	}
	z.runsInput(name, args, c, i)
	return nil, false
}

// runsInput handles a shell (or source) whose script is args[i], or its
// standard input when there is none. A literal here-document is analyzed
// as the script, like bash -c; otherwise the command itself is recorded.
func (z *analyzer) runsInput(name string, args []word, c ctx, i int) {
	if !z.hereScript(name, args, c, i) {
		z.record(args)
	}
}

func (z *analyzer) hereScript(name string, args []word, c ctx, i int) bool {
	if i < len(args) {
		if a := args[i]; !a.static {
			if hasSubst(a.node) {
				z.problem(fmt.Sprintf("%s runs the output of another command as a script; cannot check it", name))
			}
			return false
		} else if !isStdin(a.val) {
			return false // a script file: the rules decide about it by name
		}
	}
	if c.stmt != nil {
		for _, r := range c.stmt.Redirs {
			switch r.Op {
			case syntax.Hdoc, syntax.DashHdoc:
				if r.Hdoc == nil || !isStatic(r.Hdoc) {
					z.problem(fmt.Sprintf("%s runs a here-document only known when it runs", name))
					return false
				}
				body, err := expand.Document(&expand.Config{}, r.Hdoc)
				if err != nil {
					z.problem(fmt.Sprintf("cannot read the here-document %s runs: %v", name, err))
					return false
				}
				z.script(body, c.depth+1)
				return true
			case syntax.WordHdoc:
				ws := z.words([]*syntax.Word{r.Word})
				if len(ws) != 1 || !ws[0].static {
					z.problem(fmt.Sprintf("%s runs a string only known when it runs", name))
					return false
				}
				z.script(ws[0].val, c.depth+1)
				return true
			case syntax.RdrIn:
				return false // a script file, like an argument
			}
		}
	}
	if c.pipe != nil && c.stage > 0 {
		z.problem(fmt.Sprintf("%s reads its script from a pipe; cannot check what it runs", name))
		c.pipe.interprets = append(c.pipe.interprets, c.stage)
		c.pipe.interpreter = name
	}
	return false
}

func isStdin(p string) bool {
	switch p {
	case "-", "/dev/stdin", "/dev/fd/0", "/proc/self/fd/0":
		return true
	}
	return false
}

// interpreter notes a python/perl/... that runs code from its stdin.
func (z *analyzer) interpreter(name string, args []word, c ctx) {
	z.downloadedCode(args, name)
	operands := 0
	for _, a := range args[1:] {
		if a.val == "-" || isStdin(a.val) {
			continue
		}
		operands++
	}
	if operands == 0 && c.pipe != nil && c.stage > 0 {
		c.pipe.interprets = append(c.pipe.interprets, c.stage)
		c.pipe.interpreter = name
	}
}

// downloadedCode flags interpreters given code that a substitution
// fetched from the network: bash -c "$(curl ...)", bash <(wget ...).
func (z *analyzer) downloadedCode(args []word, name string) {
	for _, a := range args[1:] {
		if a.static || a.node == nil {
			continue
		}
		if substDownloads(a.node) {
			z.hazard(Dangerous, fmt.Sprintf("%s runs code downloaded from the network, which nobody has read", name))
			return
		}
	}
}

func hasSubst(w *syntax.Word) bool {
	found := false
	if w == nil {
		return false
	}
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

// findExec records the commands find -exec/-execdir/-ok/-okdir runs.
func (z *analyzer) findExec(args []word, c ctx) {
	for i := 1; i < len(args); i++ {
		switch args[i].val {
		case "-exec", "-execdir", "-ok", "-okdir":
		default:
			continue
		}
		j := i + 1
		for j < len(args) && args[j].val != ";" && args[j].val != "+" {
			j++
		}
		if inner := args[i+1 : j]; len(inner) > 0 {
			z.command(slices.Clone(inner), ctx{depth: c.depth})
		}
		i = j
	}
}

// riskyGitConfig are git -c keys that make git run a program.
var riskyGitConfig = []string{"alias.", "sshcommand", "pager", "editor", "fsmonitor", "hookspath",
	"external", "textconv", "helper", "askpass", "proxycommand", "program", "filter.", "sequence.editor", "core.gitproxy"}

func (z *analyzer) gitConfig(args []word) {
	_, sub := gitSubcommand(wordVals(args))
	for i := 1; i < sub; i++ {
		a := args[i].val
		var kv string
		switch {
		case a == "-c" || a == "--config-env":
			if i+1 >= sub {
				continue
			}
			i++
			if !args[i].static {
				z.problem(fmt.Sprintf("git %s %s sets configuration only known when it runs", a, args[i].val))
				continue
			}
			kv = args[i].val
		case strings.HasPrefix(a, "-c"):
			kv = a[2:]
		case strings.HasPrefix(a, "--config-env="):
			kv = a[len("--config-env="):]
		default:
			continue
		}
		key := strings.ToLower(strings.SplitN(kv, "=", 2)[0])
		for _, r := range riskyGitConfig {
			if strings.Contains(key, r) {
				z.problem(fmt.Sprintf("git -c %s can make git run another program", key))
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

// record adds a command and the writes it makes through its arguments.
func (z *analyzer) record(args []word) {
	vals := wordVals(args)
	z.out.Commands = append(z.out.Commands, Command{Args: vals, Text: strings.Join(vals, " ")})
	name := base(vals[0])
	check := dangerArgs[name]
	if name == "git" {
		sub, _ := gitSubcommand(vals)
		check = sub == "push" || sub == "reset" || sub == "clean"
	}
	if check {
		for _, a := range args[1:] {
			if !a.static {
				z.problem(fmt.Sprintf("%s has an argument only known when it runs (%s), which could make it destructive", name, a.val))
				break
			}
		}
	}
	switch name {
	case "tee":
		i, _ := options(args, 1, "", []string{"--output-error"})
		for _, a := range args[i:] {
			if !a.static {
				z.problem(fmt.Sprintf("tee writes to %s, a path only known when it runs", a.val))
				continue
			}
			z.write(a.val)
		}
	case "dd":
		for _, a := range args[1:] {
			if strings.HasPrefix(a.val, "of=") {
				if a.static {
					z.write(a.val[3:])
				} else {
					z.problem(fmt.Sprintf("dd writes to %s, a path only known when it runs", a.val[3:]))
				}
			}
		}
	}
}
