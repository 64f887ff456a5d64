package builtin

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/weft-run/weft/tool"
)

func TestAskUserQuestionSpec(t *testing.T) {
	t.Parallel()
	s := NewAskUserQuestion().Spec()
	if s.Name != "AskUserQuestion" || !s.ReadOnly || s.Permission != tool.ClassReadOnly || s.Effect != tool.EffectRead {
		t.Errorf("spec %+v", s.Meta)
	}
	if _, err := tool.NewRegistry(NewAskUserQuestion()); err != nil {
		t.Fatalf("schema does not compile: %v", err)
	}
	for _, w := range []string{"next message", "end your turn", "12 characters", "multiSelect"} {
		if !strings.Contains(s.Description, w) {
			t.Errorf("description lacks %q", w)
		}
	}
}

// TestQuestionJSON: the exported payload uses the tool's argument names.
func TestQuestionJSON(t *testing.T) {
	t.Parallel()
	in := `{"question":"Which?","header":"Pick","options":[{"label":"A","description":"first"},{"label":"B"}],"multiSelect":true}`
	var q Question
	if err := json.Unmarshal([]byte(in), &q); err != nil {
		t.Fatal(err)
	}
	want := Question{Question: "Which?", Header: "Pick", MultiSelect: true, Options: []QuestionOption{{"A", "first"}, {"B", ""}}}
	if !reflect.DeepEqual(q, want) {
		t.Fatalf("%+v", q)
	}
	out, _ := json.Marshal(q)
	if string(out) != in {
		t.Errorf("round trip %s", out)
	}
}

func askQ(question, header string, labels ...string) map[string]any {
	opts := make([]map[string]any, len(labels))
	for i, l := range labels {
		opts[i] = map[string]any{"label": l, "description": "about " + l}
	}
	q := map[string]any{"question": question, "options": opts}
	if header != "" {
		q["header"] = header
	}
	return q
}

func TestAskUserQuestionValidation(t *testing.T) {
	t.Parallel()
	spec := NewAskUserQuestion().Spec()
	for _, tc := range []struct {
		name      string
		questions []map[string]any
		schemaOK  bool   // whether the framework's schema check passes
		runErr    string // "" = Run accepts
	}{
		{"one", []map[string]any{askQ("Which DB?", "Database", "SQLite", "Postgres")}, true, ""},
		{"four", []map[string]any{askQ("Q1?", "", "a", "b"), askQ("Q2?", "", "a", "b", "c"), askQ("Q3?", "", "a", "b", "c", "d"), askQ("Q4?", "Twelve chars", "a", "b")}, true, ""},
		{"none", []map[string]any{}, false, "questions is empty"},
		{"five", []map[string]any{askQ("Q1?", "", "a", "b"), askQ("Q2?", "", "a", "b"), askQ("Q3?", "", "a", "b"), askQ("Q4?", "", "a", "b"), askQ("Q5?", "", "a", "b")}, false, "5 questions given; ask at most 4"},
		{"one option", []map[string]any{askQ("Sure?", "", "yes")}, false, "has 1 options; give between 2 and 4"},
		{"five options", []map[string]any{askQ("Color?", "", "r", "g", "b", "c", "m")}, false, "has 5 options"},
		{"long header", []map[string]any{askQ("Auth?", "Authentication", "a", "b")}, false, `header "Authentication" is 14 characters; keep it at most 12`},
		{"empty question", []map[string]any{askQ("", "", "a", "b")}, false, "question 1 is empty"},
		{"empty label", []map[string]any{askQ("Q?", "", "a", "")}, false, "option 2 has an empty label"},
		// What only Run catches.
		{"header counted in characters", []map[string]any{askQ("Q?", "ÄÖÜ日本語éèêëïî", "a", "b")}, true, ""},
		{"blank question", []map[string]any{askQ("   ", "", "a", "b")}, true, "question 1 is empty"},
		{"duplicate labels", []map[string]any{askQ("Which?", "", "Yes", "yes ")}, true, `options 1 and 2 have the same label "yes"`},
		{"duplicate questions", []map[string]any{askQ("Which?", "", "a", "b"), askQ("Which?", "", "c", "d")}, true, "repeats question 1"},
	} {
		raw, _ := json.Marshal(map[string]any{"questions": tc.questions})
		err := tool.ValidateInput(spec, raw)
		if (err == nil) != tc.schemaOK {
			t.Errorf("%s: schema err=%v, want ok=%v", tc.name, err, tc.schemaOK)
		}
		// Run validates on its own too, for callers that skip the framework.
		rec := &todoRecorder{}
		res, rerr := NewAskUserQuestion().Run(context.Background(), &tool.Call{Input: raw, Notify: rec.notify})
		if rerr != nil {
			t.Fatal(rerr)
		}
		if tc.runErr == "" {
			if res.IsError {
				t.Errorf("%s: Run rejected: %q", tc.name, res.TextOf())
			}
			continue
		}
		if !res.IsError || !strings.Contains(res.TextOf(), tc.runErr) {
			t.Errorf("%s: Run gave %v %q, want error %q", tc.name, res.IsError, res.TextOf(), tc.runErr)
		}
		if len(rec.all()) != 0 {
			t.Errorf("%s: notified despite the error", tc.name)
		}
	}
}

