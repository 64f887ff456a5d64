package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/compact"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/policy/hook"
	"github.com/weft-run/weft/policy/secret"
	"github.com/weft-run/weft/task"
	"github.com/weft-run/weft/tool"
	"github.com/weft-run/weft/tool/builtin"
	"github.com/weft-run/weft/tool/mcp"
	"github.com/weft-run/weft/turnend"
)

// agentFlags are shared by run and chat.
type agentFlags struct {
	modelFlags
	system         string
	workspace      string
	addDirs        []string
	maxTurns       int
	maxTokens      int
	maxSubagents   int
	thinking       string
	permissionMode string
	yes            bool
	policyFlags
	promptFlags
	budgetFlags
	mcp mcpFlags
	// context is the context window's management (contextflags.go).
	context contextFlags
	// mcpServers is set by build when MCP servers are connected (chat's
	// /mcp__server__prompt commands use it).
	mcpServers *mcp.Manager
	// ckpt is set by build: the workspace checkpoints (chat's /undo).
	ckpt *cliCheckpoints
	// turnEnd configures the turn-end pipeline; build sets pipe
	// (turnend.go).
	turnEnd turnEndFlags
	pipe    *cliTurnEnd
}

func (a *agentFlags) register(f *pflag.FlagSet) {
	a.modelFlags.register(f)
	f.StringVar(&a.system, "system", "", "system prompt in place of weft's own (the project's AGENTS.md/CLAUDE.md, the skills and --append-system still follow it)")
	f.StringVarP(&a.workspace, "workspace", "w", "", "directory the tools work in and are confined to (default: current directory, or $WEFT_WORKSPACE)")
	f.StringSliceVar(&a.addDirs, "add-dir", nil, "further directories the file tools may touch")
	f.IntVar(&a.maxTurns, "max-turns", 0, "maximum model calls per run (default 200, or $WEFT_MAX_TURNS)")
	f.IntVar(&a.maxTokens, "max-tokens", 0, "maximum output tokens per model call (default: the model's maximum)")
	f.IntVar(&a.maxSubagents, "max-subagents", 0, "sub-agents (the Agent tool) running at once; further ones wait (default 4)")
	f.StringVar(&a.thinking, "thinking", "", "thinking level: none|low|medium|high|xhigh (default none, or $WEFT_THINKING)")
	f.StringVar(&a.permissionMode, "permission-mode", "", "default (ask before anything that is not read-only) | plan (read-only tools only) | auto (file edits in the workspace run, shell asks) | bypass (ask nothing) (default: $WEFT_PERMISSION_MODE or default)")
	f.BoolVarP(&a.yes, "yes", "y", false, "approve every tool call without asking (same as --permission-mode bypass)")
	a.policyFlags.register(f, "audit log (JSON lines) of every tool-call decision; \"off\" for none (default ~/.weft/audit.jsonl)")
	a.promptFlags.register(f)
	a.turnEnd.register(f)
	a.budgetFlags.register(f)
	a.mcp.register(f)
	a.context.register(f)
}

