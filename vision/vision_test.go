package vision_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/vision"
)

func img(n byte) llm.Block { return llm.Image("image/png", []byte{0x89, 'P', 'N', 'G', n}) }

// TestReplaceCopiesWhatItChanges: the caller's messages (the session's
// history) keep their images; only the request's copy changes, and
// messages without images are shared, not copied.
func TestReplaceCopiesWhatItChanges(t *testing.T) {
	t.Parallel()
	history := []llm.Message{
		llm.UserText("no image here"),
		{Role: llm.RoleAssistant, Content: []llm.Block{llm.ToolUse("t1", "Read", []byte(`{}`))}},
		{Role: llm.RoleUser, Content: []llm.Block{llm.ToolResult("t1", false, llm.Text("Image a.png"), img(1))}},
		{Role: llm.RoleUser, Content: []llm.Block{{Type: llm.BlockImage, MediaType: "image/jpeg", URL: "https://example.com/x.jpg", CacheHint: true}}},
	}
	req := &llm.Request{Messages: history}
	vision.Replace(context.Background(), req, nil, "deepseek-chat")
	if history[2].Content[0].Content[1].Type != llm.BlockImage || history[3].Content[0].Type != llm.BlockImage {
		t.Fatal("Replace changed the caller's history")
	}
	if &req.Messages[0].Content[0] != &history[0].Content[0] {
		t.Error("a message without images was copied")
	}
	got := req.Messages[2].Content[0].Content
	if got[0].Text != "Image a.png" || got[1].Type != llm.BlockText || !strings.Contains(got[1].Text, "An image (image/png, 0.0 KB) was here. deepseek-chat cannot see images") {
		t.Errorf("tool result image = %+v", got)
	}
	if b := req.Messages[3].Content[0]; b.Type != llm.BlockText || !strings.Contains(b.Text, "https://example.com/x.jpg") || !b.CacheHint {
		t.Errorf("URL image = %+v (the cache hint must stay where it was)", b)
	}
}

func TestDescriberCachesByContent(t *testing.T) {
	t.Parallel()
	var scripts []llmtest.Script
	for i := range 4 {
		scripts = append(scripts, llmtest.Text(fmt.Sprintf("description %d", i)))
	}
	p := llmtest.NewScripted("vis", scripts...)
	d := vision.New(vision.Config{Provider: p, Model: "v1", CacheSize: 2})
	ctx := context.Background()
	describe := func(b llm.Block) string {
		t.Helper()
		s, err := d.Describe(ctx, b, "")
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a1 := describe(img(1))
	if describe(img(1)) != a1 || len(p.Requests()) != 1 {
		t.Fatalf("the same image was described twice")
	}
	describe(img(2))
	describe(img(3)) // evicts img(1), the least recently used
	if describe(img(1)) == a1 || len(p.Requests()) != 4 {
		t.Errorf("the cache kept more than CacheSize entries (%d calls)", len(p.Requests()))
	}
	if u, calls := d.Usage(); calls != 4 || u.OutputTokens != 0 {
		t.Errorf("usage %+v over %d calls", u, calls)
	}
	req := p.Requests()[0]
	if req.Model != "v1" || len(req.System) != 0 || len(req.Tools) != 0 || req.Cache != llm.CacheOff ||
		req.Messages[0].Content[0].Type != llm.BlockImage || !strings.Contains(req.Messages[0].Content[1].Text, "verbatim") {
		t.Errorf("vision request = %+v", req)
	}
}

func TestDescriberWithoutAModel(t *testing.T) {
	t.Parallel()
	var nilD *vision.Describer
	for _, d := range []*vision.Describer{nilD, vision.New(vision.Config{})} {
		if d.Model() != "" {
			t.Errorf("Model() = %q", d.Model())
		}
		if _, err := d.Describe(context.Background(), img(1), ""); !errors.Is(err, vision.ErrNoModel) {
			t.Errorf("Describe error = %v", err)
		}
	}
}
