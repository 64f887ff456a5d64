package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/policy/secret"
	"github.com/weft-run/weft/tool"
	"github.com/weft-run/weft/tool/mcp"
)

// mcpFlags are the MCP settings of run, chat, serve and tools.
type mcpFlags struct {
	configs []string
	strict  bool
}

func (f *mcpFlags) register(fs *pflag.FlagSet) {
	fs.StringSliceVar(&f.configs, "mcp-config", nil, `MCP servers file in Claude Code's shape ({"mcpServers": {...}}), on top of ~/.weft/mcp.json, the workspace's .mcp.json and "mcpServers" in settings files (repeatable)`)
	fs.BoolVar(&f.strict, "strict-mcp-config", false, "use only the MCP servers of --mcp-config")
}

// mcpSetup is what the MCP configuration resolved to in a workspace.
type mcpSetup struct {
	servers  []mcp.Server
	project  mcp.ProjectSettings
	store    *mcp.Approvals
	tokens   *mcp.TokenStore
	ws, home string
	// elicit answers the servers' requests for input where there is no
	// terminal (weft serve: the session service's, over the HTTP API).
	elicit mcp.ElicitFunc
}

// loadMCP gathers the MCP servers: ~/.weft/mcp.json and the user
// settings (user scope), the workspace's .mcp.json and project settings
// (project scope, approved once), the --settings file and --mcp-config
// files (CLI scope); later scopes replace earlier definitions of a name.
func loadMCP(env environ, ws string, sources []policy.Source, f mcpFlags) (*mcpSetup, error) {
	home := env.getenv("HOME")
	st := &mcpSetup{ws: ws, home: home}
	if home != "" {
		st.store = mcp.OpenApprovals(mcp.ApprovalsPath(home))
		st.tokens = mcp.OpenTokens(mcp.TokensPath(home))
	}
	var srcs []mcp.Source
	add := func(src mcp.Source, err error) error {
		if err != nil {
			return err
		}
		srcs = append(srcs, src)
		return nil
	}
	settingsScope := map[string]mcp.Scope{policy.ScopeUser: mcp.ScopeUser, policy.ScopeProject: mcp.ScopeProject, policy.ScopeCLI: mcp.ScopeCLI}
	fromSettings := func(scope string) error {
		for _, s := range sources {
			if s.Scope != scope {
				continue
			}
			if err := add(mcp.ParseServers(settingsScope[scope], s.Path, s.Settings.MCPServers)); err != nil {
				return err
			}
			ps := s.Settings
			if len(ps.DisabledMcpjsonServers) > 0 {
				st.project.Disabled = append(st.project.Disabled, ps.DisabledMcpjsonServers...)
			}
			// A repository's own settings do not approve its servers.
			if scope != policy.ScopeProject {
				if ps.EnableAllProjectMcpServers != nil {
					st.project.EnableAll = *ps.EnableAllProjectMcpServers
				}
				st.project.Enabled = append(st.project.Enabled, ps.EnabledMcpjsonServers...)
			}
		}
		return nil
	}
	if !f.strict {
		if home != "" {
			if err := add(mcp.LoadFile(mcp.ScopeUser, mcp.UserPath(home), true)); err != nil {
				return nil, err
			}
		}
		if err := fromSettings(policy.ScopeUser); err != nil {
			return nil, err
		}
		if err := add(mcp.LoadFile(mcp.ScopeProject, mcp.ProjectPath(ws), true)); err != nil {
			return nil, err
		}
		if err := fromSettings(policy.ScopeProject); err != nil {
			return nil, err
		}
		if err := fromSettings(policy.ScopeCLI); err != nil {
			return nil, err
		}
	}
	for _, path := range f.configs {
		if err := add(mcp.LoadFile(mcp.ScopeCLI, path, false)); err != nil {
			return nil, err
		}
	}
	st.servers = mcp.Resolve(srcs, env.getenv)
	return st, nil
}

func (st *mcpSetup) decide(s mcp.Server) mcp.Decision {
	return mcp.Decide(s, st.ws, st.project, st.store)
}

func (st *mcpSetup) find(name string) (mcp.Server, error) {
	var names []string
	for _, s := range st.servers {
		if s.Name == name {
			return s, nil
		}
		names = append(names, s.Name)
	}
	if len(names) == 0 {
		return mcp.Server{}, fmt.Errorf("no MCP server %q: none is configured for %s", name, st.ws)
	}
	return mcp.Server{}, fmt.Errorf("no MCP server %q; configured: %s", name, strings.Join(names, ", "))
}

