// Package llmtest holds test doubles for the model layer: loopback fakes of
// the real provider wire protocols (faithful enough that the official SDK
// clients accept them) and an in-process scripted provider.
//
// A Script describes one response in provider-neutral terms; each fake
// renders it in its own protocol, so one table of scenarios exercises every
// provider.
package llmtest

import (
	"net/http"
	"time"

	"github.com/weft-run/weft/llm"
)

// Script is one scripted response.
type Script struct {
	// Status, when >= 400, makes the response an HTTP error in the
	// provider's envelope instead of a stream.
	Status int
	// ErrorType is the provider's error type or code (e.g.
	// "rate_limit_error", "rate_limit_exceeded", "RESOURCE_EXHAUSTED"); the
	// fake picks the usual one for Status when empty.
	ErrorType    string
	ErrorMessage string
	// RetryAfter, when set, is sent as the provider sends it (a retry-after
	// header, or Gemini's RetryInfo detail).
	RetryAfter time.Duration
	// Header is added to the response.
	Header http.Header

	// The streamed message.
	Blocks       []Block
	StopReason   llm.StopReason // default: tool_use when a tool block is present, else end_turn
	StopSequence string
	Usage        llm.Usage

	// Faults. Frame counts are of the rendered frames, 1-based.
	//
	// CutAfter > 0 drops the connection after that many frames, in the
	// middle of the next one.
	CutAfter int
	// MalformedAt > 0 replaces that frame with invalid JSON.
	MalformedAt int
	// ErrorAfter > 0 sends the provider's in-stream error frame after that
	// many frames and ends the stream; ErrorType/ErrorMessage describe it.
	ErrorAfter int
	// Delay is slept before every frame (a slow stream).
	Delay time.Duration
}

// Block is one scripted content block.
type Block struct {
	Type llm.BlockType // text, thinking or tool_use
	// Chunks are the streamed pieces: text, thinking text, or fragments of
	// the tool's JSON arguments, which must concatenate to a JSON object.
	Chunks []string
	// ID and Name of a tool call.
	ID, Name string
	// Signature of a thinking block (base64 for Gemini).
	Signature string
}

// TextBlock is a text block streamed in the given pieces.
func TextBlock(chunks ...string) Block { return Block{Type: llm.BlockText, Chunks: chunks} }

// ThinkingBlock is a thinking block with a signature.
func ThinkingBlock(signature string, chunks ...string) Block {
	return Block{Type: llm.BlockThinking, Chunks: chunks, Signature: signature}
}

// ToolBlock is a tool call whose arguments arrive in the given fragments.
func ToolBlock(id, name string, fragments ...string) Block {
	return Block{Type: llm.BlockToolUse, ID: id, Name: name, Chunks: fragments}
}

// Text is a script answering with one streamed text block.
func Text(chunks ...string) Script { return Script{Blocks: []Block{TextBlock(chunks...)}} }

// Stop returns the stop reason the script ends with.
func (s *Script) Stop() llm.StopReason {
	if s.StopReason != "" {
		return s.StopReason
	}
	for _, b := range s.Blocks {
		if b.Type == llm.BlockToolUse {
			return llm.StopToolUse
		}
	}
	return llm.StopEndTurn
}

// Joined returns the concatenation of a block's chunks.
func (b Block) Joined() string {
	n := 0
	for _, c := range b.Chunks {
		n += len(c)
	}
	buf := make([]byte, 0, n)
	for _, c := range b.Chunks {
		buf = append(buf, c...)
	}
	return string(buf)
}
