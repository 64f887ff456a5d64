package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/weft-run/weft/llm"
)

func TestExecuteUnknownTool(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		tools []Tool
		call  string
		want  string
	}{
		{"lists sorted names", []Tool{newTool("Write", Meta{}, nil), newTool("Bash", Meta{}, nil), newTool("Read", Meta{}, nil)}, "Edit",
			`unknown tool "Edit"; available: Bash, Read, Write`},
		{"empty registry", nil, "Edit", `unknown tool "Edit"; no tools are available`},
		{"empty name", []Tool{newTool("Read", Meta{}, nil)}, "", `unknown tool ""; available: Read`},
		{"case matters", []Tool{newTool("Read", Meta{}, nil)}, "read", `unknown tool "read"; available: Read`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := mustRegistry(t, tt.tools...)
			res := r.Execute(context.Background(), &Call{ID: "c1", Name: tt.call, Input: json.RawMessage(`{}`)})
			if !res.IsError || res.TextOf() != tt.want {
				t.Fatalf("got %+v\nwant error %q", res, tt.want)
			}
		})
	}
}

func TestExecuteNilCall(t *testing.T) {
	t.Parallel()
	res := mustRegistry(t).Execute(context.Background(), nil)
	if !res.IsError || res.TextOf() == "" {
		t.Fatalf("nil call: %+v", res)
	}
}

const readSchema = `{"type":"object","properties":{
	"file_path":{"type":"string"},
	"offset":{"type":"integer"},
	"limit":{"type":"integer","minimum":1},
	"mode":{"enum":["text","binary"]}},
	"required":["file_path"],"additionalProperties":false}`

const editSchema = `{"type":"object","properties":{
	"file_path":{"type":"string"},
	"old_string":{"type":"string"},
	"new_string":{"type":"string"},
	"replace_all":{"type":"boolean"}},
	"required":["file_path","old_string","new_string"],"additionalProperties":false}`

const multiEditSchema = `{"type":"object","properties":{
	"edits":{"type":"array","items":{"$ref":"#/$defs/edit"}},
	"id":{"anyOf":[{"type":"string"},{"type":"integer"}]}},
	"required":["edits"],
	"$defs":{"edit":{"type":"object","properties":{"old_string":{"type":"string"},"new_string":{"type":"string"}},"required":["old_string","new_string"],"additionalProperties":false}}}`