// mcpTimeouts reads Claude Code's MCP_TIMEOUT (connecting) and
// MCP_TOOL_TIMEOUT (one call), in milliseconds.
func mcpTimeouts(env environ) (start, call time.Duration, err error) {
	parse := func(name string) (time.Duration, error) {
		v := env.getenv(name)
		if v == "" {
			return 0, nil
		}
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil || ms <= 0 {
			return 0, fmt.Errorf("%s %q: want milliseconds", name, v)
		}
		return time.Duration(ms) * time.Millisecond, nil
	}
	if start, err = parse("MCP_TIMEOUT"); err != nil {
		return
	}
	call, err = parse("MCP_TOOL_TIMEOUT")
	return
}

// mcpStart connects the approved servers and registers their tools in
// reg. Pending project servers are asked about on the terminal (lines;
// nil: none), and skipped with a warning without one. ap shows the
// servers' requests for input (nil: st.elicit does, else they are
// declined).
func mcpStart(env environ, st *mcpSetup, reg *tool.Registry, extraDirs, toolEnv []string, secrets *secret.Set,
	lines *lineReader, ap *approver, log *slog.Logger) (*mcp.Manager, error) {
	var run []mcp.Server
	for _, s := range st.servers {
		d := st.decide(s)
		if d.Approval == mcp.Pending && lines != nil {
			// The command's context does not reach here: Ctrl-C must still
			// end the question (as "skip"), not leave it waiting.
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			d = askProjectServer(ctx, st, s, lines, env.stderr)
			stop()
		}
		switch d.Approval {
		case mcp.Approved:
			run = append(run, s)
		case mcp.Pending:
			fmt.Fprintf(env.stderr, "weft: MCP server %q from %s is not approved (%s); skipped. Approve it with `weft mcp approve %s`.\n", s.Name, s.Path, d.Reason, s.Name)
		}
	}
	if len(run) == 0 {
		return nil, nil
	}
	start, call, err := mcpTimeouts(env)
	if err != nil {
		return nil, err
	}
	opts := mcp.Options{Workspace: st.ws, Roots: extraDirs, ExtraEnv: toolEnv, Secrets: secrets, Tokens: st.tokens,
		Logger: log, StartTimeout: start, CallTimeout: call, Version: version()}
	if ap != nil && ap.lines != nil {
		opts.Elicit = ap.elicit
	} else if st.elicit != nil {
		opts.Elicit = st.elicit
	}
	m := mcp.NewManager(reg, opts)
	if err := m.Start(context.Background(), run); err != nil {
		m.Close()
		return nil, err
	}
	for _, s := range m.Status() {
		switch s.State {
		case mcp.StateConnected:
		case mcp.StateNeedsLogin:
			fmt.Fprintf(env.stderr, "weft: MCP server %q needs authorization: run `weft mcp login %s`\n", s.Name, s.Name)
		default:
			fmt.Fprintf(env.stderr, "weft: MCP server %q is unavailable: %s\n", s.Name, oneLine(s.Error))
		}
		for _, p := range s.Problems {
			fmt.Fprintf(env.stderr, "weft: MCP server %q: %s\n", s.Name, p)
		}
	}
	return m, nil
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " ..."
	}
	return s
}

// askProjectServer asks once about a project server, showing what it
// would run as written in the file.
func askProjectServer(ctx context.Context, st *mcpSetup, s mcp.Server, lines *lineReader, out io.Writer) mcp.Decision {
	fmt.Fprintf(out, "\nThe project's %s configures the MCP server %q:\n", s.Path, s.Name)
	describeServer(out, s)
	if s.Err != nil {
		fmt.Fprintf(out, "  (it cannot start as configured: %v)\n", s.Err)
	}
	for {
		fmt.Fprint(out, "It runs with your permissions. Start it? [y]es, remember / [n]o, remember / [s]kip this time: ")
		answer, err := lines.ReadLine(ctx)
		if err != nil {
			return mcp.Decision{Approval: mcp.Pending, Reason: "no answer"}
		}
		switch strings.ToLower(strings.TrimSpace(answer)) {
		case "y", "yes":
			if st.store != nil {
				if err := st.store.Set(st.ws, s, true); err != nil {
					fmt.Fprintf(out, "(could not remember the approval: %v)\n", err)
				}
			}
			return mcp.Decision{Approval: mcp.Approved, Reason: "approved now"}
		case "n", "no":
			if st.store != nil {
				if err := st.store.Set(st.ws, s, false); err != nil {
					fmt.Fprintf(out, "(could not remember the refusal: %v)\n", err)
				}
			}
			return mcp.Decision{Approval: mcp.Rejected, Reason: "rejected now"}
		case "s", "skip":
			return mcp.Decision{Approval: mcp.Rejected, Reason: "skipped this time"}
		}
	}
}

