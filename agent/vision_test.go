package agent_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weft-run/weft/agent"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/llm/openai"
	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/policy/permission"
	"github.com/weft-run/weft/tool"
	"github.com/weft-run/weft/tool/builtin"
	"github.com/weft-run/weft/vision"
)

// pngBytes is enough of a PNG for content sniffing.
var pngBytes = append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), make([]byte, 64)...)

// visionFake is a vision model behind the OpenAI wire fake.
func visionFake(t *testing.T, answers ...string) (*llmtest.Server, *vision.Describer) {
	t.Helper()
	fake := llmtest.NewOpenAI(t)
	for _, a := range answers {
		fake.Push(llmtest.Text(a))
	}
	p := openai.New(openai.Config{Endpoint: llm.Endpoint{BaseURL: fake.URL + "/v1", APIKey: "k"}})
	return fake, vision.New(vision.Config{Provider: p, Model: "gpt-4.1"})
}

// textOnly is an agent on a model the catalogue knows has no image input.
func textOnly(t *testing.T, p llm.Provider, d *vision.Describer, tools ...tool.Tool) *agent.Agent {
	t.Helper()
	info := llm.DefaultCatalog().Lookup("deepseek", "deepseek-chat")
	if !info.Known || info.Images {
		t.Fatalf("deepseek-chat should be a known text-only model: %+v", info)
	}
	reg, err := tool.NewRegistry(tools...)
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{Provider: p, Model: info.ID, ModelInfo: &info, Vision: d, Tools: reg,
		Policy: &policy.Policy{Mode: permission.ModeBypass}})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func imagesIn(msgs []llm.Message) int {
	n := 0
	var walk func([]llm.Block)
	walk = func(bs []llm.Block) {
		for _, b := range bs {
			if b.Type == llm.BlockImage {
				n++
			}
			walk(b.Content)
		}
	}
	for _, m := range msgs {
		walk(m.Content)
	}
	return n
}

func runMessage(t *testing.T, s *agent.Session, msg llm.Message) {
	t.Helper()
	for _, err := range s.RunMessage(context.Background(), msg) {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestImagesAreDescribedForATextOnlyModel(t *testing.T) {
	t.Parallel()
	fake, d := visionFake(t, "A terminal showing: panic: nil map write")
	p := llmtest.NewScripted("deepseek", llmtest.Text("I see the panic."), llmtest.Text("Still the panic."))
	s := textOnly(t, p, d).NewSession()
	msg := llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.Text("what broke?"), llm.Image("image/png", pngBytes)}}
	runMessage(t, s, msg)
	runMessage(t, s, llm.UserText("and now?"))

	for i, req := range p.Requests() {
		if n := imagesIn(req.Messages); n != 0 {
			t.Errorf("request %d sent %d images to a text-only model", i+1, n)
		}
		text, _ := json.Marshal(req.Messages)
		if !strings.Contains(string(text), "described by openai:gpt-4.1 because deepseek-chat cannot see images") ||
			!strings.Contains(string(text), "panic: nil map write") {
			t.Errorf("request %d lacks the description: %s", i+1, text)
		}
	}
	// Described once, though the image was in the history of both turns.
	if n := len(fake.Requests()); n != 1 {
		t.Errorf("the vision model was called %d times, want 1", n)
	}
	if body := string(fake.Requests()[0].Body); !strings.Contains(body, "image_url") || !strings.Contains(body, "data:image/png;base64,") {
		t.Errorf("the vision model did not get the image: %s", body)
	}
	// The history keeps the image, for a model that can see it later.
	if imagesIn(s.Messages()) != 1 {
		t.Error("the image was removed from the history")
	}
}