// build returns the agent and the tool registry for the flags. lines is
// where approval answers are read from (nil: no terminal to ask).
func (a *agentFlags) build(env environ, lines *lineReader, out io.Writer) (*agent.Agent, func() error, error) {
	mode := a.permissionMode
	if mode == "" {
		mode = env.getenv("WEFT_PERMISSION_MODE")
	}
	if a.yes {
		mode = "bypass"
	}
	var err error
	thinking := a.thinking
	if thinking == "" {
		thinking = env.getenv("WEFT_THINKING")
	}
	level, ok := llm.ParseThinkingLevel(thinking)
	if !ok {
		return nil, nil, fmt.Errorf("--thinking %q: want none, low, medium, high or xhigh", thinking)
	}
	maxTurns := a.maxTurns
	if maxTurns == 0 {
		if v := env.getenv("WEFT_MAX_TURNS"); v != "" {
			if _, err := fmt.Sscan(v, &maxTurns); err != nil || maxTurns < 0 {
				return nil, nil, fmt.Errorf("WEFT_MAX_TURNS %q: want a positive number", v)
			}
		}
	}
	if maxTurns < 0 {
		return nil, nil, fmt.Errorf("--max-turns %d: want a positive number", maxTurns)
	}
	if a.maxSubagents < 0 {
		return nil, nil, fmt.Errorf("--max-subagents %d: want a positive number", a.maxSubagents)
	}
	ws := a.workspace
	if ws == "" {
		ws = env.getenv("WEFT_WORKSPACE")
	}
	if ws == "" {
		if ws, err = os.Getwd(); err != nil {
			return nil, nil, err
		}
	}
	if st, err := os.Stat(ws); err != nil || !st.IsDir() {
		return nil, nil, fmt.Errorf("workspace %q is not a directory", ws)
	}
	set, err := a.policyFlags.secretSet(env, map[string]string{"WEFT_API_KEY": a.apiKey})
	if err != nil {
		return nil, nil, err
	}
	// No diagnostic line carries a secret's value either, from the hooks'
	// first on.
	log := slog.New(secret.NewHandler(slog.Default().Handler(), set))
	bp, err := a.policyFlags.build(env, ws, a.addDirs, mode, userAuditPath(env), nil, set, log)
	if err != nil {
		return nil, nil, err
	}
	p, info, closeModel, err := a.modelFlags.resolve(env)
	if err != nil {
		bp.close()
		return nil, nil, err
	}
	a.ckpt = bp.ckpt
	tasks, closeTasks := newCLITasks(bp.pol, log)
	closeAll := func() error {
		closeTasks()                                 // before the hooks: killed tasks fire task_completed
		_ = bp.pol.Hooks.Close(context.Background()) // each hook has its own timeout
		return errors.Join(closeModel(), bp.close())
	}
	a.promptFlags.fromEnv(env.getenv)
	memTools, err := a.promptFlags.openMemory(env, ws, bp.merged.Guard, set, log)
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	pb, err := a.promptFlags.builder(env, ws, log)
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	describer, err := a.promptFlags.describer(a.modelFlags.reg, log)
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	toolCfg := builtin.Config{Workspace: ws, ExtraDirs: bp.pol.ExtraDirs, Env: bp.toolEnv(), Guard: bp.merged.Guard}
	subs := subagentManager(env, ws, tasks, a.modelFlags.reg, log)
	closeBeforeSubs := closeAll
	closeAll = func() error { subs.Close(); return closeBeforeSubs() } // their runs are tasks: stop them first
	// Recall reads back what compaction cut from the conversation.
	reg, err := cliTools(toolCfg, tasks, append(promptTools(pb, toolCfg, info, describer), append(append(subs.Tools(), memTools...), compact.Recall())...)...)
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	ap := newApprover(lines, out)
	mcpSetup, err := loadMCP(env, ws, bp.sources, a.mcp)
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	servers, err := mcpStart(env, mcpSetup, reg, bp.pol.ExtraDirs, bp.toolEnv(), set, lines, ap, log)
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	if servers != nil {
		closeRest := closeAll
		closeAll = func() error { _ = servers.Close(); return closeRest() }
		a.mcpServers = servers
	}
	// The system prompt is weft's bundle for the model (or --system),
	// the environment, the project's instructions and the skills, built
	// afresh for every model call (see package prompt).
	obs, closeObs, err := cliObserver(env)
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	closeRest := closeAll
	closeAll = func() error { return errors.Join(closeRest(), closeObs()) }
	acfg := agent.Config{
		Provider: p, Model: info.ID, ModelInfo: &info, System: a.system, Prompt: pb, Vision: describer, Tools: reg,
		MaxTurns: maxTurns, MaxTokens: a.maxTokens, Thinking: level, MaxSubagents: a.maxSubagents,
		Policy: bp.pol, Approve: ap.approve, Logger: log, Observer: obs,
		SubagentEvents: backgroundNotices(env.stderr),
	}
	if err := a.context.apply(env, &acfg, a.modelFlags.reg); err != nil {
		closeAll()
		return nil, nil, err
	}
	if err := a.budgetFlags.apply(env, &acfg, lines, out, a.yes); err != nil {
		closeAll()
		return nil, nil, err
	}
	if err := a.turnEnd.fromEnv(env.getenv); err != nil {
		closeAll()
		return nil, nil, err
	}
	a.pipe = &cliTurnEnd{p: turnend.New(a.turnEnd.config(a.promptFlags.mem, acfg.CompactProvider, acfg.CompactModel, bp.pol.Audit, log)), session: newCLISession()}
	if a.ckpt != nil {
		a.pipe.session = a.ckpt.session
	}
	closePipe := closeAll
	closeAll = func() error {
		// Before the audit log and the model close: an extraction still
		// running may use both.
		ctx, cancel := context.WithTimeout(context.Background(), cliTurnEndDrain)
		defer cancel()
		a.pipe.p.Drain(ctx)
		return closePipe()
	}
	ledger := newUsageLedger(usageLedgerPath(env), log)
	acfg.OnUsage = ledger.onUsage(newID("cli_"))
	closeObsEtc := closeAll
	closeAll = func() error { return errors.Join(closeObsEtc(), ledger.close()) }
	ag, err := agent.New(acfg)
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	return ag, closeAll, nil
}

// cliTaskCloseTimeout bounds how long weft run and chat wait, when they
// exit, for background commands to stop before they SIGKILL what is left.
const cliTaskCloseTimeout = 3 * time.Second

