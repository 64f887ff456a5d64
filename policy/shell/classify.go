package shell

import (
	"fmt"
	"path"
	"strings"
)

// Severity is how much harm a command can do.
type Severity int

const (
	// None: nothing on the danger floor; rules and modes decide.
	None Severity = iota
	// Dangerous commands always need a person's approval: no allow rule
	// and no mode but bypass lets them run unasked.
	Dangerous
	// Catastrophic commands are denied in every mode but bypass.
	Catastrophic
)

// String returns "none", "dangerous" or "catastrophic".
func (s Severity) String() string {
	switch s {
	case None:
		return "none"
	case Dangerous:
		return "dangerous"
	case Catastrophic:
		return "catastrophic"
	}
	return fmt.Sprintf("severity(%d)", int(s))
}

// Danger is a severity with the reason for it, one line a person (and the
// model) can act on.
type Danger struct {
	Severity Severity
	Reason   string
}

// Classify returns the worst danger over all of a's commands, writes and
// structure (pipes into shells, fork bombs). Where several are equally
// bad, the first found wins.
func Classify(a Analysis) Danger {
	var worst Danger
	consider := func(d Danger) {
		if d.Severity > worst.Severity {
			worst = d
		}
	}
	for _, h := range a.hazards {
		consider(h)
	}
	for _, c := range a.Commands {
		consider(classifyCommand(c))
	}
	for _, w := range a.WriteNames() {
		consider(classifyWrite("writes to", w))
	}
	worst.Reason = oneLine(worst.Reason)
	return worst
}

func classifyCommand(c Command) Danger {
	if len(c.Args) == 0 {
		return Danger{}
	}
	name := base(c.Args[0])
	args := c.Args[1:]
	switch {
	case name == "rm":
		return classifyRm(c.Text, args)
	case name == "sudo" || name == "doas":
		return Danger{Dangerous, fmt.Sprintf("%q runs a command as another user (usually root)", c.Text)}
	case name == "su":
		return Danger{Dangerous, fmt.Sprintf("%q switches to another user", c.Text)}
	case name == "kill" || name == "pkill" || name == "killall":
		return Danger{Dangerous, fmt.Sprintf("%q stops processes, possibly ones outside this task", c.Text)}
	case name == "dd":
		for _, a := range args {
			if of, ok := strings.CutPrefix(a, "of="); ok {
				if d := classifyWrite("dd writes to", of); d.Severity == Catastrophic {
					return d
				}
			}
		}
		return Danger{Dangerous, fmt.Sprintf("%q copies raw bytes and overwrites its output without asking", c.Text)}
	case name == "mkfs" || strings.HasPrefix(name, "mkfs.") || name == "mke2fs" || name == "mkswap" || name == "wipefs":
		return Danger{Catastrophic, fmt.Sprintf("%q formats or wipes a filesystem, destroying everything on it", c.Text)}
	case name == "fdisk" || name == "sfdisk" || name == "gdisk" || name == "parted":
		return Danger{Dangerous, fmt.Sprintf("%q can rewrite a disk's partition table", c.Text)}
	case name == "shred":
		return Danger{Dangerous, fmt.Sprintf("%q destroys file contents beyond recovery", c.Text)}
	case name == "shutdown" || name == "reboot" || name == "halt" || name == "poweroff":
		return Danger{Dangerous, fmt.Sprintf("%q stops or restarts the machine", c.Text)}
	case name == "chmod" || name == "chown" || name == "chgrp":
		return classifyChmod(name, c.Text, args)
	case name == "git":
		return classifyGit(c.Text, c.Args)
	case name == "find":
		for _, a := range args {
			if a == "-delete" {
				return Danger{Dangerous, fmt.Sprintf("%q deletes every file it finds without asking", c.Text)}
			}
		}
	case name == "cp" || name == "mv" || name == "install" || name == "ln":
		if dest := copyDest(args); dest != "" {
			return classifyWrite(name+" writes to", dest)
		}
	}
	return Danger{}
}

