package gemini

import (
	"encoding/base64"
	"encoding/json"
	"strings"

	"github.com/weft-run/weft/llm"
)

// The request body, field for field what go-genai sends for the same
// conversation (see the differential tests).
type reqBody struct {
	Contents          []content         `json:"contents"`
	SystemInstruction *content          `json:"systemInstruction,omitempty"`
	Tools             []tool            `json:"tools,omitempty"`
	ToolConfig        *toolConfig       `json:"toolConfig,omitempty"`
	GenerationConfig  *generationConfig `json:"generationConfig,omitempty"`
}

type content struct {
	Role  string    `json:"role,omitempty"`
	Parts []reqPart `json:"parts"`
}

type reqPart struct {
	Text             string       `json:"text,omitempty"`
	Thought          bool         `json:"thought,omitempty"`
	ThoughtSignature string       `json:"thoughtSignature,omitempty"`
	InlineData       *blob        `json:"inlineData,omitempty"`
	FileData         *fileData    `json:"fileData,omitempty"`
	FunctionCall     *callOut     `json:"functionCall,omitempty"`
	FunctionResponse *responseOut `json:"functionResponse,omitempty"`
}

type blob struct {
	MimeType string `json:"mimeType,omitempty"`
	Data     []byte `json:"data,omitempty"` // standard base64 on the wire, like go-genai's []byte
}

type fileData struct {
	MimeType string `json:"mimeType,omitempty"`
	FileURI  string `json:"fileUri"`
}

type callOut struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

type responseOut struct {
	ID       string            `json:"id,omitempty"`
	Name     string            `json:"name"`
	Response map[string]string `json:"response"`
}

type tool struct {
	FunctionDeclarations []functionDecl `json:"functionDeclarations"`
}

type functionDecl struct {
	Name                 string          `json:"name"`
	Description          string          `json:"description,omitempty"`
	ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema,omitempty"`
}

type toolConfig struct {
	FunctionCallingConfig functionCallingConfig `json:"functionCallingConfig"`
}

type functionCallingConfig struct {
	Mode                 string   `json:"mode"`
	AllowedFunctionNames []string `json:"allowedFunctionNames,omitempty"`
}

type generationConfig struct {
	MaxOutputTokens int             `json:"maxOutputTokens,omitempty"`
	Temperature     *float64        `json:"temperature,omitempty"`
	TopP            *float64        `json:"topP,omitempty"`
	TopK            *int            `json:"topK,omitempty"`
	StopSequences   []string        `json:"stopSequences,omitempty"`
	ThinkingConfig  *thinkingConfig `json:"thinkingConfig,omitempty"`
}

type thinkingConfig struct {
	IncludeThoughts bool `json:"includeThoughts"`
	ThinkingBudget  int  `json:"thinkingBudget"`
}

// callInfo is what a functionResponse needs from its functionCall.
type callInfo struct {
	name      string
	synthetic bool
}

