package builtin

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/weft-run/weft/tool"
)

type todoEvent struct {
	kind string
	data any
}

// todoRecorder records Notify calls.
type todoRecorder struct {
	mu     sync.Mutex
	events []todoEvent
}

func (r *todoRecorder) notify(kind string, data any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, todoEvent{kind, data})
}

func (r *todoRecorder) all() []todoEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]todoEvent(nil), r.events...)
}

func TestTodoWriteSpec(t *testing.T) {
	t.Parallel()
	s := NewTodoWrite().Spec()
	if s.Name != "TodoWrite" || !s.ReadOnly || s.ConcurrencySafe || s.Permission != tool.ClassReadOnly || s.Effect != tool.EffectRead {
		t.Errorf("spec %+v", s.Meta)
	}
	if _, err := tool.NewRegistry(NewTodoWrite()); err != nil {
		t.Fatalf("schema does not compile: %v", err)
	}
	for _, w := range []string{"in_progress", "activeForm", "replaces"} {
		if !strings.Contains(s.Description, w) {
			t.Errorf("description lacks %q", w)
		}
	}
}

func TestTodoWriteSchema(t *testing.T) {
	t.Parallel()
	spec := NewTodoWrite().Spec()
	for _, tc := range []struct {
		in         string
		schemaOK   bool
		runErrPart string // "" = Run accepts (when the schema does)
	}{
		{`{"todos":[]}`, true, ""},
		{`{"todos":[{"content":"a","status":"pending"}]}`, true, ""},
		{`{"todos":[{"content":"a","status":"in_progress","activeForm":"Doing a","id":"1"}]}`, true, ""},
		{`{}`, false, ""},
		{`{"todos":[{"content":"a"}]}`, false, ""},
		{`{"todos":[{"content":"a","status":"done"}]}`, false, ""},
		{`{"todos":[{"content":"","status":"pending"}]}`, false, ""},
		{`{"todos":[{"content":"a","status":"pending","priority":"high"}]}`, false, ""},
		{`{"todos":[{"content":"a","status":"pending"}],"merge":true}`, false, ""},
		// What only Run catches.
		{`{"todos":[{"content":"a","status":"pending","id":"x"},{"content":"b","status":"pending","id":"x"}]}`, true, `todos 1 and 2 share the id "x"`},
		{`{"todos":[{"content":"   ","status":"pending"}]}`, true, "todo 1 has empty content"},
	} {
		err := tool.ValidateInput(spec, json.RawMessage(tc.in))
		if (err == nil) != tc.schemaOK {
			t.Errorf("%s: schema err=%v, want ok=%v", tc.in, err, tc.schemaOK)
		}
		if !tc.schemaOK {
			continue
		}
		res, rerr := NewTodoWrite().Run(context.Background(), &tool.Call{Input: json.RawMessage(tc.in), Session: tool.NewSession()})
		if rerr != nil {
			t.Fatal(rerr)
		}
		if tc.runErrPart == "" && res.IsError || tc.runErrPart != "" && (!res.IsError || !strings.Contains(res.TextOf(), tc.runErrPart)) {
			t.Errorf("%s: Run gave %v %q, want error %q", tc.in, res.IsError, res.TextOf(), tc.runErrPart)
		}
	}
}

