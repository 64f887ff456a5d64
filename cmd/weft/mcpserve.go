package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync/atomic"

	"github.com/spf13/cobra"

	"github.com/weft-run/weft/app"
	"github.com/weft-run/weft/mcpserver"
	"github.com/weft-run/weft/tool"
	"github.com/weft-run/weft/tool/workflow"
)

// weft as an MCP server: `weft serve --mcp` (streamable HTTP at /mcp) and
// `weft mcp serve` (stdio, for clients that start their servers as
// processes). Both expose the published workflows, and --mcp-tools adds
// builtin tools, every call under the server's policy (docs/mcp.md).

// mcpServer builds the MCP server over a's tools and the sessions' policy.
func (f *serveFlags) mcpServer(a *app.App, log *slog.Logger) (*mcpserver.Server, error) {
	extra := splitList(f.mcpTools)
	for _, name := range extra {
		t, ok := a.Tools.Get(name)
		if !ok {
			return nil, fmt.Errorf("--mcp-tools: no tool %q (weft tools lists them)", name)
		}
		if workflow.IsTool(t.Spec().Name) {
			return nil, fmt.Errorf("--mcp-tools: %q is a workflow; published workflows are always served", name)
		}
	}
	return mcpserver.New(mcpserver.Config{
		Name: "weft", Version: version(), Tools: a.Tools, Policy: a.Sessions.ServerPolicy(), Logger: log,
		Expose: func(s tool.Spec) bool { return workflow.IsTool(s.Name) || slices.Contains(extra, s.Name) },
	})
}

// serveStdio is `weft mcp serve`: one client on stdin/stdout until it
// leaves or a signal comes, then the app's ordered shutdown.
func (f *serveFlags) serveStdio(ctx context.Context, env environ, a *app.App, log *slog.Logger) error {
	ms, err := f.mcpServer(a, log)
	if err != nil {
		return errors.Join(err, a.Shutdown(context.WithoutCancel(ctx)))
	}
	fmt.Fprintf(env.stderr, "weft mcp serve: serving on stdio (database %s, workspace %s)\n", storeDisplay(f.db), f.workspace)
	serr := ms.ServeStdio(ctx, readCloser(env.stdin), writeCloser(env.stdout))
	return errors.Join(serr, a.Shutdown(context.WithoutCancel(ctx)))
}

func readCloser(r io.Reader) io.ReadCloser {
	if rc, ok := r.(io.ReadCloser); ok {
		return rc
	}
	return io.NopCloser(r)
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// writeCloser never closes: stdout stays the process's until it exits.
func writeCloser(w io.Writer) io.WriteCloser { return nopWriteCloser{w} }

// lateHandler is a handler whose target is set after the server that
// routes to it was built; until then it answers 503.
type lateHandler struct{ h atomic.Pointer[http.Handler] }

func (l *lateHandler) set(h http.Handler) { l.h.Store(&h) }

func (l *lateHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h := l.h.Load(); h != nil {
		(*h).ServeHTTP(w, r)
		return
	}
	http.Error(w, "the MCP server is starting", http.StatusServiceUnavailable)
}

// newMCPServeCmd is `weft mcp serve`: weft serve's setup, served over
// stdio instead of HTTP.
func newMCPServeCmd(env environ) *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve weft's published workflows (and, opt-in, builtin tools) as an MCP server on stdin/stdout",
		Long: `mcp serve lets another agent (Claude Code, Cursor, any MCP client) call weft:
each published workflow is a tool (its input schema is the tool's), and
--mcp-tools adds builtin tools. Every call goes through the same policy as a
chat session's (settings, rules, hooks, audit, secret redaction); a call the
rules leave to a person is asked through the client (MCP elicitation), and a
client that cannot ask is refused.

It takes weft serve's flags and environment (WEFT_DB, WEFT_CONFIG, ...). The
database allows one weft process at a time: while a weft serve holds it, point
the client at that server's /mcp instead (weft serve --mcp).

  claude mcp add weft -- weft mcp serve --db ~/weft/weft.db`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.load(cmd.Flags(), env.getenv); err != nil {
				return err
			}
			f.stdio = true
			return f.run(cmd.Context(), env)
		},
	}
	f.register(cmd.Flags())
	return cmd
}
