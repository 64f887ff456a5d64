package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/weft-run/weft/tool"
)

// Limits of AskUserQuestion, as in Claude Code.
const (
	askMaxQuestions = 4
	askMinOptions   = 2
	askMaxOptions   = 4
	askMaxHeader    = 12
)

// Question is one question AskUserQuestion puts to the user; it is the
// payload of the "ask_user" notification (a []Question) for clients to
// render. The json names are the tool's argument names.
type Question struct {
	Question    string           `json:"question"`
	Header      string           `json:"header,omitempty"`
	Options     []QuestionOption `json:"options"`
	MultiSelect bool             `json:"multiSelect,omitempty"`
}

// QuestionOption is one answer the user can pick.
type QuestionOption struct {
	Label       string `json:"label"`
	Description string `json:"description,omitempty"`
}

const askSchema = `{
  "type": "object",
  "properties": {
    "questions": {
      "type": "array",
      "minItems": 1,
      "maxItems": 4,
      "description": "The questions to ask (1 to 4).",
      "items": {
        "type": "object",
        "properties": {
          "question": {
            "type": "string",
            "minLength": 1,
            "description": "The full question, clear and specific, ending with a question mark."
          },
          "header": {
            "type": "string",
            "maxLength": 12,
            "description": "A very short label shown as a chip or tag (at most 12 characters), e.g. \"Auth method\"."
          },
          "options": {
            "type": "array",
            "minItems": 2,
            "maxItems": 4,
            "description": "The choices (2 to 4). Do not add an \"Other\" choice: the user can always answer in their own words.",
            "items": {
              "type": "object",
              "properties": {
                "label": {
                  "type": "string",
                  "minLength": 1,
                  "description": "The choice as shown, a few words."
                },
                "description": {
                  "type": "string",
                  "description": "What the choice means or implies."
                }
              },
              "required": ["label"],
              "additionalProperties": false
            }
          },
          "multiSelect": {
            "type": "boolean",
            "description": "True if the user may pick several options."
          }
        },
        "required": ["question", "options"],
        "additionalProperties": false
      }
    }
  },
  "required": ["questions"],
  "additionalProperties": false
}`

const askDescription = `Asks the user one to four multiple-choice questions, when you need their input to go on.

Use it to:
- gather preferences or requirements,
- clarify an ambiguous instruction,
- let the user decide between implementation choices as you work,
- offer choices about what direction to take.

How it works: the questions are shown to the user at once and this tool returns immediately; it does not wait. The user's answers arrive as their next message, so after calling it end your turn: do not call other tools or keep working on the task until they have answered.

Guidelines:
- Each question has 2 to 4 options with a short label and a description of what the option means. Users can always answer in their own words, so do not add an "Other" option.
- header is a very short label (at most 12 characters) for the question.
- Set multiSelect to true when several answers may apply.
- If you recommend an option, list it first and add "(Recommended)" to its label.
- Ask only what you cannot reasonably decide yourself.`

type askTool struct{}

// NewAskUserQuestion returns the AskUserQuestion tool: it emits an
// "ask_user" notification with the questions ([]Question) and returns at
// once, telling the model to end its turn; the answers come as the next
// user message.
func NewAskUserQuestion() tool.Tool { return askTool{} }

func (askTool) Spec() tool.Spec {
	return tool.Spec{
		Name:        "AskUserQuestion",
		Description: askDescription,
		InputSchema: json.RawMessage(askSchema),
		Meta: tool.Meta{
			ReadOnly:   true,
			Effect:     tool.EffectRead,
			Permission: tool.ClassReadOnly,
			// The answers come as the next user message.
			EndsTurn: true,
		},
	}
}

type askInput struct {
	Questions []Question `json:"questions"`
}