// newCLITasks returns the task registry of one weft run or chat: the
// commands Bash runs in the background (run_in_background) belong to it,
// and the returned close kills whatever of them still runs, as the command
// exits. The task_created and task_completed hooks fire as under weft
// serve, in the background (the registry calls them on its own
// goroutines, which a hook must not hold up); the hook manager's Close
// waits for them.
func newCLITasks(pol *policy.Policy, log *slog.Logger) (*task.Registry, func()) {
	fire := func(ev hook.Event) func(task.Task) {
		return func(t task.Task) {
			if pol.Hooks == nil || !pol.Hooks.Has(ev) {
				return
			}
			in := pol.HookInput(ev)
			in.TaskID, in.TaskDescription = t.ID, t.Description
			in.Extra = map[string]any{"status": t.Status}
			pol.Hooks.Go(context.Background(), in)
		}
	}
	tasks := task.NewRegistry(nil, task.Options{Logger: log, Secrets: pol.Secrets,
		OnCreated: fire(hook.TaskCreated), OnCompleted: fire(hook.TaskCompleted)})
	return tasks, func() {
		ctx, cancel := context.WithTimeout(context.Background(), cliTaskCloseTimeout)
		defer cancel()
		if err := tasks.Close(ctx); err != nil {
			log.Warn("background commands did not stop in time; killed", "error", err)
		}
	}
}

// cliTools is the tool registry of weft run and chat (and what weft tools
// lists): the builtin tools, with Bash's run_in_background starting
// commands as tasks of tasks, the task tools that read and stop them, and
// extra (Skill, describe_image).
func cliTools(cfg builtin.Config, tasks *task.Registry, extra ...tool.Tool) (*tool.Registry, error) {
	cfg.Background = tasks
	return tool.NewRegistry(append(append(builtin.Tools(cfg), tasks.Tools()...), extra...)...)
}

// userAuditPath is the default JSONL audit log of every command:
// ~/.weft/audit.jsonl, outside any working tree; "" (none) without a home.
func userAuditPath(env environ) string {
	if home := env.getenv("HOME"); home != "" {
		return filepath.Join(home, ".weft", "audit.jsonl")
	}
	return ""
}

// lineReader reads answers and chat input line by line from one shared
// reader, so that approval prompts and the REPL do not steal each other's
// input. A read that its caller gave up on (a run stopped while its
// approval prompt waited) stays pending: the next ReadLine gets its line.
type lineReader struct {
	r        *bufio.Reader
	terminal bool

	mu      sync.Mutex
	pending chan lineResult // the read in progress; nil when none is
}

type lineResult struct {
	line string
	err  error
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{r: bufio.NewReader(r), terminal: isTerminal(r)}
}

// ReadLine returns the next line without its newline; io.EOF at the end;
// ctx's error when ctx ends first.
func (l *lineReader) ReadLine(ctx context.Context) (string, error) {
	return l.readLineOr(ctx, nil)
}

// errInterrupted is readLineOr's error when a signal came first.
var errInterrupted = errors.New("interrupted")

// readLineOr is ReadLine that also gives up with errInterrupted when a
// signal arrives on intr (nil: never).
func (l *lineReader) readLineOr(ctx context.Context, intr <-chan os.Signal) (string, error) {
	l.mu.Lock()
	ch := l.pending
	if ch == nil {
		ch = make(chan lineResult, 1)
		l.pending = ch
		go func() {
			s, err := l.r.ReadString('\n')
			if err != nil && (err != io.EOF || s == "") {
				ch <- lineResult{err: err}
				return
			}
			ch <- lineResult{line: strings.TrimRight(s, "\r\n")}
		}()
	}
	l.mu.Unlock()
	select {
	case r := <-ch:
		l.mu.Lock()
		l.pending = nil
		l.mu.Unlock()
		return r.line, r.err
	case <-intr:
		return "", errInterrupted
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// approver is the person at the terminal: the policy asks it about the
// calls its rules and mode leave open, with a y/n/always prompt.
type approver struct {
	lines  *lineReader // nil: nobody to ask
	out    io.Writer
	mu     sync.Mutex
	always map[string]bool
}

func newApprover(lines *lineReader, out io.Writer) *approver {
	return &approver{lines: lines, out: out, always: map[string]bool{}}
}

func (ap *approver) approve(ctx context.Context, req agent.ApprovalRequest) agent.Decision {
	ap.mu.Lock()
	defer ap.mu.Unlock()
	if ap.always[req.ToolName] && !req.Dangerous {
		return agent.Allow()
	}
	if ap.lines == nil {
		return agent.Deny("there is no terminal to ask for approval; rerun with --yes or --permission-mode to allow " + req.ToolName)
	}
	for {
		if req.Reason != "" {
			fmt.Fprintf(ap.out, "\n(%s)", req.Reason)
		}
		if o := req.Origin; o != nil {
			fmt.Fprintf(ap.out, "\n(asked by %s sub-agent %s)", nonEmpty(o.Type, "general"), o.SubagentID)
		}
		fmt.Fprintf(ap.out, "\nAllow %s? [y]es / [n]o / [a]lways for %s: ", summarizeCall(req.ToolName, req.Input), req.ToolName)
		answer, err := ap.lines.ReadLine(ctx)
		if err != nil || ctx.Err() != nil {
			return agent.Deny("no answer to the approval prompt")
		}
		switch strings.ToLower(strings.TrimSpace(answer)) {
		case "y", "yes":
			return agent.Allow()
		case "a", "always":
			if !req.Dangerous {
				ap.always[req.ToolName] = true
			}
			return agent.Allow()
		case "n", "no":
			return agent.Deny("the user declined")
		}
	}
}