// describeServer prints a server's configuration as written.
func describeServer(out io.Writer, s mcp.Server) {
	r := s.Raw
	switch s.Transport() {
	case mcp.TypeStdio:
		fmt.Fprintf(out, "  command: %s\n", strings.Join(append([]string{r.Command}, r.Args...), " "))
		keys := make([]string, 0, len(r.Env))
		for k := range r.Env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(out, "  env: %s=%s\n", k, r.Env[k])
		}
	default:
		fmt.Fprintf(out, "  %s server: %s\n", s.Transport(), r.URL)
		keys := make([]string, 0, len(r.Headers))
		for k := range r.Headers {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(out, "  header: %s: %s\n", k, r.Headers[k])
		}
	}
}

// elicit is the terminal form for an MCP server's request for input
// (seed 000's ElicitationHandler in the CLI): it shares the approval
// prompt's lock and input, renders the requested fields one by one and
// re-asks a field until its value fits.
func (ap *approver) elicit(ctx context.Context, req mcp.ElicitRequest) (mcp.ElicitResponse, error) {
	ap.mu.Lock()
	defer ap.mu.Unlock()
	decline := mcp.ElicitResponse{Action: mcp.ActionDecline}
	if ap.lines == nil {
		return decline, nil
	}
	read := func(prompt string) (string, error) {
		fmt.Fprint(ap.out, prompt)
		return ap.lines.ReadLine(ctx)
	}
	fmt.Fprintf(ap.out, "\nMCP server %q asks: %s\n", req.Server, req.Message)
	if req.Mode == "url" {
		fmt.Fprintf(ap.out, "  Open: %s\n", req.URL)
	}
	fields, err := mcp.Fields(req.Schema)
	if err != nil {
		fmt.Fprintf(ap.out, "(the request cannot be shown: %v; declined)\n", err)
		return decline, nil
	}
	for {
		answer, err := read("[a]nswer / [d]ecline / [c]ancel: ")
		if err != nil {
			return mcp.ElicitResponse{Action: mcp.ActionCancel}, nil
		}
		switch strings.ToLower(strings.TrimSpace(answer)) {
		case "a", "answer", "accept", "y", "yes":
		case "d", "decline", "n", "no":
			return decline, nil
		case "c", "cancel":
			return mcp.ElicitResponse{Action: mcp.ActionCancel}, nil
		default:
			continue
		}
		break
	}
	content := map[string]any{}
	for _, f := range fields {
		var hints []string
		hints = append(hints, f.Type)
		if f.Format != "" {
			hints = append(hints, f.Format)
		}
		if f.Required {
			hints = append(hints, "required")
		}
		if f.Default != nil {
			hints = append(hints, fmt.Sprintf("default %v", f.Default))
		}
		if len(f.Enum) > 0 {
			opts := make([]string, len(f.Enum))
			for i, e := range f.Enum {
				opts[i] = fmt.Sprintf("%d=%s", i+1, e)
				if i < len(f.EnumNames) && f.EnumNames[i] != "" && f.EnumNames[i] != e {
					opts[i] += " (" + f.EnumNames[i] + ")"
				}
			}
			hints = append(hints, "one of "+strings.Join(opts, ", "))
		}
		if f.Description != "" {
			fmt.Fprintf(ap.out, "  %s\n", f.Description)
		}
		for {
			in, err := read(fmt.Sprintf("  %s (%s): ", f.Label(), strings.Join(hints, ", ")))
			if err != nil {
				return mcp.ElicitResponse{Action: mcp.ActionCancel}, nil
			}
			if strings.TrimSpace(in) == "" {
				if f.Default != nil {
					content[f.Name] = f.Default
					break
				}
				if !f.Required {
					break
				}
				fmt.Fprintln(ap.out, "  (required)")
				continue
			}
			v, err := f.Parse(in)
			if err != nil {
				fmt.Fprintf(ap.out, "  (%v)\n", err)
				continue
			}
			content[f.Name] = v
			break
		}
	}
	return mcp.ElicitResponse{Action: mcp.ActionAccept, Content: content}, nil
}