func (askTool) Run(_ context.Context, call *tool.Call) (tool.Result, error) {
	var in askInput
	if err := json.Unmarshal(call.Input, &in); err != nil {
		return tool.Errorf("AskUserQuestion: invalid input: %v", err), nil
	}
	if err := askValidate(in.Questions); err != nil {
		return tool.Errorf("AskUserQuestion: %v", err), nil
	}
	if call.Notify != nil {
		call.Notify("ask_user", askCopy(in.Questions))
	}
	r := tool.Text(askSummary(in.Questions))
	r.Data = map[string]any{"questions": askCopy(in.Questions)}
	return r, nil
}

// askValidate repeats the schema's limits with errors that say what to
// change (Run may be called without the framework's validation) and adds
// what a schema cannot say: distinct questions and distinct labels.
func askValidate(qs []Question) error {
	if len(qs) == 0 {
		return fmt.Errorf("questions is empty; ask between 1 and %d questions", askMaxQuestions)
	}
	if len(qs) > askMaxQuestions {
		return fmt.Errorf("%d questions given; ask at most %d at once (split the rest into a later call)", len(qs), askMaxQuestions)
	}
	seen := map[string]int{}
	for i, q := range qs {
		name := fmt.Sprintf("question %d", i+1)
		text := strings.TrimSpace(q.Question)
		if text == "" {
			return fmt.Errorf("%s is empty; write the full question", name)
		}
		name = fmt.Sprintf("question %d (%q)", i+1, askShort(text))
		if j, dup := seen[text]; dup {
			return fmt.Errorf("%s repeats question %d; each question must be different", name, j+1)
		}
		seen[text] = i
		if n := utf8.RuneCountInString(q.Header); n > askMaxHeader {
			return fmt.Errorf("%s: header %q is %d characters; keep it at most %d (a short label such as %q)", name, q.Header, n, askMaxHeader, askShort12(q.Header))
		}
		if len(q.Options) < askMinOptions || len(q.Options) > askMaxOptions {
			return fmt.Errorf("%s has %d options; give between %d and %d (the user can always answer in their own words, so no \"Other\" option is needed)", name, len(q.Options), askMinOptions, askMaxOptions)
		}
		labels := map[string]int{}
		for k, o := range q.Options {
			label := strings.TrimSpace(o.Label)
			if label == "" {
				return fmt.Errorf("%s: option %d has an empty label", name, k+1)
			}
			if m, dup := labels[strings.ToLower(label)]; dup {
				return fmt.Errorf("%s: options %d and %d have the same label %q; labels must differ", name, m+1, k+1, label)
			}
			labels[strings.ToLower(label)] = k
		}
	}
	return nil
}

func askShort(s string) string {
	if utf8.RuneCountInString(s) <= 60 {
		return s
	}
	return string([]rune(s)[:57]) + "..."
}

func askShort12(s string) string {
	r := []rune(strings.TrimSpace(s))
	if len(r) > askMaxHeader {
		r = r[:askMaxHeader]
	}
	return strings.TrimSpace(string(r))
}

func askCopy(qs []Question) []Question {
	out := make([]Question, len(qs))
	for i, q := range qs {
		q.Options = append([]QuestionOption(nil), q.Options...)
		out[i] = q
	}
	return out
}

func askSummary(qs []Question) string {
	var b strings.Builder
	if len(qs) == 1 {
		b.WriteString("Your question has been shown to the user:\n")
	} else {
		fmt.Fprintf(&b, "Your %d questions have been shown to the user:\n", len(qs))
	}
	for i, q := range qs {
		fmt.Fprintf(&b, "%d. ", i+1)
		if q.Header != "" {
			fmt.Fprintf(&b, "[%s] ", q.Header)
		}
		b.WriteString(strings.TrimSpace(q.Question))
		labels := make([]string, len(q.Options))
		for k, o := range q.Options {
			labels[k] = strings.TrimSpace(o.Label)
		}
		fmt.Fprintf(&b, " (options: %s", strings.Join(labels, " / "))
		if q.MultiSelect {
			b.WriteString("; several may be chosen")
		}
		b.WriteString(")\n")
	}
	b.WriteString("\nThe user's answers will arrive as their next message. End your turn now: do not call other tools or continue the task until they have answered.")
	return b.String()
}
