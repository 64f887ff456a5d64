package shell

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// redirForms are the pieces FuzzStdin builds a bash command line from:
// every way to connect descriptors the analysis models, each marking
// what it would run. A here-document's body goes after the line.
var redirForms = []struct{ redir, body string }{
	{"<f1.sh", ""}, {"0<f2.sh", ""}, {"3<f1.sh", ""}, {"4<f2.sh", ""},
	{"<<<'echo H1'", ""}, {"3<<<'echo H2'", ""}, {"4<<<'echo H3'", ""}, {"0<<<'echo H4'", ""},
	{"<<'E%d'", "echo H5"}, {"3<<'E%d'", "echo H6"}, {"<<-E%d", "\techo H7"},
	{"<&3", ""}, {"0<&4", ""}, {"<&3-", ""}, {"<&-", ""}, {"3<&0", ""}, {"4<&3", ""},
	{"<>f2.sh", ""}, {"0>&3", ""}, {"3>/dev/null", ""}, {"< <(echo 'echo P1')", ""},
	{"{fd}<f1.sh", ""}, {"2>&1", ""},
}

var (
	stdinOperands = []string{"", "", "/dev/stdin", "/dev/fd/3", "/dev/fd/4", "-s", "-", "/proc/self/fd/3"}
	stdinPrefixes = []string{"", "", "echo 'echo PIPE' | ", "{ ", "f() { "}
)

// stdinScript turns fuzz bytes into a bash command line.
func stdinScript(data []byte) string {
	if len(data) == 0 {
		return "bash"
	}
	prefix := stdinPrefixes[int(data[0])%len(stdinPrefixes)]
	operand := ""
	if len(data) > 1 {
		operand = stdinOperands[int(data[1])%len(stdinOperands)]
	}
	var line, bodies strings.Builder
	line.WriteString(prefix + "bash " + operand)
	closing := ""
	switch prefix {
	case "{ ":
		closing = "; }"
	case "f() { ":
		closing = "; }; f"
	}
	if closing != "" {
		// Half of the redirections go on the group, after it closes.
		line.WriteString(closing)
	}
	for i, b := range data[min(2, len(data)):] {
		if i >= 6 {
			break
		}
		f := redirForms[int(b)%len(redirForms)]
		line.WriteString(" " + strings.ReplaceAll(f.redir, "%d", fmt.Sprint(i)))
		if f.body != "" {
			fmt.Fprintf(&bodies, "%s\n%s\n", f.body, strings.ReplaceAll(strings.TrimLeft(f.redir, "0123456789<-'"), "'", ""))
		}
	}
	if bodies.Len() > 0 {
		return line.String() + "\n" + bodies.String()
	}
	return line.String()
}

// closeFds gives the command only descriptors 0, 1 and 2, as the Bash
// tool does: a fuzzing worker holds its own pipes on 3 and up, and bash
// would inherit them.
const closeFds = "exec 3<&- 4<&- 5<&- 6<&- 7<&- 8<&- 9<&-\n"

// FuzzStdin checks the descriptor model against bash itself: whatever
// bash runs as the inner shell's script must be explained by the
// analysis, as an analyzed command (a here-document), a script file it
// reads, or code it says it cannot see.
func FuzzStdin(f *testing.F) {
	for _, seed := range [][]byte{
		{0, 0, 4, 0},     // bash <<<'echo H1' <f1.sh: the shape
		{0, 0, 0, 4},     // bash <f1.sh <<<'echo H1'
		{0, 0, 5, 4},     // bash 3<<<'echo H2' <<<'echo H1'
		{0, 0, 5, 4, 11}, // ... <&3
		{0, 3, 5, 4},     // bash /dev/fd/3 3<<<... <<<...
		{2, 0, 4},        // a pipe, overridden
		{2, 0},           // a pipe into bash
		{0, 0, 8, 0},     // here-document, then a file
		{0, 0, 9, 0, 11}, // here-document on 3, copied
		{3, 0, 4, 1},     // group redirection
		{4, 0, 0},        // function
		{0, 0, 20},       // process substitution
		{0, 0, 6, 16, 12, 13},
		{0, 5, 21, 4},
	} {
		f.Add(seed)
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		f.Skip("no bash to compare with")
	}
	dir := f.TempDir()
	for name, body := range map[string]string{"f1.sh": "echo F1\n", "f2.sh": "echo F2\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		src := stdinScript(data)
		a := Analyze(src)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bash, "-c", closeFds+src)
		cmd.Dir = dir
		cmd.WaitDelay = time.Second
		var out bytes.Buffer
		cmd.Stdout = &out
		_ = cmd.Run() // bash refusing a redirection is a fine outcome
		ran := out.String()
		cmds := texts(a)
		for _, h := range []string{"H1", "H2", "H3", "H4", "H5", "H6", "H7"} {
			if strings.Contains(ran, h) && !slices.Contains(cmds, "echo "+h) && len(a.Opaque) == 0 {
				t.Errorf("%q: bash ran echo %s, the analysis has %q", src, h, cmds)
			}
		}
		for _, file := range []string{"F1", "F2"} {
			// A script file: the analysis must read it and record the
			// shell that runs it, so a rule has to allow that shell.
			name := strings.ToLower(file) + ".sh"
			read := slices.ContainsFunc(a.Reads, func(p Path) bool { return p.Name == name })
			shell := slices.ContainsFunc(cmds, func(c string) bool { return c == "bash" || strings.HasPrefix(c, "bash ") })
			if strings.Contains(ran, file) && !(read && shell) && len(a.Opaque) == 0 {
				t.Errorf("%q: bash ran %s, the analysis has commands %q, reads %v", src, name, cmds, paths(a.Reads))
			}
		}
		for _, p := range []string{"P1", "PIPE"} {
			if strings.Contains(ran, p) && len(a.Opaque) == 0 {
				t.Errorf("%q: bash ran code from a %s the analysis did not flag: %q", src, p, cmds)
			}
		}
	})
}
