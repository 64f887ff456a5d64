package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/tool"
)

// ImageDescriber is the vision model describe_image asks
// (*vision.Describer): Model is "" when none is configured.
type ImageDescriber interface {
	Describe(ctx context.Context, img llm.Block, question string) (string, error)
	Model() string
}

// DescribeImageName is the describe_image tool's name (seed 003's).
const DescribeImageName = "describe_image"

const describeImageDescription = `Describes an image file for you, since you cannot see images: a vision model looks at it and answers in text.

- file_path: the image (PNG, JPEG, GIF or WebP, up to 5 MB), absolute or relative to the workspace. The same paths and permissions as Read apply.
- question: optional; what you want to know about the image ("What does the error dialog say?"). Without it you get a general description with all visible text.
- Images that Read returns, or that the user sends, are described automatically; use this tool to ask a specific question about one.`

var describeImageSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "file_path": {"type": "string", "description": "The path of the image, absolute or relative to the workspace"},
    "question": {"type": "string", "description": "What you want to know about the image (optional)"}
  },
  "required": ["file_path"],
  "additionalProperties": false
}`)

type describeImageTool struct {
	read readTool
	d    ImageDescriber
}

// NewDescribeImage returns describe_image, for models without image input:
// it reads an image as Read does (confined to the workspace, under the
// Read rules: its file_path makes the policy judge it as a Read) and asks
// d about it. With d nil, or without a model, every call fails with a
// message saying that no vision model is configured.
func NewDescribeImage(cfg Config, d ImageDescriber) tool.Tool {
	return &describeImageTool{read: readTool{ws: wsFrom(cfg)}, d: d}
}

func (t *describeImageTool) Spec() tool.Spec {
	return tool.Spec{
		Name:        DescribeImageName,
		Description: describeImageDescription,
		InputSchema: describeImageSchema,
		Meta: tool.Meta{
			ReadOnly:        true,
			ConcurrencySafe: true,
			Effect:          tool.EffectRead,
			Permission:      tool.ClassReadOnly,
		},
	}
}

type describeImageInput struct {
	FilePath string `json:"file_path"`
	Question string `json:"question"`
}

func (t *describeImageTool) Run(ctx context.Context, call *tool.Call) (tool.Result, error) {
	var in describeImageInput
	if err := json.Unmarshal(call.Input, &in); err != nil {
		return tool.Errorf("invalid input: %v", err), nil
	}
	if t.d == nil || t.d.Model() == "" {
		return tool.Errorf("describe_image cannot describe %s: no vision model is configured. Whoever runs weft can set one with --vision-model provider:model (a model that accepts images); until then, ask the user what the image shows.", in.FilePath), nil
	}
	readIn, _ := json.Marshal(map[string]string{"file_path": in.FilePath})
	res, err := t.read.Run(ctx, &tool.Call{ID: call.ID, Name: "Read", Input: readIn, Session: call.Session,
		Progress: call.Progress, Notify: call.Notify, Secrets: call.Secrets})
	if err != nil || res.IsError {
		if err != nil {
			return tool.Errorf("%v", err), nil
		}
		return res, nil
	}
	var img *llm.Block
	for i := range res.Content {
		if res.Content[i].Type == llm.BlockImage {
			img = &res.Content[i]
		}
	}
	if img == nil {
		return tool.Errorf("%s is not an image (PNG, JPEG, GIF or WebP); read it with Read", in.FilePath), nil
	}
	text, err := t.d.Describe(ctx, *img, strings.TrimSpace(in.Question))
	if err != nil {
		return tool.Errorf("describing %s failed: %v", in.FilePath, err), nil
	}
	return tool.Result{Content: []llm.Block{llm.Text(fmt.Sprintf("%s, as %s describes it:\n\n%s", res.TextOf(), t.d.Model(), text))},
		Data: map[string]any{"vision_model": t.d.Model()}}, nil
}