func TestReadImagesAreDescribedAndDescribeImageAnswers(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "shot.png"), pngBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	fake, d := visionFake(t, "A login form with a red error: 'bad password'", "The button says Sign in.")
	cfg := builtin.Config{Workspace: ws}
	p := llmtest.NewScripted("deepseek",
		toolScript(llmtest.ToolBlock("r1", "Read", `{"file_path":"shot.png"}`)),
		toolScript(llmtest.ToolBlock("d1", "describe_image", `{"file_path":"shot.png","question":"What does the button say?"}`)),
		llmtest.Text("done"))
	s := textOnly(t, p, d, builtin.NewRead(cfg), builtin.NewDescribeImage(cfg, d)).NewSession()
	if c := collect(s, context.Background(), "look at shot.png"); c.err != nil {
		t.Fatal(c.err)
	}
	reqs := p.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests", len(reqs))
	}
	second, _ := json.Marshal(reqs[1].Messages)
	if imagesIn(reqs[1].Messages) != 0 || !strings.Contains(string(second), "bad password") {
		t.Errorf("Read's image was not replaced by its description: %s", second)
	}
	third, _ := json.Marshal(reqs[2].Messages[len(reqs[2].Messages)-1])
	if !strings.Contains(string(third), "The button says Sign in.") || !strings.Contains(string(third), "as openai:gpt-4.1 describes it") {
		t.Errorf("describe_image's answer missing: %s", third)
	}
	if q := string(fake.Requests()[1].Body); !strings.Contains(q, "What does the button say?") {
		t.Errorf("the question did not reach the vision model: %s", q)
	}
}

func TestImagesWithoutAVisionModel(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "shot.png"), pngBytes, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := builtin.Config{Workspace: ws}
	p := llmtest.NewScripted("deepseek",
		toolScript(llmtest.ToolBlock("d1", "describe_image", `{"file_path":"shot.png"}`)),
		llmtest.Text("ok"))
	s := textOnly(t, p, nil, builtin.NewDescribeImage(cfg, nil)).NewSession()
	runMessage(t, s, llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.Image("image/png", pngBytes), llm.Text("see?")}})
	reqs := p.Requests()
	first, _ := json.Marshal(reqs[0].Messages)
	if imagesIn(reqs[0].Messages) != 0 || !strings.Contains(string(first), "deepseek-chat cannot see images, and no vision model is configured") {
		t.Errorf("the image was not replaced by a note: %s", first)
	}
	last := reqs[1].Messages[len(reqs[1].Messages)-1].Content[0]
	if !last.IsError || !strings.Contains(last.Content[0].Text, "no vision model is configured") {
		t.Errorf("describe_image did not say why: %+v", last)
	}
}

func TestImagesReachModelsThatSeeThemOrAreUnknown(t *testing.T) {
	t.Parallel()
	for _, info := range []llm.ModelInfo{
		llm.DefaultCatalog().Lookup("anthropic", "claude-sonnet-4-5"),            // sees images
		llm.DefaultCatalog().Lookup("ollama", "llava:13b"),                       // unknown: as it is
		{ID: "custom", Provider: "vllm", Known: true, Images: true, Tools: true}, // a models file said so
	} {
		p := llmtest.NewScripted(info.Provider, llmtest.Text("ok"))
		a, err := agent.New(agent.Config{Provider: p, Model: info.ID, ModelInfo: &info})
		if err != nil {
			t.Fatal(err)
		}
		runMessage(t, a.NewSession(), llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.Image("image/png", pngBytes)}})
		if n := imagesIn(p.Requests()[0].Messages); n != 1 {
			t.Errorf("%s/%s: %d images sent, want 1", info.Provider, info.ID, n)
		}
	}
}

func TestVisionFailureIsANoteAndRemembered(t *testing.T) {
	t.Parallel()
	fake := llmtest.NewOpenAI(t).Push(llmtest.Script{Status: 400, ErrorMessage: "image too small"})
	vp := openai.New(openai.Config{Endpoint: llm.Endpoint{BaseURL: fake.URL + "/v1", APIKey: "k"}})
	d := vision.New(vision.Config{Provider: vp, Model: "gpt-4.1", Logger: discardLog()})
	p := llmtest.NewScripted("deepseek", llmtest.Text("a"), llmtest.Text("b"))
	s := textOnly(t, p, d).NewSession()
	runMessage(t, s, llm.Message{Role: llm.RoleUser, Content: []llm.Block{llm.Image("image/png", pngBytes)}})
	runMessage(t, s, llm.UserText("again"))
	for i, req := range p.Requests() {
		text, _ := json.Marshal(req.Messages)
		if imagesIn(req.Messages) != 0 || !strings.Contains(string(text), "it could not be described") || !strings.Contains(string(text), "image too small") {
			t.Errorf("request %d: %s", i+1, text)
		}
	}
	if n := len(fake.Requests()); n != 1 {
		t.Errorf("a failed description was retried at the next turn (%d calls)", n)
	}
}

func discardLog() *slog.Logger { return slog.New(slog.DiscardHandler) }