func TestExecuteBadArguments(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, tool, input, want string
	}{
		{"type mismatch", "Read", `{"file_path":"/a","offset":"3"}`,
			`invalid arguments for Read: /offset: got string, want integer`},
		{"number for integer", "Read", `{"file_path":"/a","offset":1.5}`,
			`invalid arguments for Read: /offset: got number, want integer`},
		{"minimum", "Read", `{"file_path":"/a","limit":0}`,
			`invalid arguments for Read: /limit: minimum: got 0, want 1`},
		{"missing required", "Edit", `{"file_path":"/a","new_string":"x"}`,
			`invalid arguments for Edit: missing required property "old_string"`},
		{"missing several", "Edit", `{"file_path":"/a"}`,
			`invalid arguments for Edit: missing required properties "old_string", "new_string"`},
		{"additional property", "Read", `{"file_path":"/a","path":"/b"}`,
			`invalid arguments for Read: unexpected property "path" (allowed: file_path, limit, mode, offset)`},
		{"additional properties sorted", "Read", `{"file_path":"/a","z":1,"b":2}`,
			`invalid arguments for Read: unexpected properties "b", "z" (allowed: file_path, limit, mode, offset)`},
		{"enum", "Read", `{"file_path":"/a","mode":"hex"}`,
			`invalid arguments for Read: /mode: value must be one of "text", "binary"`},
		{"several problems, one line each", "Read", `{"offset":"x","mode":"hex"}`,
			"invalid arguments for Read:\n- missing required property \"file_path\"\n- /mode: value must be one of \"text\", \"binary\"\n- /offset: got string, want integer"},
		{"nested through $ref", "MultiEdit", `{"edits":[{"old_string":"a","new_string":"b"},{"new_string":"c","extra":1}]}`,
			"invalid arguments for MultiEdit:\n- /edits/1: missing required property \"old_string\"\n- /edits/1: unexpected property \"extra\" (allowed: new_string, old_string)"},
		{"anyOf types merged", "MultiEdit", `{"edits":[],"id":true}`,
			`invalid arguments for MultiEdit: /id: got boolean, want integer or string`},
		{"not an object", "Read", `["/a"]`,
			`invalid arguments for Read: got array, want object`},
		{"string instead of object", "Read", `"{\"file_path\":\"/a\"}"`,
			`invalid arguments for Read: got string, want object`},
		{"invalid JSON", "Read", `{"file_path":`,
			`invalid arguments for Read: not valid JSON: unexpected end of JSON input`},
		{"trailing garbage", "Read", `{"file_path":"/a"} x`,
			`invalid arguments for Read: not valid JSON: invalid character 'x' after top-level value`},
		{"two values", "Read", `{} {}`,
			`invalid arguments for Read: not valid JSON: invalid character '{' after top-level value`},
		{"empty input is {}", "Edit", ``,
			`invalid arguments for Edit: missing required properties "file_path", "old_string", "new_string"`},
		{"null input is {}", "Edit", `null`,
			`invalid arguments for Edit: missing required properties "file_path", "old_string", "new_string"`},
	}
	var ran atomic.Int32
	run := func(context.Context, *Call) (Result, error) { ran.Add(1); return Text("ran"), nil }
	r := mustRegistry(t,
		withSchema(newTool("Read", Meta{}, run), readSchema),
		withSchema(newTool("Edit", Meta{}, run), editSchema),
		withSchema(newTool("MultiEdit", Meta{}, run), multiEditSchema),
	)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := r.Execute(context.Background(), &Call{Name: tt.tool, Input: json.RawMessage(tt.input)})
			if !res.IsError || res.TextOf() != tt.want {
				t.Fatalf("got  %q (error=%v)\nwant %q", res.TextOf(), res.IsError, tt.want)
			}
			// ValidateInput is what Execute uses: same verdict, same words.
			spec, _ := r.Get(tt.tool)
			err := ValidateInput(spec.Spec(), json.RawMessage(tt.input))
			var ie *InputError
			if !errors.As(err, &ie) || err.Error() != tt.want {
				t.Fatalf("ValidateInput = %v, want *InputError %q", err, tt.want)
			}
		})
	}
	t.Cleanup(func() {
		if n := ran.Load(); n != 0 {
			t.Errorf("tool ran %d times on bad input", n)
		}
	})
}

func TestInputErrorProblems(t *testing.T) {
	t.Parallel()
	err := ValidateInput(Spec{Name: "Read", InputSchema: json.RawMessage(readSchema)}, json.RawMessage(`{"offset":"x"}`))
	var ie *InputError
	if !errors.As(err, &ie) {
		t.Fatalf("not an *InputError: %v", err)
	}
	want := []Problem{{Path: "", Message: `missing required property "file_path"`}, {Path: "/offset", Message: "got string, want integer"}}
	if fmt.Sprint(ie.Problems) != fmt.Sprint(want) || ie.Tool != "Read" {
		t.Fatalf("problems = %+v", ie)
	}
}

