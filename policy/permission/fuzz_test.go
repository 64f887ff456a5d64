package permission

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// realOpt is one option of a real wrapper, as its --help lists it.
type realOpt struct {
	long  string
	short byte // 0: none
	arg   int  // 0 none, 1 required, 2 optional (attached only)
	value string
}

// realWrapper is a wrapper as the installed tool defines it: every long
// option (to tell an unambiguous abbreviation), the options the fuzzer
// uses, and the operands that come before the command.
type realWrapper struct {
	name  string
	longs []string
	use   []realOpt
	pre   []string
}

var realWrappers = []realWrapper{
	{"env", []string{"ignore-environment", "null", "unset", "chdir", "split-string", "debug", "block-signal", "default-signal",
		"ignore-signal", "list-signal-handling", "help", "version"},
		[]realOpt{{"unset", 'u', 1, "X"}, {"chdir", 'C', 1, "/"}, {"debug", 'v', 0, ""}, {"block-signal", 0, 2, "INT"},
			{"default-signal", 0, 2, "INT"}, {"ignore-signal", 0, 2, "USR1"}}, nil},
	{"timeout", []string{"preserve-status", "foreground", "kill-after", "signal", "verbose", "help", "version"},
		[]realOpt{{"signal", 's', 1, "TERM"}, {"kill-after", 'k', 1, "1"}, {"preserve-status", 0, 0, ""}, {"foreground", 0, 0, ""},
			{"verbose", 'v', 0, ""}}, []string{"5"}},
	{"nice", []string{"adjustment", "help", "version"}, []realOpt{{"adjustment", 'n', 1, "1"}}, nil},
	{"nohup", []string{"help", "version"}, nil, nil},
	{"stdbuf", []string{"input", "output", "error", "help", "version"},
		[]realOpt{{"output", 'o', 1, "L"}, {"error", 'e', 1, "0"}, {"input", 'i', 1, "0"}}, nil},
	{"xargs", []string{"null", "arg-file", "delimiter", "eof", "replace", "max-lines", "max-args", "open-tty", "interactive",
		"no-run-if-empty", "max-chars", "verbose", "show-limits", "exit", "max-procs", "process-slot-var", "version", "help"},
		[]realOpt{{"max-args", 'n', 1, "2"}, {"max-procs", 'P', 1, "1"}, {"no-run-if-empty", 'r', 0, ""}, {"max-chars", 's', 1, "4096"},
			{"process-slot-var", 0, 1, "SLOT"}}, nil},
	{"setsid", []string{"ctty", "fork", "help", "version", "wait"}, []realOpt{{"wait", 'w', 0, ""}}, nil},
	{"flock", []string{"shared", "exclusive", "unlock", "nonblocking", "nb", "timeout", "wait", "conflict-exit-code", "close",
		"no-fork", "verbose", "help", "version"},
		[]realOpt{{"exclusive", 'x', 0, ""}, {"timeout", 'w', 1, "5"}, {"no-fork", 'F', 0, ""}, {"conflict-exit-code", 'E', 1, "3"}},
		[]string{"lockfile"}},
	{"ionice", []string{"class", "classdata", "pid", "pgid", "uid", "ignore", "help", "version"},
		[]realOpt{{"ignore", 't', 0, ""}, {"class", 'c', 1, "2"}, {"classdata", 'n', 1, "4"}}, nil},
	{"prlimit", []string{"pid", "output", "noheadings", "raw", "verbose", "help", "version", "core", "data", "nice", "fsize",
		"sigpending", "memlock", "rss", "nofile", "msgqueue", "rtprio", "stack", "cpu", "nproc", "as", "locks", "rttime"},
		[]realOpt{{"nofile", 'n', 2, "512"}, {"core", 'c', 2, "0"}, {"cpu", 't', 2, "60"}}, nil},
	{"taskset", []string{"all-tasks", "pid", "cpu-list", "help", "version"}, nil, []string{"1"}},
}