// classifyRm: rm -r or -f on a broad target is catastrophic; any other
// rm -r or rm -f is dangerous.
func classifyRm(text string, args []string) Danger {
	var recursive, force, dashdash bool
	var targets []string
	for _, a := range args {
		switch {
		case dashdash || a == "-" || !strings.HasPrefix(a, "-"):
			targets = append(targets, a)
		case a == "--":
			dashdash = true
		case a == "--recursive":
			recursive = true
		case a == "--force":
			force = true
		case strings.HasPrefix(a, "--"):
		default:
			recursive = recursive || strings.ContainsAny(a, "rR")
			force = force || strings.Contains(a, "f")
		}
	}
	for _, t := range targets {
		if !broad(t) {
			continue
		}
		if recursive || force {
			return Danger{Catastrophic, fmt.Sprintf("%q would delete %s: far more than any task needs", text, t)}
		}
		return Danger{Dangerous, fmt.Sprintf("%q deletes files across %s", text, t)}
	}
	if recursive {
		return Danger{Dangerous, fmt.Sprintf("%q deletes directories recursively", text)}
	}
	if force {
		return Danger{Dangerous, fmt.Sprintf("%q deletes files without confirmation", text)}
	}
	return Danger{}
}

func classifyChmod(name, text string, args []string) Danger {
	recursive := false
	var operands []string
	dashdash := false
	for _, a := range args {
		switch {
		case dashdash || !strings.HasPrefix(a, "-") || a == "-":
			operands = append(operands, a)
		case a == "--":
			dashdash = true
		case a == "--recursive":
			recursive = true
		case strings.HasPrefix(a, "--"):
		case name == "chmod" && strings.Trim(a[1:], "cfvR") != "":
			// chmod -x file: a mode, not an option.
			operands = append(operands, a)
		default:
			recursive = recursive || strings.Contains(a, "R")
		}
	}
	hasRef := false
	for _, a := range args {
		if strings.HasPrefix(a, "--reference") {
			hasRef = true
		}
	}
	targets := operands
	if !hasRef && len(targets) > 0 {
		targets = targets[1:] // the mode or the owner
	}
	for _, t := range targets {
		if recursive && broad(t) {
			return Danger{Catastrophic, fmt.Sprintf("%q changes ownership or permissions of everything under %s", text, t)}
		}
		if systemPath(t) {
			return Danger{Dangerous, fmt.Sprintf("%q changes system files under %s", text, t)}
		}
	}
	if recursive {
		return Danger{Dangerous, fmt.Sprintf("%q changes ownership or permissions recursively", text)}
	}
	return Danger{}
}

// gitSubcommand returns git's subcommand and its index in args (args[0]
// is git), skipping git's own options; index len(args) when there is none.
func gitSubcommand(args []string) (string, int) {
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-C" || a == "-c" || a == "--git-dir" || a == "--work-tree" || a == "--namespace" ||
			a == "--super-prefix" || a == "--config-env":
			i++ // the option's value
		case strings.HasPrefix(a, "-"):
		default:
			return a, i
		}
	}
	return "", len(args)
}

func classifyGit(text string, args []string) Danger {
	sub, i := gitSubcommand(args)
	if i >= len(args) {
		return Danger{}
	}
	rest := args[i+1:]
	switch sub {
	case "push":
		for _, a := range rest {
			if a == "--force" || a == "--mirror" || strings.HasPrefix(a, "--force-with-lease") || strings.HasPrefix(a, "--force-if-includes") ||
				(strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "f")) ||
				(strings.HasPrefix(a, "+") && len(a) > 1) {
				return Danger{Dangerous, fmt.Sprintf("%q force-pushes, which can overwrite other people's commits", text)}
			}
		}
	case "reset":
		for _, a := range rest {
			if a == "--hard" {
				return Danger{Dangerous, fmt.Sprintf("%q discards uncommitted changes for good", text)}
			}
		}
	case "clean":
		for _, a := range rest {
			if a == "--force" || (strings.HasPrefix(a, "-") && !strings.HasPrefix(a, "--") && strings.Contains(a, "f")) {
				return Danger{Dangerous, fmt.Sprintf("%q deletes untracked files for good", text)}
			}
		}
	}
	return Danger{}
}

// copyDest is the destination of cp/mv/install/ln: -t DIR, or the last
// operand when there are at least two.
func copyDest(args []string) string {
	var operands []string
	dashdash := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case dashdash || !strings.HasPrefix(a, "-") || a == "-":
			operands = append(operands, a)
		case a == "--":
			dashdash = true
		case a == "-t" || a == "--target-directory":
			if i+1 < len(args) {
				return args[i+1]
			}
		case strings.HasPrefix(a, "--target-directory="):
			return a[len("--target-directory="):]
		}
	}
	if len(operands) < 2 {
		return ""
	}
	return operands[len(operands)-1]
}