func TestInputErrorCapsProblems(t *testing.T) {
	t.Parallel()
	var props, input []string
	for i := range 30 {
		props = append(props, fmt.Sprintf(`"p%02d":{"type":"integer"}`, i))
		input = append(input, fmt.Sprintf(`"p%02d":"x"`, i))
	}
	spec := Spec{Name: "Wide", InputSchema: json.RawMessage(`{"type":"object","properties":{` + strings.Join(props, ",") + `}}`)}
	err := ValidateInput(spec, json.RawMessage(`{`+strings.Join(input, ",")+`}`))
	if err == nil {
		t.Fatal("accepted")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 1+maxProblems+1 || lines[len(lines)-1] != "- ... and 10 more" {
		t.Fatalf("%d lines, last %q", len(lines), lines[len(lines)-1])
	}
}

func TestValidateInputSchemaErrors(t *testing.T) {
	t.Parallel()
	err := ValidateInput(Spec{Name: "T", InputSchema: json.RawMessage(`{"type":"string"}`)}, nil)
	var ie *InputError
	if err == nil || errors.As(err, &ie) || !strings.Contains(err.Error(), "tool T: input schema") {
		t.Fatalf("bad schema: %v", err)
	}
	if err := ValidateInput(Spec{Name: "T"}, json.RawMessage(`{"anything":1}`)); err != nil {
		t.Fatalf("empty schema rejected input: %v", err)
	}
	if err := ValidateInput(Spec{Name: "T"}, json.RawMessage(`[]`)); err == nil {
		t.Fatal("empty schema accepted a non-object")
	}
}

func TestExecuteInputNormalised(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"", "null", "  ", " null\n", "{}"} {
		t.Run(fmt.Sprintf("%q", in), func(t *testing.T) {
			t.Parallel()
			var got string
			r := mustRegistry(t, newTool("T", Meta{}, func(_ context.Context, c *Call) (Result, error) {
				got = string(c.Input)
				return Text("ok"), nil
			}))
			res := r.Execute(context.Background(), &Call{Name: "T", Input: json.RawMessage(in)})
			if res.IsError || got != "{}" {
				t.Fatalf("input %q reached the tool as %q (%+v)", in, got, res)
			}
		})
	}
	// Valid input reaches the tool unchanged.
	var got string
	r := mustRegistry(t, newTool("T", Meta{}, func(_ context.Context, c *Call) (Result, error) {
		got = string(c.Input)
		return Text("ok"), nil
	}))
	r.Execute(context.Background(), &Call{Name: "T", Input: json.RawMessage(`{ "a" : 1 }`)})
	if got != `{ "a" : 1 }` {
		t.Fatalf("input changed: %q", got)
	}
}

func TestExecuteCallDefaults(t *testing.T) {
	t.Parallel()
	var seen Call
	var deadline time.Time
	var hasDeadline bool
	r := mustRegistry(t, newTool("T", Meta{}, func(ctx context.Context, c *Call) (Result, error) {
		seen = *c
		deadline, hasDeadline = ctx.Deadline()
		c.Progress("p")
		c.Notify("k", 1)
		return Text("ok"), nil
	}))
	call := &Call{ID: "id1", Name: "T"}
	start := time.Now()
	res := r.Execute(context.Background(), call)
	if res.IsError {
		t.Fatal(res.TextOf())
	}
	if seen.Session == nil || seen.Progress == nil || seen.Notify == nil || seen.ID != "id1" {
		t.Fatalf("defaults not applied: %+v", seen)
	}
	if call.Session != nil || call.Progress != nil || call.Notify != nil || call.Input != nil {
		t.Fatalf("Execute modified the caller's call: %+v", call)
	}
	if !hasDeadline || deadline.Sub(start) < DefaultTimeout-time.Second || deadline.Sub(start) > DefaultTimeout+time.Second {
		t.Fatalf("deadline %v after start, want about %v", deadline.Sub(start), DefaultTimeout)
	}

	// A given session is passed through.
	s := NewSession()
	r2 := mustRegistry(t, newTool("T", Meta{Timeout: -1}, func(ctx context.Context, c *Call) (Result, error) {
		if c.Session != s {
			return Errorf("session not passed through"), nil
		}
		if _, ok := ctx.Deadline(); ok {
			return Errorf("negative timeout still set a deadline"), nil
		}
		return Text("ok"), nil
	}))
	if res := r2.Execute(context.Background(), &Call{Name: "T", Session: s}); res.IsError {
		t.Fatal(res.TextOf())
	}
}

func TestExecuteTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	tests := []struct {
		name    string
		timeout time.Duration
		run     func(ctx context.Context, c *Call) (Result, error)
		want    string
		maxWait time.Duration
	}{
		{"honours ctx", 50 * time.Millisecond, func(ctx context.Context, c *Call) (Result, error) {
			<-ctx.Done()
			return Result{}, ctx.Err()
		}, "T timed out after 50ms", time.Second},
		{"wrapped cause kept", 50 * time.Millisecond, func(ctx context.Context, c *Call) (Result, error) {
			<-ctx.Done()
			return Result{}, fmt.Errorf("git fetch: %w", ctx.Err())
		}, "T timed out after 50ms\ngit fetch: context deadline exceeded", time.Second},
		{"partial output kept", 50 * time.Millisecond, func(ctx context.Context, c *Call) (Result, error) {
			<-ctx.Done()
			return Result{Content: []llm.Block{llm.Text("line 1\nline 2")}, Data: map[string]any{"exit_code": -1}}, nil
		}, "T timed out after 50ms\nline 1\nline 2", time.Second},
		{"success after the deadline", 50 * time.Millisecond, func(ctx context.Context, c *Call) (Result, error) {
			<-ctx.Done()
			time.Sleep(20 * time.Millisecond)
			return Text("done"), nil
		}, "T timed out after 50ms\ndone", time.Second},
		{"ignores ctx", 50 * time.Millisecond, func(ctx context.Context, c *Call) (Result, error) {
			<-release // never honours ctx; released when the test ends
			return Text("too late"), nil
		}, "T timed out after 50ms", 50*time.Millisecond + cancelGrace + 2*time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := mustRegistry(t, newTool("T", Meta{Timeout: tt.timeout}, tt.run))
			logs := captureLog(r)
			start := time.Now()
			res := r.Execute(context.Background(), &Call{Name: "T"})
			elapsed := time.Since(start)
			if !res.IsError || res.TextOf() != tt.want {
				t.Fatalf("got %q, want %q", res.TextOf(), tt.want)
			}
			if res.Data["timed_out"] != true || res.Data["cancelled"] != nil {
				t.Fatalf("Data = %v", res.Data)
			}
			if elapsed < tt.timeout || elapsed > tt.maxWait {
				t.Fatalf("Execute took %v, want between %v and %v", elapsed, tt.timeout, tt.maxWait)
			}
			if tt.name == "ignores ctx" && !strings.Contains(logs.String(), "abandoning") {
				t.Errorf("abandoned goroutine not logged: %s", logs)
			}
			if tt.name == "partial output kept" && res.Data["exit_code"] != -1 {
				t.Errorf("tool Data lost: %v", res.Data)
			}
		})
	}
}

func TestExecuteDefaultTimeoutMessage(t *testing.T) {
	t.Parallel()
	// The parent's deadline is earlier than the tool's: that is the
	// caller giving up, not the tool timing out.
	r := mustRegistry(t, newTool("T", Meta{}, func(ctx context.Context, _ *Call) (Result, error) {
		<-ctx.Done()
		return Result{}, nil
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	res := r.Execute(ctx, &Call{Name: "T"})
	if res.TextOf() != "T was cancelled" || res.Data["cancelled"] != true {
		t.Fatalf("got %q %v", res.TextOf(), res.Data)
	}
}

func TestExecuteCancel(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	tests := []struct {
		name    string
		run     func(ctx context.Context, started chan<- struct{}) (Result, error)
		want    string
		maxWait time.Duration
	}{
		{"honours ctx", func(ctx context.Context, started chan<- struct{}) (Result, error) {
			close(started)
			<-ctx.Done()
			return Result{}, ctx.Err()
		}, "T was cancelled", time.Second},
		{"ignores ctx", func(ctx context.Context, started chan<- struct{}) (Result, error) {
			close(started)
			<-release
			return Text("late"), nil
		}, "T was cancelled", cancelGrace + 2*time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			started := make(chan struct{})
			r := mustRegistry(t, newTool("T", Meta{Timeout: -1}, func(ctx context.Context, _ *Call) (Result, error) {
				return tt.run(ctx, started)
			}))
			r.SetLogger(slog.New(slog.DiscardHandler))
			ctx, cancel := context.WithCancel(context.Background())
			go func() { <-started; cancel() }()
			start := time.Now()
			res := r.Execute(ctx, &Call{Name: "T"})
			if elapsed := time.Since(start); elapsed > tt.maxWait {
				t.Fatalf("Execute took %v after cancel", elapsed)
			}
			if !res.IsError || res.TextOf() != tt.want || res.Data["cancelled"] != true || res.Data["timed_out"] != nil {
				t.Fatalf("got %q %v, want %q", res.TextOf(), res.Data, tt.want)
			}
		})
	}
}

func TestExecuteAlreadyCancelled(t *testing.T) {
	t.Parallel()
	var ran atomic.Bool
	r := mustRegistry(t, newTool("Write", Meta{}, func(context.Context, *Call) (Result, error) {
		ran.Store(true)
		return Text("wrote"), nil
	}))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := r.Execute(ctx, &Call{Name: "Write"})
	if ran.Load() || res.TextOf() != "Write was cancelled" || res.Data["cancelled"] != true {
		t.Fatalf("ran=%v res=%+v", ran.Load(), res)
	}
}

func TestExecutePanics(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		run  func(ctx context.Context, c *Call) (Result, error)
		want string
	}{
		{"string", func(context.Context, *Call) (Result, error) { panic("kaboom") }, "T panicked: kaboom"},
		{"error", func(context.Context, *Call) (Result, error) { panic(errors.New("bad state")) }, "T panicked: bad state"},
		{"nil pointer", func(context.Context, *Call) (Result, error) {
			var m *struct{ n int }
			return Text(fmt.Sprint(m.n)), nil
		}, "T panicked: runtime error: invalid memory address or nil pointer dereference"},
		{"in a callback the tool calls", func(_ context.Context, c *Call) (Result, error) {
			c.Progress("boom")
			return Text("unreachable"), nil
		}, "T panicked: progress callback exploded"},
		{"Goexit", func(context.Context, *Call) (Result, error) {
			runtime.Goexit()
			return Text("unreachable"), nil
		}, "T stopped without returning a result"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := mustRegistry(t, newTool("T", Meta{}, tt.run))
			logs := captureLog(r)
			res := r.Execute(context.Background(), &Call{Name: "T", ID: "call-7", Progress: func(string) { panic("progress callback exploded") }})
			if !res.IsError || res.TextOf() != tt.want {
				t.Fatalf("got %q, want %q", res.TextOf(), tt.want)
			}
			if strings.Contains(res.TextOf(), "goroutine") {
				t.Fatal("stack leaked into the result")
			}
			if tt.name == "Goexit" {
				return
			}
			l := logs.String()
			if !strings.Contains(l, "level=ERROR") || !strings.Contains(l, "tool=T") || !strings.Contains(l, "call_id=call-7") ||
				!strings.Contains(l, "execute_test.go") {
				t.Fatalf("panic not logged with its stack: %s", l)
			}
			if res.Data["panicked"] != true {
				t.Errorf("Data = %v", res.Data)
			}
		})
	}
}

func TestExecuteErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		res  Result
		err  error
		want string
	}{
		{"error only", Result{}, errors.New("file not found: /a"), "file not found: /a"},
		{"error and content", Text("partial output"), errors.New("exit status 1"), "exit status 1\npartial output"},
		{"wrapped error", Result{}, fmt.Errorf("reading /a: %w", errors.New("permission denied")), "reading /a: permission denied"},
		{"empty error message", Result{}, errors.New(""), "T failed"},
		{"error result without content", Result{IsError: true}, nil, "T failed"},
		{"error result passes through", Errorf("no match for %q", "x"), nil, `no match for "x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := mustRegistry(t, newTool("T", Meta{}, func(context.Context, *Call) (Result, error) { return tt.res, tt.err }))
			res := r.Execute(context.Background(), &Call{Name: "T"})
			if !res.IsError || res.TextOf() != tt.want {
				t.Fatalf("got %q (error=%v), want %q", res.TextOf(), res.IsError, tt.want)
			}
		})
	}
}

func TestExecuteEmptyContent(t *testing.T) {
	t.Parallel()
	img := llm.Image("image/png", []byte{0x89, 'P', 'N', 'G'})
	tests := []struct {
		name    string
		content []llm.Block
		want    []llm.Block
	}{
		{"nil", nil, []llm.Block{llm.Text("(no output)")}},
		{"empty text", []llm.Block{llm.Text("")}, []llm.Block{llm.Text("(no output)")}},
		{"foreign blocks dropped", []llm.Block{llm.ToolUse("x", "y", nil), llm.Thinking("hmm", nil)}, []llm.Block{llm.Text("(no output)")}},
		{"image only", []llm.Block{img}, []llm.Block{img}},
		{"empty text beside text", []llm.Block{llm.Text(""), llm.Text("a"), llm.Text("")}, []llm.Block{llm.Text("a")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := mustRegistry(t, newTool("T", Meta{}, func(context.Context, *Call) (Result, error) {
				return Result{Content: tt.content}, nil
			}))
			res := r.Execute(context.Background(), &Call{Name: "T"})
			got, _ := json.Marshal(res.Content)
			want, _ := json.Marshal(tt.want)
			if res.IsError || string(got) != string(want) {
				t.Fatalf("content %s, want %s", got, want)
			}
		})
	}
}

func TestExecuteOutputCap(t *testing.T) {
	t.Parallel()
	img := llm.Image("image/png", []byte("not really a png"))
	long := strings.Repeat("x", 20000)
	tests := []struct {
		name          string
		cap           int
		content       []llm.Block
		want          []llm.Block
		wantTruncated int
	}{
		{"under the cap", 10, []llm.Block{llm.Text("0123456789")}, []llm.Block{llm.Text("0123456789")}, 0},
		{"ascii", 10, []llm.Block{llm.Text("abcdefghijklmnop")},
			[]llm.Block{llm.Text("abcdefghij\n\n[output truncated: 6 of 16 characters removed]")}, 6},
		{"multi-byte runes are characters", 5, []llm.Block{llm.Text("héllo wörld ✓✓✓")},
			[]llm.Block{llm.Text("héllo\n\n[output truncated: 10 of 15 characters removed]")}, 10},
		{"emoji not split", 3, []llm.Block{llm.Text("😀😀😀😀")},
			[]llm.Block{llm.Text("😀😀😀\n\n[output truncated: 1 of 4 characters removed]")}, 1},
		{"across blocks", 5, []llm.Block{llm.Text("abc"), llm.Text("defgh"), llm.Text("ij")},
			[]llm.Block{llm.Text("abc"), llm.Text("de\n\n[output truncated: 5 of 10 characters removed]")}, 5},
		{"cut at a block boundary", 3, []llm.Block{llm.Text("abc"), llm.Text("def")},
			[]llm.Block{llm.Text("abc\n\n[output truncated: 3 of 6 characters removed]")}, 3},
		{"images kept and not counted", 4, []llm.Block{llm.Text("ab"), img, llm.Text("cdef"), img},
			[]llm.Block{llm.Text("ab"), img, llm.Text("cd\n\n[output truncated: 2 of 6 characters removed]"), img}, 2},
		{"cap off", -1, []llm.Block{llm.Text(long)}, []llm.Block{llm.Text(long)}, 0},
		{"default cap", 0, []llm.Block{llm.Text(long)},
			[]llm.Block{llm.Text(long[:DefaultOutputCap] + "\n\n[output truncated: 4,000 of 20,000 characters removed]")}, 4000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := mustRegistry(t, newTool("T", Meta{OutputCap: tt.cap}, func(context.Context, *Call) (Result, error) {
				return Result{Content: tt.content}, nil
			}))
			res := r.Execute(context.Background(), &Call{Name: "T"})
			got, _ := json.Marshal(res.Content)
			want, _ := json.Marshal(tt.want)
			if string(got) != string(want) {
				if len(got) > 300 {
					got, want = got[len(got)-300:], want[max(0, len(want)-300):]
				}
				t.Fatalf("content ...%s\nwant    ...%s", got, want)
			}
			if res.Truncated != tt.wantTruncated {
				t.Fatalf("Truncated = %d, want %d", res.Truncated, tt.wantTruncated)
			}
		})
	}
}

func TestExecuteCapsErrorsToo(t *testing.T) {
	t.Parallel()
	r := mustRegistry(t, newTool("T", Meta{OutputCap: 8}, func(context.Context, *Call) (Result, error) {
		return Text(strings.Repeat("o", 100)), errors.New("exit 1")
	}))
	res := r.Execute(context.Background(), &Call{Name: "T"})
	if !res.IsError || !strings.HasPrefix(res.TextOf(), "exit 1\no\n\n[output truncated: 99 of 107 characters removed]") || res.Truncated != 99 {
		t.Fatalf("got %q truncated=%d", res.TextOf(), res.Truncated)
	}
}

func TestThousands(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 48213: "48,213", 64213: "64,213", 1234567: "1,234,567"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestExecuteProgressAndNotify(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var progress []string
	var notes []string
	var leaked *Call
	r := mustRegistry(t, newTool("T", Meta{}, func(_ context.Context, c *Call) (Result, error) {
		leaked = c
		c.Progress("line 1")
		c.Notify("todos", []string{"a"})
		return Text("ok"), nil
	}))
	call := &Call{
		Name:     "T",
		Progress: func(s string) { mu.Lock(); progress = append(progress, s); mu.Unlock() },
		Notify:   func(k string, _ any) { mu.Lock(); notes = append(notes, k); mu.Unlock() },
	}
	if res := r.Execute(context.Background(), call); res.IsError {
		t.Fatal(res.TextOf())
	}
	// After Execute returned, the tool's handles go nowhere.
	leaked.Progress("late")
	leaked.Notify("late", nil)
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(progress) != "[line 1]" || fmt.Sprint(notes) != "[todos]" {
		t.Fatalf("progress %v, notes %v", progress, notes)
	}
}

func TestExecuteLateProgressFromAbandonedGoroutine(t *testing.T) {
	t.Parallel()
	var delivered, afterReturn atomic.Int64
	var returned atomic.Bool
	stop := make(chan struct{})
	var wg sync.WaitGroup
	r := mustRegistry(t, newTool("T", Meta{Timeout: 20 * time.Millisecond}, func(ctx context.Context, c *Call) (Result, error) {
		// Keeps reporting after the deadline and after Execute returns,
		// as a tool with a stray goroutine would.
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				c.Progress("tick")
				c.Notify("tick", nil)
				time.Sleep(time.Millisecond)
			}
		})
		<-ctx.Done()
		return Result{}, nil
	}))
	call := &Call{Name: "T",
		Progress: func(string) {
			delivered.Add(1)
			if returned.Load() {
				afterReturn.Add(1)
			}
		},
		Notify: func(string, any) {
			if returned.Load() {
				afterReturn.Add(1)
			}
		},
	}
	res := r.Execute(context.Background(), call)
	returned.Store(true)
	time.Sleep(30 * time.Millisecond)
	close(stop)
	wg.Wait()
	if res.Data["timed_out"] != true {
		t.Fatalf("res = %+v", res)
	}
	if delivered.Load() == 0 {
		t.Fatal("no progress delivered while the call ran")
	}
	if n := afterReturn.Load(); n != 0 {
		t.Fatalf("%d callbacks after Execute returned", n)
	}
}

func TestExecuteProgressConcurrentCallers(t *testing.T) {
	t.Parallel()
	// The caller's func is not safe for concurrent use; the wrapper must
	// serialise calls from the tool's goroutines (checked by -race).
	var lines []string
	r := mustRegistry(t, newTool("T", Meta{}, func(_ context.Context, c *Call) (Result, error) {
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				for j := range 50 {
					c.Progress(fmt.Sprint(i, j))
					c.Notify("n", j)
				}
			})
		}
		wg.Wait()
		return Text("ok"), nil
	}))
	notes := 0
	r.Execute(context.Background(), &Call{Name: "T",
		Progress: func(s string) { lines = append(lines, s) },
		Notify:   func(string, any) { notes++ },
	})
	if len(lines) != 400 || notes != 400 {
		t.Fatalf("got %d progress lines and %d notes, want 400 each", len(lines), notes)
	}
}

func TestExecuteParallel(t *testing.T) {
	t.Parallel()
	shared := NewSession()
	r := mustRegistry(t,
		withSchema(newTool("Echo", Meta{ConcurrencySafe: true, OutputCap: 50}, func(_ context.Context, c *Call) (Result, error) {
			var in struct{ N int }
			if err := json.Unmarshal(c.Input, &in); err != nil {
				return Result{}, err
			}
			c.Session.MarkRead(fmt.Sprint(in.N), FileStamp{Size: int64(in.N)})
			c.Progress("p")
			return Text(strings.Repeat(fmt.Sprint(in.N%10), 60)), nil
		}), `{"type":"object","properties":{"N":{"type":"integer"}},"required":["N"]}`),
		newTool("Panic", Meta{}, func(context.Context, *Call) (Result, error) { panic("p") }),
		newTool("Slow", Meta{Timeout: 10 * time.Millisecond}, func(ctx context.Context, _ *Call) (Result, error) {
			<-ctx.Done()
			return Result{}, ctx.Err()
		}),
	)
	r.SetLogger(slog.New(slog.DiscardHandler))
	var wg sync.WaitGroup
	var progress atomic.Int64
	for i := range 300 {
		wg.Go(func() {
			var call *Call
			switch i % 4 {
			case 0, 1:
				call = &Call{Name: "Echo", Input: json.RawMessage(fmt.Sprintf(`{"N":%d}`, i)), Session: shared, Progress: func(string) { progress.Add(1) }}
			case 2:
				call = &Call{Name: "Panic"}
			default:
				call = &Call{Name: "Slow"}
			}
			res := r.Execute(context.Background(), call)
			switch call.Name {
			case "Echo":
				if res.IsError || res.Truncated != 10 || !strings.HasPrefix(res.TextOf(), strings.Repeat(fmt.Sprint(i%10), 50)+"\n\n[output truncated") {
					t.Errorf("Echo %d: %+v", i, res)
				}
			case "Panic":
				if res.TextOf() != "Panic panicked: p" {
					t.Errorf("Panic: %q", res.TextOf())
				}
			case "Slow":
				if res.Data["timed_out"] != true {
					t.Errorf("Slow: %+v", res)
				}
			}
		})
	}
	wg.Wait()
	if progress.Load() != 150 {
		t.Fatalf("progress = %d, want 150", progress.Load())
	}
	if _, ok := shared.ReadStamp("4"); !ok {
		t.Fatal("shared session not used")
	}
}

// FuzzExecuteInput: whatever the model sends, Execute answers with exactly
// one non-empty result and the tool sees only schema-valid input.
func FuzzExecuteInput(f *testing.F) {
	for _, s := range []string{``, `null`, `{}`, `{"file_path":"/a"}`, `{"file_path":1}`, `[]`, `{"file_path":"/a","mode":"text","offset":3}`, `{"a":`, "\xff", `{"file_path":"\u0000"}`} {
		f.Add([]byte(s))
	}
	r, err := NewRegistry(withSchema(newTool("Read", Meta{OutputCap: 20}, func(_ context.Context, c *Call) (Result, error) {
		if err := ValidateInput(Spec{Name: "Read", InputSchema: json.RawMessage(readSchema)}, c.Input); err != nil {
			return Result{}, fmt.Errorf("tool got invalid input %q: %v", c.Input, err)
		}
		return Text(string(c.Input)), nil
	}), readSchema))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, input []byte) {
		res := r.Execute(context.Background(), &Call{Name: "Read", Input: input})
		text := res.TextOf()
		if text == "" {
			t.Fatal("empty result")
		}
		if strings.HasPrefix(text, "tool got invalid input") {
			t.Fatal(text)
		}
		if res.Truncated == 0 && !res.IsError && utf8.RuneCountInString(text) > 20 {
			t.Fatalf("cap not applied: %q", text)
		}
	})
}

// FuzzCapText: the cap keeps exactly a prefix of the text, counts runes,
// and leaves images in place.
func FuzzCapText(f *testing.F) {
	f.Add("hello", "wörld", 3)
	f.Add("", "✓✓✓", 1)
	f.Add("abc", "", 10)
	f.Fuzz(func(t *testing.T, a, b string, limit int) {
		if limit <= 0 || limit > 1000 || a == "" || b == "" || strings.Contains(a+b, "\n\n[output truncated: ") {
			return
		}
		img := llm.Image("image/png", []byte{1})
		in := []llm.Block{llm.Text(a), img, llm.Text(b)}
		out, removed := capText(in, limit)
		total := utf8.RuneCountInString(a) + utf8.RuneCountInString(b)
		if total <= limit {
			if removed != 0 || len(out) != 3 {
				t.Fatalf("changed output under the cap: %+v", out)
			}
			return
		}
		if removed != total-limit {
			t.Fatalf("removed %d, want %d", removed, total-limit)
		}
		var kept strings.Builder
		images := 0
		for _, blk := range out {
			if blk.Type == llm.BlockImage {
				images++
				continue
			}
			kept.WriteString(blk.Text)
		}
		if images != 1 {
			t.Fatalf("images = %d", images)
		}
		text, _, ok := strings.Cut(kept.String(), "\n\n[output truncated: ")
		if !ok {
			t.Fatalf("no marker in %q", kept.String())
		}
		if !strings.HasPrefix(a+b, text) || utf8.RuneCountInString(text) != limit {
			t.Fatalf("kept %q of %q with limit %d", text, a+b, limit)
		}
	})
}