// wrapperChain turns fuzz bytes into a chain of wrappers around the
// command "weftmark victim", and reports whether every option is spelled
// the way the real tool accepts (an unambiguous long prefix).
func wrapperChain(data []byte) (string, bool) {
	next := func() int {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return int(b)
	}
	valid := true
	var words []string
	for range 1 + next()%3 {
		w := realWrappers[next()%len(realWrappers)]
		words = append(words, w.name)
		for range next() % 3 {
			if len(w.use) == 0 {
				break
			}
			o := w.use[next()%len(w.use)]
			style := next()
			if o.short != 0 && style%3 == 0 {
				switch {
				case o.arg == 1 && style%2 == 0:
					words = append(words, "-"+string(o.short), o.value)
				case o.arg != 0:
					words = append(words, "-"+string(o.short)+o.value)
				default:
					words = append(words, "-"+string(o.short))
				}
				continue
			}
			name := o.long[:1+next()%len(o.long)]
			matches := 0
			for _, l := range w.longs {
				if l == name {
					matches = 1
					break
				}
				if strings.HasPrefix(l, name) {
					matches++
				}
			}
			valid = valid && matches == 1
			switch {
			case o.arg == 1 && style%2 == 0:
				words = append(words, "--"+name, o.value)
			case o.arg != 0 && style%2 == 1:
				words = append(words, "--"+name+"="+o.value)
			default:
				words = append(words, "--"+name)
				valid = valid && o.arg != 1
			}
		}
		for _, p := range w.pre {
			if w.name == "flock" {
				p += strconv.Itoa(len(words)) // a lock of its own: nested flocks on one file wait forever
			}
			words = append(words, p)
		}
	}
	return strings.Join(append(words, "weftmark", "victim"), " "), valid
}

// FuzzWrappers: a command that a deny rule names is denied whatever
// wrappers, options and abbreviations run it. The real tools are the
// oracle where they are installed: when the chain ran weftmark, the
// analysis must have denied it; and a chain the fuzzer spelled the way
// the tools accept must be denied in any case.
func FuzzWrappers(f *testing.F) {
	for _, seed := range [][]byte{
		{0, 0, 1, 0, 1, 2},          // env --u... X
		{0, 1, 1, 0, 1, 5},          // timeout --s...
		{0, 2, 1, 0, 1, 2},          // nice --adj...
		{0, 5, 1, 0, 1, 4},          // xargs --max-a...
		{1, 0, 1, 1, 1, 2, 1, 2, 0}, // env --chdir, then timeout
		{2, 7, 2, 1, 0, 4, 2, 1, 9, 4, 0, 3, 7},
		{0, 9, 1, 0, 1, 6},
		{0, 8, 1, 1, 3, 3},
		{1, 3, 0, 4, 1, 0, 0},
		{0, 10, 0},
		{0, 6, 1, 0, 3},
	} {
		f.Add(seed)
	}
	deny := rules(f, []string{"Bash"}, nil, []string{"Bash(weftmark:*)"})
	dir := f.TempDir()
	mark := filepath.Join(dir, "bin", "weftmark")
	if err := os.MkdirAll(filepath.Dir(mark), 0o755); err != nil {
		f.Fatal(err)
	}
	if err := os.WriteFile(mark, []byte("#!/bin/sh\necho MARK\n"), 0o755); err != nil {
		f.Fatal(err)
	}
	shellPath, bashErr := exec.LookPath("bash")
	f.Fuzz(func(t *testing.T, data []byte) {
		cmd, valid := wrapperChain(data)
		d := Evaluate(deny, ModeBypass, bash(cmd))
		ran := false
		if bashErr == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			// Only descriptors 0-2, as the Bash tool gives: a fuzzing
			// worker holds its own pipes on 3 and up.
			c := exec.CommandContext(ctx, shellPath, "-c", "exec 3<&- 4<&- 5<&- 6<&- 7<&- 8<&- 9<&-\n"+cmd)
			c.Dir = dir
			c.WaitDelay = time.Second
			c.Env = append(os.Environ(), "PATH="+filepath.Dir(mark)+":"+os.Getenv("PATH"))
			c.Stdin = strings.NewReader("input\n")
			var out bytes.Buffer
			c.Stdout = &out
			_ = c.Run()
			ran = strings.Contains(out.String(), "MARK")
		}
		if (ran || valid) && d.Verdict != Deny {
			t.Errorf("%q (ran: %v, spelled as the tools accept: %v) was not denied: %s: %s", cmd, ran, valid, d.Verdict, d.Reason)
		}
	})
}