// classifyWrite: a block device is catastrophic, a system path dangerous.
func classifyWrite(verb, target string) Danger {
	p := path.Clean(target)
	if harmlessDevice(p) {
		return Danger{}
	}
	switch {
	case blockDevice(p):
		return Danger{Catastrophic, fmt.Sprintf("%s the device %s, which can destroy a disk", verb, target)}
	case strings.HasPrefix(p, "/dev/tcp/") || strings.HasPrefix(p, "/dev/udp/"):
		return Danger{Dangerous, fmt.Sprintf("%s %s, a network connection", verb, target)}
	case strings.HasPrefix(p, "/dev/shm/"):
		return Danger{}
	case strings.HasPrefix(p, "/dev/") || p == "/dev":
		return Danger{Dangerous, fmt.Sprintf("%s the device %s", verb, target)}
	case systemPath(p):
		return Danger{Dangerous, fmt.Sprintf("%s %s, a system path", verb, target)}
	}
	return Danger{}
}

// blockDeviceNames are /dev entries that are disks, partitions or memory.
var blockDeviceNames = []string{"sd", "hd", "vd", "xvd", "nvme", "mmcblk", "disk", "rdisk", "md", "dm-", "loop", "sr", "nbd", "mapper/", "mem", "kmem", "port", "root"}

func blockDevice(p string) bool {
	rest, ok := strings.CutPrefix(p, "/dev/")
	if !ok {
		return false
	}
	rest = strings.TrimPrefix(rest, "block/")
	for _, n := range blockDeviceNames {
		if strings.HasPrefix(rest, n) {
			return true
		}
	}
	return strings.HasPrefix(rest, "disk/") // /dev/disk/by-id/...
}

// systemDirs are top-level directories the system, not a task, owns.
var systemDirs = map[string]bool{"etc": true, "usr": true, "bin": true, "sbin": true, "boot": true, "sys": true, "proc": true}

// systemPath reports whether p is under /etc, /usr, /bin, /sbin, /boot,
// /lib*, /sys or /proc.
func systemPath(p string) bool {
	if !strings.HasPrefix(p, "/") {
		return false
	}
	first, _, _ := strings.Cut(strings.TrimPrefix(path.Clean(p), "/"), "/")
	return systemDirs[first] || strings.HasPrefix(first, "lib")
}

// homeMark stands for the home directory while cleaning paths.
const homeMark = "/\x00home"

// broad reports whether deleting target would take far more than a task
// needs: /, a top-level directory, a home directory, the current or a
// parent directory, a system directory, or a glob over any of them.
func broad(target string) bool {
	t := target
	for _, h := range []string{"$HOME", "${HOME}"} {
		if rest, ok := strings.CutPrefix(t, h); ok && (rest == "" || rest[0] == '/') {
			t = "~" + rest
		}
	}
	if strings.HasPrefix(t, "~") {
		// ~user is someone's home directory, as broad as our own.
		_, rest, _ := strings.Cut(t[1:], "/")
		t = homeMark + "/" + rest
	}
	if t == "" {
		return false
	}
	p := path.Clean(t)
	// Strip trailing wildcard components: /* is as broad as /.
	for {
		dir, last := path.Split(p)
		if !wild(last) {
			break
		}
		if dir == "" {
			p = "."
			break
		}
		p = path.Clean(dir)
	}
	if p == "." || p == ".." || strings.Trim(p, "./") == "" {
		return true // ., .., ../.., the working directory or its parents
	}
	if p == homeMark {
		return true
	}
	if !strings.HasPrefix(p, "/") {
		return false
	}
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	if len(parts) <= 1 || systemPath(p) {
		return true
	}
	return len(parts) == 2 && (parts[0] == "home" || parts[0] == "Users")
}

// wild reports whether a path component is a glob matching (almost)
// everything: *, .*, ?*, [!.]*, *.*.
func wild(c string) bool {
	return strings.ContainsAny(c, "*?") && strings.Trim(c, "*?.[]!^") == ""
}