// mcpSlash expands a /mcp__server__prompt line of weft chat into the
// prompt's text; ok is false when there is nothing to send.
func mcpSlash(ctx context.Context, m *mcp.Manager, line string, errw io.Writer) (string, bool) {
	if m == nil {
		fmt.Fprintf(errw, "unknown command %s: no MCP server is connected\n", line)
		return "", false
	}
	text, err := m.RunPrompt(ctx, line)
	if err != nil {
		if errors.Is(err, mcp.ErrNoPrompt) {
			fmt.Fprintf(errw, "unknown command %s (/help lists the MCP prompts)\n", strings.Fields(line)[0])
		} else {
			fmt.Fprintln(errw, err)
		}
		return "", false
	}
	return text, true
}

// mcpHelp lists the MCP prompts usable as slash commands.
func mcpHelp(m *mcp.Manager, out io.Writer) {
	if m == nil {
		return
	}
	for _, p := range m.Prompts() {
		desc := p.Description
		if desc != "" {
			desc = "  " + clip(desc, 70)
		}
		fmt.Fprintf(out, "%s%s\n", p.Usage(), desc)
	}
}

func newMCPCmd(env environ) *cobra.Command {
	var ws, settings string
	var f mcpFlags
	setup := func() (*mcpSetup, error) {
		dir := ws
		if dir == "" {
			dir = env.getenv("WEFT_WORKSPACE")
		}
		if dir == "" {
			var err error
			if dir, err = os.Getwd(); err != nil {
				return nil, err
			}
		}
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, err
		}
		sources, err := policy.LoadScopes(env.getenv("HOME"), abs, settings)
		if err != nil {
			return nil, err
		}
		return loadMCP(env, abs, sources, f)
	}
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Manage MCP servers: list them, approve project servers, log in to remote ones",
		Long: `MCP servers bring tools to weft's agents. They are configured in Claude Code's
shape: ~/.weft/mcp.json (yours), the workspace's .mcp.json (the project's: each
server is approved once), "mcpServers" in settings files, and --mcp-config
files on run, chat and serve. Their tools appear as mcp__<server>__<tool>.
See docs/mcp.md.`,
	}
	cmd.PersistentFlags().StringVarP(&ws, "workspace", "w", "", "workspace whose .mcp.json and approvals to use (default: current directory, or $WEFT_WORKSPACE)")
	cmd.PersistentFlags().StringVar(&settings, "settings", "", "settings file on top of the user and project ones (as for run)")
	f.register(cmd.PersistentFlags())

	var asJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List the configured MCP servers: source, approval, state and tool counts (connects to each approved one)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := setup()
			if err != nil {
				return err
			}
			type row struct {
				mcp.ServerStatus
				Approval mcp.Approval `json:"approval"`
				Reason   string       `json:"approval_reason"`
			}
			var rows []row
			var run []mcp.Server
			for _, s := range st.servers {
				d := st.decide(s)
				if d.Approval == mcp.Approved {
					run = append(run, s)
				}
				r := row{ServerStatus: mcp.ServerStatus{Name: s.Name, Scope: s.Scope, Source: s.Path, Transport: s.Transport(), State: "not started"}, Approval: d.Approval, Reason: d.Reason}
				if s.Err != nil {
					r.State, r.Error = mcp.StateFailed, s.Err.Error()
				}
				rows = append(rows, r)
			}
			if len(run) > 0 {
				start, _, err := mcpTimeouts(env)
				if err != nil {
					return err
				}
				reg := &tool.Registry{}
				m := mcp.NewManager(reg, mcp.Options{Workspace: st.ws, Tokens: st.tokens, NoReconnect: true, StartTimeout: start, Version: version()})
				defer m.Close()
				if err := m.Start(cmd.Context(), run); err != nil {
					return err
				}
				byName := map[string]mcp.ServerStatus{}
				for _, s := range m.Status() {
					byName[s.Name] = s
				}
				for i := range rows {
					if s, ok := byName[rows[i].Name]; ok {
						rows[i].ServerStatus = s
					}
				}
			}
			if asJSON {
				enc := json.NewEncoder(env.stdout)
				enc.SetIndent("", "  ")
				if rows == nil {
					rows = []row{}
				}
				return enc.Encode(map[string]any{"servers": rows, "workspace": st.ws})
			}
			if len(rows) == 0 {
				fmt.Fprintf(env.stdout, "No MCP servers configured for %s (see docs/mcp.md).\n", st.ws)
				return nil
			}
			tw := tabwriter.NewWriter(env.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSCOPE\tTRANSPORT\tAPPROVAL\tSTATE\tTOOLS\tPROMPTS\tRESOURCES\tSOURCE")
			for _, r := range rows {
				res := "-"
				if r.Resources {
					res = "yes"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\n", r.Name, r.Scope, r.Transport, r.Approval, r.State, r.Tools, r.Prompts, res, r.Source)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			for _, r := range rows {
				switch {
				case r.Approval == mcp.Pending:
					fmt.Fprintf(env.stdout, "%s: %s; approve with `weft mcp approve %s`\n", r.Name, r.Reason, r.Name)
					if r.Error != "" {
						fmt.Fprintf(env.stdout, "%s: %s\n", r.Name, r.Error)
					}
				case r.Approval == mcp.Rejected:
					fmt.Fprintf(env.stdout, "%s: not started (%s)\n", r.Name, r.Reason)
				case r.Error != "":
					fmt.Fprintf(env.stdout, "%s: %s\n", r.Name, strings.ReplaceAll(strings.TrimSpace(r.Error), "\n", "\n    "))
				}
				for _, p := range r.Problems {
					fmt.Fprintf(env.stdout, "%s: %s\n", r.Name, p)
				}
			}
			return nil
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON")

	decide := func(use, short string, approve bool) *cobra.Command {
		return &cobra.Command{
			Use:   use + " NAME",
			Short: short,
			Args:  cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				st, err := setup()
				if err != nil {
					return err
				}
				s, err := st.find(args[0])
				if err != nil {
					return err
				}
				if s.Scope != mcp.ScopeProject {
					return fmt.Errorf("MCP server %q comes from %s (%s scope): only project servers need approval", s.Name, s.Path, s.Scope)
				}
				if st.store == nil {
					return errors.New("no home directory to remember approvals in ($HOME is unset)")
				}
				if err := st.store.Set(st.ws, s, approve); err != nil {
					return err
				}
				word := "approved"
				if !approve {
					word = "rejected"
				}
				fmt.Fprintf(env.stdout, "MCP server %q %s for %s (as configured now in %s; a changed configuration asks again)\n", s.Name, word, st.ws, s.Path)
				if approve {
					describeServer(env.stdout, s)
				}
				return nil
			},
		}
	}

	var noBrowser bool
	login := &cobra.Command{
		Use:   "login NAME",
		Short: "Authorize weft with a remote (http) MCP server through OAuth; the token is kept in ~/.weft/mcp-tokens.json",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := setup()
			if err != nil {
				return err
			}
			s, err := st.find(args[0])
			if err != nil {
				return err
			}
			if st.tokens == nil {
				return errors.New("no home directory to keep the token in ($HOME is unset)")
			}
			opts := mcp.LoginOptions{Out: env.stderr, Version: version()}
			if open, err := exec.LookPath("xdg-open"); err == nil && !noBrowser {
				opts.OpenBrowser = func(u string) error {
					c := exec.Command(open, u)
					if err := c.Start(); err != nil {
						return err
					}
					go c.Wait()
					return nil
				}
			}
			if err := mcp.Login(cmd.Context(), s, st.tokens, opts); err != nil {
				return err
			}
			fmt.Fprintf(env.stdout, "Authorized with MCP server %q; the token is stored in %s\n", s.Name, mcp.TokensPath(st.home))
			return nil
		},
	}
	login.Flags().BoolVar(&noBrowser, "no-browser", false, "only print the authorization URL")

	logout := &cobra.Command{
		Use:   "logout NAME",
		Short: "Forget the OAuth token of a remote MCP server",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := setup()
			if err != nil {
				return err
			}
			s, err := st.find(args[0])
			if err != nil {
				return err
			}
			found, err := st.tokens.Delete(s.Config.URL)
			if err != nil {
				return err
			}
			if !found {
				fmt.Fprintf(env.stdout, "No token stored for MCP server %q\n", s.Name)
				return nil
			}
			fmt.Fprintf(env.stdout, "Forgot the token of MCP server %q\n", s.Name)
			return nil
		},
	}
	cmd.AddCommand(list,
		decide("approve", "Approve a project MCP server (from the workspace's .mcp.json) for this workspace", true),
		decide("reject", "Reject a project MCP server for this workspace: it is not started and not asked about again", false),
		login, logout, newMCPServeCmd(env))
	return cmd
}