func TestTodoWriteRun(t *testing.T) {
	t.Parallel()
	prev := []tool.Todo{{Content: "old", Status: tool.TodoPending}}
	for _, tc := range []struct {
		name    string
		in      string
		isError bool
		want    []tool.Todo // the session's list afterwards
		text    []string
		notText []string
	}{
		{
			name: "replace",
			in:   `{"todos":[{"content":"Write tests","status":"completed"},{"content":"Fix bug","status":"in_progress","activeForm":"Fixing bug","id":"b"},{"content":"Ship","status":"pending"}]}`,
			want: []tool.Todo{
				{Content: "Write tests", Status: tool.TodoCompleted},
				{Content: "Fix bug", Status: tool.TodoInProgress, ActiveForm: "Fixing bug", ID: "b"},
				{Content: "Ship", Status: tool.TodoPending},
			},
			text:    []string{"modified successfully", "(1 of 3 completed)", "1. [completed] Write tests", "2. [in_progress] Fix bug (id b)", "3. [pending] Ship"},
			notText: []string{"Warning", "old"},
		},
		{
			name: "two in progress warns",
			in:   `{"todos":[{"content":"A","status":"in_progress"},{"content":"B","status":"in_progress"}]}`,
			want: []tool.Todo{{Content: "A", Status: tool.TodoInProgress}, {Content: "B", Status: tool.TodoInProgress}},
			text: []string{`Warning: 2 todos are in_progress ("A", "B")`, "exactly one"},
		},
		{
			name: "clear",
			in:   `{"todos":[]}`,
			want: []tool.Todo{},
			text: []string{"now empty"},
		},
		{
			name:    "duplicate ids",
			in:      `{"todos":[{"content":"A","status":"pending","id":"1"},{"content":"B","status":"pending","id":"2"},{"content":"C","status":"pending","id":"1"}]}`,
			isError: true,
			want:    prev,
			text:    []string{`todos 1 and 3 share the id "1"`},
		},
		{
			name:    "bad status when called directly",
			in:      `{"todos":[{"content":"A","status":"blocked"}]}`,
			isError: true,
			want:    prev,
			text:    []string{`status "blocked"`, "pending, in_progress or completed"},
		},
		{
			name:    "not json",
			in:      `{"todos":`,
			isError: true,
			want:    prev,
			text:    []string{"invalid input"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sess := tool.NewSession()
			sess.SetTodos(prev)
			rec := &todoRecorder{}
			res, err := NewTodoWrite().Run(context.Background(), &tool.Call{
				Input: json.RawMessage(tc.in), Session: sess, Notify: rec.notify, Progress: func(string) {},
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError != tc.isError {
				t.Errorf("IsError=%v: %q", res.IsError, res.TextOf())
			}
			for _, w := range tc.text {
				if !strings.Contains(res.TextOf(), w) {
					t.Errorf("%q lacks %q", res.TextOf(), w)
				}
			}
			for _, w := range tc.notText {
				if strings.Contains(res.TextOf(), w) {
					t.Errorf("%q contains %q", res.TextOf(), w)
				}
			}
			got := sess.Todos()
			if len(got) != 0 || len(tc.want) != 0 {
				if !reflect.DeepEqual(got, tc.want) {
					t.Errorf("session todos %+v, want %+v", got, tc.want)
				}
			}
			events := rec.all()
			if tc.isError {
				if len(events) != 0 {
					t.Errorf("notified on error: %+v", events)
				}
				return
			}
			if len(events) != 1 || events[0].kind != "todos" {
				t.Fatalf("events %+v", events)
			}
			list, ok := events[0].data.([]tool.Todo)
			if !ok || len(list) != len(tc.want) || (len(list) > 0 && !reflect.DeepEqual(list, tc.want)) {
				t.Errorf("notify payload %#v", events[0].data)
			}
			if d, ok := res.Data["todos"].([]tool.Todo); !ok || len(d) != len(tc.want) {
				t.Errorf("data %#v", res.Data)
			}
		})
	}
}

// TestTodoWriteThroughRegistry checks the list survives across calls of
// one session and the payload reaches the caller's Notify.
func TestTodoWriteThroughRegistry(t *testing.T) {
	t.Parallel()
	reg, err := tool.NewRegistry(NewTodoWrite())
	if err != nil {
		t.Fatal(err)
	}
	sess := tool.NewSession()
	rec := &todoRecorder{}
	for i, in := range []string{
		`{"todos":[{"content":"A","status":"in_progress","activeForm":"Doing A"},{"content":"B","status":"pending"}]}`,
		`{"todos":[{"content":"A","status":"completed","activeForm":"Doing A"},{"content":"B","status":"in_progress"}]}`,
		`{"todos":[{"content":"A","status":"finished"}]}`, // rejected by the schema
	} {
		res := reg.Execute(context.Background(), &tool.Call{ID: "c", Name: "TodoWrite", Input: json.RawMessage(in), Session: sess, Notify: rec.notify})
		if res.IsError != (i == 2) {
			t.Errorf("call %d: IsError=%v %q", i, res.IsError, res.TextOf())
		}
	}
	want := []tool.Todo{{Content: "A", Status: tool.TodoCompleted, ActiveForm: "Doing A"}, {Content: "B", Status: tool.TodoInProgress}}
	if got := sess.Todos(); !reflect.DeepEqual(got, want) {
		t.Errorf("session %+v", got)
	}
	if ev := rec.all(); len(ev) != 2 || !reflect.DeepEqual(ev[1].data, want) {
		t.Errorf("events %+v", ev)
	}
	// The payload is a copy: changing it does not change the session.
	ev := rec.all()
	ev[1].data.([]tool.Todo)[0].Content = "mutated"
	if sess.Todos()[0].Content != "A" {
		t.Error("notify payload aliases the session's list")
	}
}
