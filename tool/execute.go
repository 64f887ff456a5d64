package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/policy/secret"
)

// cancelGrace is how long Execute waits, once a call's context is done, for
// the tool to notice and return. A tool that ignores ctx is abandoned after
// it so that one bad tool cannot hang the engine.
var cancelGrace = 2 * time.Second

// noOutput stands in for an empty successful result: Anthropic accepts an
// empty tool_result, but some OpenAI-compatible servers reject a tool
// message with empty content, and an explicit marker also tells the model
// the call did run.
const noOutput = "(no output)"

// errTimedOut is the cause of a call context whose own deadline passed, to
// tell a timeout from a cancellation by the caller.
var errTimedOut = errors.New("tool call timed out")

// Execute runs one tool call and always returns exactly one Result; it never
// panics. In order:
//
//  1. An unknown tool name yields an error result listing the available
//     tools.
//  2. The input is validated against the tool's schema (empty or null input
//     counts as {}); bad input yields an error result (see InputError) and
//     the tool does not run. A call whose ctx is already done does not run
//     either.
//  3. Run gets a copy of call with defaults filled in: a fresh Session when
//     nil, and Progress and Notify that are never nil, are safe for
//     concurrent use and drop calls made after Execute returned. Execute
//     waits for a Progress or Notify call in flight before it returns, so
//     the callbacks given in call never run after it.
//  4. Run gets a ctx with the tool's deadline (Meta.Timeout; 0 means
//     DefaultTimeout, negative none). A call that returns after its ctx is
//     done, or has not returned cancelGrace (2 s) after it, yields "X timed
//     out after D" or "X was cancelled" (Data "timed_out" or "cancelled"),
//     followed by whatever the tool returned in time (e.g. partial output).
//     Run executes on its own goroutine; the goroutine of a tool that
//     ignores ctx is abandoned and may outlive the call.
//  5. A panic in Run yields "X panicked: <value>"; the stack goes to the
//     registry's logger, not to the model.
//  6. An error from Run yields an error result of err.Error() followed by
//     any content Run also returned.
//  7. Every registered secret of call.Secrets is replaced by its marker,
//     in the content and the structured data (secret.Redacted).
//  8. Text beyond Meta.OutputCap characters (runes; 0 means
//     DefaultOutputCap, negative none), counted over all text blocks, is cut
//     from the end and replaced by a marker line; Result.Truncated says how
//     many characters went. Image blocks are kept and not counted.
//  9. Empty text blocks and blocks other than text and image are dropped
//     (providers reject them in tool results); a result left with no
//     content gets the single text "(no output)", or "X failed" for an
//     error.
//
// Validate checks input against the named tool's schema, as Execute
// would, so a policy can refuse a malformed call before asking anyone
// about it. It returns the normalised input.
func (r *Registry) Validate(name string, input json.RawMessage) (json.RawMessage, error) {
	e := r.lookup(name)
	if e == nil {
		return nil, fmt.Errorf("unknown tool %q", name)
	}
	return e.schema.validate(e.spec.Name, input)
}

