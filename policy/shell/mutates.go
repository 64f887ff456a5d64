package shell

// This file tells a command that only reads from one that may change
// files, for the workspace checkpoint taken before a change. It is an
// allowlist: a command is read-only only when it is known to be, with
// arguments that keep it so; anything else, anything the analysis could
// not pin down, and any output redirection to a file may change files.
// Getting it wrong one way costs a snapshot; the other way, an undo that
// misses a change, so unknown means "may change".

import (
	"regexp"
	"strings"
)

// readOnlyCommands only read files and print, whatever their operands
// (their options are checked by readOnlyArgs where some option writes).
// Builtins that change only the shell's own state count as read-only.
var readOnlyCommands = setOf(
	"ls", "dir", "vdir", "cat", "tac", "nl", "head", "tail", "wc", "grep", "egrep", "fgrep", "rg", "ag", "ack",
	"echo", "printf", "pwd", "true", "false", "test", "[", "which", "type", "whereis", "file", "stat",
	"du", "df", "printenv", "date", "whoami", "id", "groups", "uname", "hostname", "uptime", "nproc", "free",
	"tty", "locale", "getconf", "basename", "dirname", "realpath", "readlink", "tree", "diff", "cmp", "comm",
	"cut", "tr", "od", "hexdump", "hd", "strings", "md5sum", "sha1sum", "sha224sum", "sha256sum",
	"sha384sum", "sha512sum", "b2sum", "cksum", "sum", "jq", "less", "more", "column", "rev", "fold", "fmt",
	"expand", "unexpand", "paste", "join", "seq", "sleep", "base64", "base32", "look", "numfmt", "ps",
	"cd", "pushd", "popd", "dirs", "export", "set", "unset", "shift", "exit", "return", "local", "declare",
	"typeset", "readonly", "read", ":", "env", "sort", "sed", "find", "git",
)

// readOnlyGit are git's subcommands that change nothing in the work tree.
var readOnlyGit = setOf("status", "log", "diff", "show", "blame", "annotate", "grep", "ls-files", "ls-tree",
	"rev-parse", "describe", "shortlog", "cat-file", "rev-list", "whatchanged", "show-ref", "for-each-ref",
	"name-rev", "merge-base", "count-objects", "version", "help", "var")

// sedWrites finds a sed command that writes a file or runs one (w, W, e)
// in a script: a false alarm (a "w" in a pattern) only costs a snapshot.
var sedWrites = regexp.MustCompile(`(^|[^A-Za-z\\])[wWe]([\s;}]|$)|/[a-zA-Z0-9]*[we][a-zA-Z0-9]*\s*($|;|})`)

// MayChangeFiles reports whether running the script may change files:
// true for a write redirection, for any command not known to only read
// (cp, mv, rm, touch, sed -i, git checkout, a build, an interpreter, ...),
// and whenever the analysis is incomplete.
func (a Analysis) MayChangeFiles() bool {
	if len(a.Problems) > 0 || len(a.Opaque) > 0 || len(a.Writes) > 0 {
		return true
	}
	for _, c := range a.Commands {
		if len(c.Args) == 0 || (len(c.Kinds) > 0 && c.Kinds[0] != Literal) {
			return true
		}
		name := base(c.Args[0])
		if !readOnlyCommands[name] || !readOnlyArgs(name, c.Args[1:]) {
			return true
		}
	}
	return false
}

// readOnlyArgs reports whether a read-only command's arguments keep it
// read-only.
func readOnlyArgs(name string, args []string) bool {
	switch name {
	case "sort":
		for _, a := range args {
			if a == "-o" || strings.HasPrefix(a, "--output") || (shortFlags(a) && strings.Contains(a, "o")) {
				return false
			}
		}
	case "sed":
		for _, a := range args {
			switch {
			case strings.HasPrefix(a, "--in-place"), shortFlags(a) && strings.Contains(a, "i"):
				return false
			case !strings.HasPrefix(a, "-") && sedWrites.MatchString(a):
				return false
			}
		}
	case "tree":
		// -o writes its listing to a file; -R with -H writes 00Tree.html
		// into every directory.
		for _, a := range args {
			if strings.HasPrefix(a, "-o") || (shortFlags(a) && strings.ContainsAny(a, "oR")) {
				return false
			}
		}
	case "file":
		// -C compiles a magic file: it writes <name>.mgc.
		for _, a := range args {
			if a == "--compile" || (shortFlags(a) && strings.Contains(a, "C")) {
				return false
			}
		}
	case "base64", "base32":
		// BSD base64 writes -o's file.
		for _, a := range args {
			if strings.HasPrefix(a, "-o") || strings.HasPrefix(a, "--output") {
				return false
			}
		}
	case "rg":
		// --pre runs a program on every file searched.
		for _, a := range args {
			if a == "--pre" || strings.HasPrefix(a, "--pre=") {
				return false
			}
		}
	case "find":
		for _, a := range args {
			switch a {
			case "-delete", "-fprint", "-fprint0", "-fprintf", "-fls":
				return false
			}
		}
	case "git":
		sub, i := gitSubcommand(args0(args))
		if i > len(args) || !readOnlyGit[sub] {
			return false
		}
		for _, a := range args {
			// --output writes the diff or log to a file; grep's -O
			// (--open-files-in-pager) runs an editor on the files.
			if strings.HasPrefix(a, "--output") || a == "-o" || strings.HasPrefix(a, "--open-files-in-pager") ||
				(sub == "grep" && shortFlags(a) && strings.Contains(a, "O")) {
				return false
			}
		}
	case "env":
		// env with a command is seen through (the command is judged);
		// alone it prints, and -C or -S are read by the analysis too.
	}
	return true
}

// shortFlags reports whether a is a cluster of short options (-ni).
func shortFlags(a string) bool {
	return len(a) > 1 && a[0] == '-' && a[1] != '-'
}

// args0 puts a command name back in front of its arguments, for helpers
// that expect args[0] to be the command.
func args0(args []string) []string {
	return append([]string{""}, args...)
}
