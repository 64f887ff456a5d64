package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/weft-run/weft/tool"
)

const todoSchema = `{
  "type": "object",
  "properties": {
    "todos": {
      "type": "array",
      "description": "The complete, updated todo list. It replaces the previous list.",
      "items": {
        "type": "object",
        "properties": {
          "content": {
            "type": "string",
            "minLength": 1,
            "description": "What to do, in the imperative (\"Run the tests\")."
          },
          "status": {
            "type": "string",
            "enum": ["pending", "in_progress", "completed"]
          },
          "activeForm": {
            "type": "string",
            "description": "The same task in the present continuous, shown while it is in progress (\"Running the tests\")."
          },
          "id": {
            "type": "string",
            "description": "Optional stable identifier; ids must be unique."
          }
        },
        "required": ["content", "status"],
        "additionalProperties": false
      }
    }
  },
  "required": ["todos"],
  "additionalProperties": false
}`

const todoDescription = `Creates and updates a structured todo list for the current session. It tracks progress on multi-step work and shows the user what you are doing.

When to use it:
- A task needs three or more distinct steps, or careful planning.
- The user gives you several tasks (a numbered or comma-separated list).
- The user asks for a todo list.
- New instructions arrive: capture them as todos.
- You start a task (mark it in_progress before you begin) or finish one (mark it completed and add follow-up tasks you discovered).

When not to use it: a single, straightforward task, a trivial one, or a purely conversational or informational request.

How to use it:
- Each call sends the whole list; it replaces the previous one.
- Status is pending, in_progress or completed. Keep exactly one task in_progress at a time.
- Mark a task completed as soon as it is done; do not batch completions. Complete a task only when it is fully done: if tests fail, the work is partial or you hit an error you could not resolve, keep it in_progress and add a task for what blocks it.
- content is the imperative form ("Fix the login bug"); activeForm is the present continuous form ("Fixing the login bug") shown while the task runs.
- Remove tasks that are no longer relevant rather than leaving them pending.`

type todoTool struct{}

// NewTodoWrite returns the TodoWrite tool: it replaces the session's todo
// list, emits a "todos" notification with the new list and echoes it to the
// model.
func NewTodoWrite() tool.Tool { return todoTool{} }

func (todoTool) Spec() tool.Spec {
	return tool.Spec{
		Name:        "TodoWrite",
		Description: todoDescription,
		InputSchema: json.RawMessage(todoSchema),
		Meta: tool.Meta{
			// It changes only the session's own state: nothing outside the
			// session is touched, so no permission is needed.
			ReadOnly:        true,
			ConcurrencySafe: false,
			Effect:          tool.EffectRead,
			Permission:      tool.ClassReadOnly,
		},
	}
}

type todoInput struct {
	Todos []tool.Todo `json:"todos"`
}

func (todoTool) Run(_ context.Context, call *tool.Call) (tool.Result, error) {
	var in todoInput
	if err := json.Unmarshal(call.Input, &in); err != nil {
		return tool.Errorf("TodoWrite: invalid input: %v", err), nil
	}
	if err := todoValidate(in.Todos); err != nil {
		return tool.Errorf("TodoWrite: %v", err), nil
	}
	todos := in.Todos
	if todos == nil {
		todos = []tool.Todo{}
	}
	if call.Session != nil {
		call.Session.SetTodos(todos)
	}
	if call.Notify != nil {
		call.Notify("todos", append([]tool.Todo{}, todos...))
	}
	r := tool.Text(todoSummary(todos))
	r.Data = map[string]any{"todos": append([]tool.Todo{}, todos...)}
	return r, nil
}

// todoValidate checks what the schema cannot express (unique ids) and what
// it may not have enforced if Run is called directly.
func todoValidate(todos []tool.Todo) error {
	ids := map[string]int{}
	for i, t := range todos {
		if strings.TrimSpace(t.Content) == "" {
			return fmt.Errorf("todo %d has empty content; every todo needs a description of the task", i+1)
		}
		switch t.Status {
		case tool.TodoPending, tool.TodoInProgress, tool.TodoCompleted:
		default:
			return fmt.Errorf("todo %d (%q) has status %q; use pending, in_progress or completed", i+1, t.Content, t.Status)
		}
		if t.ID == "" {
			continue
		}
		if j, dup := ids[t.ID]; dup {
			return fmt.Errorf("todos %d and %d share the id %q; ids must be unique (or omit them)", j+1, i+1, t.ID)
		}
		ids[t.ID] = i
	}
	return nil
}

func todoSummary(todos []tool.Todo) string {
	if len(todos) == 0 {
		return "The todo list is now empty."
	}
	var b strings.Builder
	b.WriteString("Todos have been modified successfully. Ensure that you continue to use the todo list to track your progress. Please proceed with the current tasks if applicable.\n\n")
	done := 0
	var active []string
	for _, t := range todos {
		switch t.Status {
		case tool.TodoCompleted:
			done++
		case tool.TodoInProgress:
			active = append(active, fmt.Sprintf("%q", t.Content))
		}
	}
	fmt.Fprintf(&b, "Todo list (%d of %d completed):\n", done, len(todos))
	for i, t := range todos {
		fmt.Fprintf(&b, "%d. [%s] %s", i+1, t.Status, t.Content)
		if t.ID != "" {
			fmt.Fprintf(&b, " (id %s)", t.ID)
		}
		b.WriteByte('\n')
	}
	if len(active) > 1 {
		fmt.Fprintf(&b, "\nWarning: %d todos are in_progress (%s). Keep exactly one task in_progress at a time: mark finished tasks completed and the others pending.\n", len(active), strings.Join(active, ", "))
	}
	return strings.TrimRight(b.String(), "\n")
}