func (r *Registry) Execute(ctx context.Context, call *Call) (res Result) {
	defer func() {
		// Nothing below should panic; this keeps the promise if it does.
		if p := recover(); p != nil {
			r.log().Error("tool framework panicked", "panic", p, "stack", string(debug.Stack()))
			res = Errorf("tool call failed: internal error: %v", p)
		}
	}()
	if call == nil {
		return Errorf("tool call failed: no call given")
	}
	e := r.lookup(call.Name)
	if e == nil {
		return r.unknown(call.Name)
	}
	input, err := e.schema.validate(e.spec.Name, call.Input)
	if err != nil {
		// A schema error may quote the input.
		return finish(e.spec, secret.Redacted(call.Secrets, Result{Content: []llm.Block{llm.Text(err.Error())}, IsError: true}))
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if ctx.Err() != nil {
		return finish(e.spec, Result{
			Content: []llm.Block{llm.Text(e.spec.Name + " was cancelled")},
			IsError: true,
			Data:    map[string]any{"cancelled": true},
		})
	}

	c := *call
	c.Name = e.spec.Name
	c.Input = input
	if c.Session == nil {
		c.Session = NewSession()
	}
	g := &gate{}
	defer g.close()
	c.Progress = gateProgress(g, call.Progress)
	c.Notify = gateNotify(g, call.Notify)

	timeout := e.spec.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	var runCtx context.Context
	var cancel context.CancelFunc
	if timeout > 0 {
		runCtx, cancel = context.WithTimeoutCause(ctx, timeout, errTimedOut)
	} else {
		runCtx, cancel = context.WithCancel(ctx)
	}
	defer cancel()

	o, returned := r.run(runCtx, e, &c)
	g.close()
	// Redacted before finish caps it: a cut inside a value would leave a
	// piece of it that no later redaction recognises.
	return finish(e.spec, secret.Redacted(c.Secrets, r.outcomeResult(runCtx, e.spec, timeout, o, returned)))
}

func (r *Registry) unknown(name string) Result {
	names := r.names()
	sort.Strings(names)
	if len(names) == 0 {
		return Errorf("unknown tool %q; no tools are available", name)
	}
	return Errorf("unknown tool %q; available: %s", name, strings.Join(names, ", "))
}

// outcome is how Run ended.
type outcome struct {
	res      Result
	err      error
	ctxErr   error // runCtx.Err() the moment Run returned
	panicked bool
	panicVal any
	exited   bool // runtime.Goexit: Run neither returned nor panicked
}

// run starts Run on its own goroutine and waits for it, or for ctx plus the
// grace period. returned is false when the goroutine was abandoned.
func (r *Registry) run(ctx context.Context, e *entry, c *Call) (o outcome, returned bool) {
	done := make(chan outcome, 1) // buffered: an abandoned goroutine must not block on send
	go func() {
		ran := false
		defer func() {
			if p := recover(); p != nil {
				r.log().Error("tool panicked", "tool", e.spec.Name, "call_id", c.ID,
					"panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				done <- outcome{panicked: true, panicVal: p}
				return
			}
			if !ran {
				done <- outcome{exited: true}
			}
		}()
		res, err := e.tool.Run(ctx, c)
		ran = true
		done <- outcome{res: res, err: err, ctxErr: ctx.Err()}
	}()

	select {
	case o = <-done:
		return o, true
	case <-ctx.Done():
	}
	t := time.NewTimer(cancelGrace)
	defer t.Stop()
	select {
	case o = <-done:
		return o, true
	case <-t.C:
		r.log().Warn("tool ignored cancellation; abandoning its goroutine",
			"tool", e.spec.Name, "call_id", c.ID, "grace", cancelGrace)
		return outcome{}, false
	}
}

func (r *Registry) outcomeResult(ctx context.Context, spec Spec, timeout time.Duration, o outcome, returned bool) Result {
	name := spec.Name
	switch {
	case returned && o.panicked:
		return Result{
			Content: []llm.Block{llm.Text(fmt.Sprintf("%s panicked: %v", name, o.panicVal))},
			IsError: true,
			Data:    map[string]any{"panicked": true},
		}
	case returned && o.exited:
		return Errorf("%s stopped without returning a result", name)
	case !returned || o.ctxErr != nil:
		var head string
		data := maps.Clone(o.res.Data)
		if data == nil {
			data = map[string]any{}
		}
		if context.Cause(ctx) == errTimedOut {
			head = fmt.Sprintf("%s timed out after %s", name, timeout)
			data["timed_out"] = true
		} else {
			head = name + " was cancelled"
			data["cancelled"] = true
		}
		content := []llm.Block{llm.Text(head)}
		// A bare ctx.Err() repeats the head; anything else (a wrapped
		// cause, a process's exit status) is worth showing.
		if o.err != nil && o.err.Error() != "" && o.err != context.Canceled && o.err != context.DeadlineExceeded {
			content = append(content, llm.Text("\n"+o.err.Error()))
		}
		content = append(content, separated(o.res.Content)...)
		return Result{Content: content, IsError: true, Truncated: o.res.Truncated, Data: data}
	case o.err != nil:
		msg := o.err.Error()
		if msg == "" {
			msg = name + " failed"
		}
		res := o.res
		res.Content = append([]llm.Block{llm.Text(msg)}, separated(o.res.Content)...)
		res.IsError = true
		return res
	}
	return o.res
}

// separated returns content with a newline before its first text, so that
// it reads as following a line put in front of it.
func separated(content []llm.Block) []llm.Block {
	out := make([]llm.Block, 0, len(content))
	sep := false
	for _, b := range content {
		if !sep && b.Type == llm.BlockText && b.Text != "" {
			b.Text = "\n" + b.Text
			sep = true
		}
		out = append(out, b)
	}
	return out
}

// finish applies what every result gets: only non-empty text and image
// blocks, never empty content, and the output cap.
func finish(spec Spec, res Result) Result {
	content := make([]llm.Block, 0, len(res.Content))
	for _, b := range res.Content {
		switch {
		case b.Type == llm.BlockText && b.Text != "":
			content = append(content, b)
		case b.Type == llm.BlockImage:
			content = append(content, b)
		}
	}
	if len(content) == 0 {
		if res.IsError {
			content = append(content, llm.Text(spec.Name+" failed"))
		} else {
			content = append(content, llm.Text(noOutput))
		}
	}
	limit := spec.OutputCap
	if limit == 0 {
		limit = DefaultOutputCap
	}
	if limit > 0 {
		var removed int
		content, removed = capText(content, limit)
		res.Truncated += removed
	}
	res.Content = content
	return res
}

// capText keeps the first limit runes of the text blocks, in order, and
// appends a marker to the last text kept. Images stay where they are.
func capText(content []llm.Block, limit int) ([]llm.Block, int) {
	total := 0
	for _, b := range content {
		if b.Type == llm.BlockText {
			total += utf8.RuneCountInString(b.Text)
		}
	}
	if total <= limit {
		return content, 0
	}
	removed := total - limit
	out := make([]llm.Block, 0, len(content))
	budget := limit
	last := -1
	for _, b := range content {
		if b.Type != llm.BlockText {
			out = append(out, b)
			continue
		}
		if budget == 0 {
			continue
		}
		if n := utf8.RuneCountInString(b.Text); n > budget {
			b.Text = b.Text[:runeOffset(b.Text, budget)]
			budget = 0
		} else {
			budget -= n
		}
		out = append(out, b)
		last = len(out) - 1
	}
	out[last].Text += fmt.Sprintf("\n\n[output truncated: %s of %s characters removed]",
		thousands(removed), thousands(total))
	return out, removed
}

// runeOffset returns the byte offset of the n-th rune of s.
func runeOffset(s string, n int) int {
	i := 0
	for off := range s {
		if i == n {
			return off
		}
		i++
	}
	return len(s)
}

func thousands(n int) string {
	s := fmt.Sprint(n)
	var sb strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			sb.WriteByte(',')
		}
		sb.WriteRune(c)
	}
	return sb.String()
}

// gate drops Progress and Notify calls once Execute has returned, and
// serialises them so that tools may call them from several goroutines
// (e.g. one per output stream) even when the caller's funcs are not
// safe for concurrent use.
type gate struct {
	mu     sync.Mutex
	closed bool
}

func (g *gate) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}

func gateProgress(g *gate, f func(string)) func(string) {
	if f == nil {
		return func(string) {}
	}
	return func(text string) {
		g.mu.Lock()
		defer g.mu.Unlock()
		if !g.closed {
			f(text)
		}
	}
}

func gateNotify(g *gate, f func(string, any)) func(string, any) {
	if f == nil {
		return func(string, any) {}
	}
	return func(kind string, data any) {
		g.mu.Lock()
		defer g.mu.Unlock()
		if !g.closed {
			f(kind, data)
		}
	}
}