func encodeRequest(req *llm.Request) ([]byte, error) {
	body := reqBody{Contents: make([]content, 0, len(req.Messages))}
	calls := map[string]callInfo{}
	for mi := range req.Messages {
		m := &req.Messages[mi]
		role := "user"
		if m.Role == llm.RoleAssistant {
			role = "model"
		}
		c := content{Role: role, Parts: make([]reqPart, 0, len(m.Content))}
		for bi := range m.Content {
			b := &m.Content[bi]
			sig := b.MetaValue(MetaThoughtSignature)
			switch b.Type {
			case llm.BlockText:
				if b.Text == "" && sig == "" {
					continue // Gemini rejects empty parts
				}
				c.Parts = append(c.Parts, reqPart{Text: b.Text, ThoughtSignature: sig})
			case llm.BlockThinking:
				if sig == "" {
					continue
				}
				c.Parts = append(c.Parts, reqPart{Text: b.Text, Thought: true, ThoughtSignature: sig})
			case llm.BlockImage:
				if p, ok := imagePart(b); ok {
					c.Parts = append(c.Parts, p)
				}
			case llm.BlockToolUse:
				synthetic := b.MetaValue(MetaSyntheticID) == "1"
				calls[b.ToolUseID] = callInfo{name: b.ToolName, synthetic: synthetic}
				call := &callOut{Name: b.ToolName}
				if !synthetic {
					call.ID = b.ToolUseID
				}
				if !emptyObject(b.Input) {
					if !json.Valid(b.Input) {
						return nil, &llm.Error{Provider: name, Category: llm.CategoryBadRequest,
							Message: "tool call " + b.ToolName + " has arguments that are not valid JSON"}
					}
					call.Args = b.Input
				}
				c.Parts = append(c.Parts, reqPart{FunctionCall: call, ThoughtSignature: sig})
			case llm.BlockToolResult:
				c.Parts = appendToolResult(c.Parts, b, calls)
			}
		}
		if len(c.Parts) > 0 {
			body.Contents = append(body.Contents, c)
		}
	}

	if len(req.System) > 0 {
		sys := content{Role: "user"} // go-genai fills the role in; the API ignores it
		for i := range req.System {
			if t := req.System[i].Text; req.System[i].Type == llm.BlockText && t != "" {
				sys.Parts = append(sys.Parts, reqPart{Text: t})
			}
		}
		if len(sys.Parts) > 0 {
			body.SystemInstruction = &sys
		}
	}

	if len(req.Tools) > 0 {
		decls := make([]functionDecl, len(req.Tools))
		for i, t := range req.Tools {
			decls[i] = functionDecl{Name: t.Name, Description: t.Description}
			if len(t.InputSchema) > 0 && string(t.InputSchema) != "null" {
				decls[i].ParametersJSONSchema = t.InputSchema
			}
		}
		body.Tools = []tool{{FunctionDeclarations: decls}}
	}

	// DisableParallel has no Gemini counterpart and is not sent.
	switch req.ToolChoice.Mode {
	case llm.ToolChoiceAny:
		body.ToolConfig = &toolConfig{functionCallingConfig{Mode: "ANY"}}
	case llm.ToolChoiceNone:
		body.ToolConfig = &toolConfig{functionCallingConfig{Mode: "NONE"}}
	case llm.ToolChoiceTool:
		body.ToolConfig = &toolConfig{functionCallingConfig{Mode: "ANY", AllowedFunctionNames: []string{req.ToolChoice.Name}}}
	}

	g := generationConfig{
		MaxOutputTokens: req.MaxTokens,
		Temperature:     req.Temperature,
		TopP:            req.TopP,
		TopK:            req.TopK,
		StopSequences:   req.StopSequences,
	}
	if n := req.Thinking.Budget(); n > 0 {
		g.ThinkingConfig = &thinkingConfig{IncludeThoughts: true, ThinkingBudget: n}
	}
	if g.MaxOutputTokens > 0 || g.Temperature != nil || g.TopP != nil || g.TopK != nil ||
		len(g.StopSequences) > 0 || g.ThinkingConfig != nil {
		body.GenerationConfig = &g
	}

	out, err := json.Marshal(&body)
	if err != nil {
		return nil, &llm.Error{Provider: name, Category: llm.CategoryBadRequest, Message: "encoding request: " + err.Error(), Err: err}
	}
	return out, nil
}

func appendToolResult(parts []reqPart, b *llm.Block, calls map[string]callInfo) []reqPart {
	info, known := calls[b.ToolUseID]
	resp := &responseOut{Name: info.name}
	if !known {
		resp.Name = b.ToolUseID
	}
	if !info.synthetic {
		resp.ID = b.ToolUseID
	}
	var text strings.Builder
	var media []reqPart
	for i := range b.Content {
		c := &b.Content[i]
		switch c.Type {
		case llm.BlockText:
			if text.Len() > 0 {
				text.WriteByte('\n')
			}
			text.WriteString(c.Text)
		case llm.BlockImage:
			if p, ok := imagePart(c); ok {
				media = append(media, p)
			}
		}
	}
	key := "output"
	if b.IsError {
		key = "error"
	}
	resp.Response = map[string]string{key: text.String()}
	parts = append(parts, reqPart{FunctionResponse: resp})
	return append(parts, media...)
}

// imagePart turns an image block into inlineData (bytes, or a data: URL) or
// fileData (any other URL).
func imagePart(b *llm.Block) (reqPart, bool) {
	if len(b.Data) > 0 {
		return reqPart{InlineData: &blob{MimeType: b.MediaType, Data: b.Data}}, true
	}
	if b.URL == "" {
		return reqPart{}, false
	}
	if mt, data, ok := parseDataURL(b.URL); ok {
		if b.MediaType != "" {
			mt = b.MediaType
		}
		return reqPart{InlineData: &blob{MimeType: mt, Data: data}}, true
	}
	return reqPart{FileData: &fileData{MimeType: b.MediaType, FileURI: b.URL}}, true
}

// parseDataURL decodes "data:<type>;base64,<data>".
func parseDataURL(u string) (string, []byte, bool) {
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return "", nil, false
	}
	meta, payload, ok := strings.Cut(rest, ",")
	if !ok {
		return "", nil, false
	}
	mt, ok := strings.CutSuffix(meta, ";base64")
	if !ok {
		return "", nil, false
	}
	data, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		return "", nil, false
	}
	return mt, data, true
}

// emptyObject reports whether raw is absent or "{}" (go-genai omits empty
// args, and so does weft).
func emptyObject(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return true
	}
	if s[0] != '{' {
		return false
	}
	return strings.TrimSpace(s[1:]) == "}"
}
