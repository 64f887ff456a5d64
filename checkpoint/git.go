package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// gitCmd runs the git binary against the store with a workspace as its
// work tree. Every invocation gets an environment built from scratch: no
// GIT_* variable of weft's own environment (a GIT_DIR set by a hook that
// started weft, say) reaches it, and neither the system's nor the user's
// git configuration is read, so nothing in them (hooks, fsmonitor, filter
// drivers, excludes) changes what a snapshot holds or runs a program.
type gitCmd struct {
	bin      string
	gitDir   string
	workTree string
	index    string // GIT_INDEX_FILE; "" for commands that need none
	excludes string // core.excludesFile; "" for none
	env      []string
}

// baseEnv is the environment of every git process: the process's own
// without its GIT_* variables, plus what isolates git.
func baseEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GIT_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_TERMINAL_PROMPT=0",
		"GIT_OPTIONAL_LOCKS=0",
		"GIT_AUTHOR_NAME=weft", "GIT_AUTHOR_EMAIL=weft@localhost",
		"GIT_COMMITTER_NAME=weft", "GIT_COMMITTER_EMAIL=weft@localhost",
		"LC_ALL=C",
	)
}

// gitConfig are -c settings of every invocation: the store has no config
// file of its own that a setting could drift in, and these make a
// snapshot byte for byte what is on disk.
var gitConfig = []string{
	"core.autocrlf=false",
	"core.safecrlf=false",
	"core.filemode=true",
	"core.symlinks=true",
	"core.ignorecase=false",
	"core.precomposeunicode=false",
	"core.fsmonitor=false",
	"core.hooksPath=" + os.DevNull,
	"core.quotepath=false",
	"gc.auto=0",
	"advice.detachedHead=false",
}

// run runs git with args, stdin as its input, and returns its standard
// output. A failure carries git's standard error.
func (g *gitCmd) run(ctx context.Context, stdin io.Reader, args ...string) ([]byte, error) {
	var out bytes.Buffer
	if err := g.stream(ctx, stdin, &out, args...); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// stream is run writing the output to w.
func (g *gitCmd) stream(ctx context.Context, stdin io.Reader, w io.Writer, args ...string) error {
	full := make([]string, 0, 2*len(gitConfig)+4+len(args))
	for _, c := range gitConfig {
		full = append(full, "-c", c)
	}
	if g.excludes != "" {
		full = append(full, "-c", "core.excludesFile="+g.excludes)
	}
	full = append(full, args...)
	cmd := exec.CommandContext(ctx, g.bin, full...)
	cmd.Dir = g.workTree
	if cmd.Dir == "" {
		cmd.Dir = g.gitDir
	}
	env := append([]string(nil), g.env...)
	env = append(env, "GIT_DIR="+g.gitDir)
	if g.workTree != "" {
		env = append(env, "GIT_WORK_TREE="+g.workTree)
	}
	if g.index != "" {
		env = append(env, "GIT_INDEX_FILE="+g.index)
	}
	cmd.Env = env
	cmd.Stdin = stdin
	cmd.Stdout = w
	var stderr bytes.Buffer
	cmd.Stderr = &limitedWriter{w: &stderr, n: 4 << 10}
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("git %s: %w", args[0], ctx.Err())
		}
		msg := strings.TrimSpace(stderr.String())
		var exit *exec.ExitError
		if errors.As(err, &exit) && msg != "" {
			return fmt.Errorf("git %s: %s", args[0], firstLine(msg))
		}
		return fmt.Errorf("git %s: %w", args[0], err)
	}
	return nil
}

// limitedWriter keeps the first n bytes written to it and drops the rest:
// git's error output is shown in one line.
type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(len(p), l.n)
		l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