func TestAskUserQuestionRun(t *testing.T) {
	t.Parallel()
	reg, err := tool.NewRegistry(NewAskUserQuestion())
	if err != nil {
		t.Fatal(err)
	}
	in := `{"questions":[
		{"question":"Which database should the service use?","header":"Database","options":[{"label":"SQLite (Recommended)","description":"Embedded, no setup"},{"label":"PostgreSQL","description":"Needs a server"}]},
		{"question":"Which features should ship first?","header":"Features","multiSelect":true,"options":[{"label":"Search"},{"label":"Export"},{"label":"Sharing"}]}
	]}`
	rec := &todoRecorder{}
	res := reg.Execute(context.Background(), &tool.Call{ID: "q1", Name: "AskUserQuestion", Input: json.RawMessage(in), Notify: rec.notify})
	if res.IsError {
		t.Fatalf("error: %q", res.TextOf())
	}
	want := []Question{
		{Question: "Which database should the service use?", Header: "Database", Options: []QuestionOption{{"SQLite (Recommended)", "Embedded, no setup"}, {"PostgreSQL", "Needs a server"}}},
		{Question: "Which features should ship first?", Header: "Features", MultiSelect: true, Options: []QuestionOption{{Label: "Search"}, {Label: "Export"}, {Label: "Sharing"}}},
	}
	ev := rec.all()
	if len(ev) != 1 || ev[0].kind != "ask_user" {
		t.Fatalf("events %+v", ev)
	}
	if got, ok := ev[0].data.([]Question); !ok || !reflect.DeepEqual(got, want) {
		t.Errorf("payload %#v", ev[0].data)
	}
	if got, ok := res.Data["questions"].([]Question); !ok || !reflect.DeepEqual(got, want) {
		t.Errorf("data %#v", res.Data)
	}
	text := res.TextOf()
	for _, w := range []string{
		"Your 2 questions have been shown to the user",
		"1. [Database] Which database should the service use? (options: SQLite (Recommended) / PostgreSQL)",
		"2. [Features] Which features should ship first? (options: Search / Export / Sharing; several may be chosen)",
		"answers will arrive as their next message",
		"End your turn now",
	} {
		if !strings.Contains(text, w) {
			t.Errorf("%q lacks %q", text, w)
		}
	}

	// One question, no header.
	rec = &todoRecorder{}
	res = reg.Execute(context.Background(), &tool.Call{ID: "q2", Name: "AskUserQuestion", Notify: rec.notify,
		Input: json.RawMessage(`{"questions":[{"question":"Proceed?","options":[{"label":"Yes"},{"label":"No"}]}]}`)})
	if res.IsError || !strings.HasPrefix(res.TextOf(), "Your question has been shown to the user:\n1. Proceed? (options: Yes / No)\n") {
		t.Errorf("single: %v %q", res.IsError, res.TextOf())
	}
	if len(rec.all()) != 1 {
		t.Errorf("events %+v", rec.all())
	}
}
