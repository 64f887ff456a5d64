package llmtest

import "fmt"

// WithContextWindow makes the fake a model with a context window of
// window tokens. A request whose prompt is over it is refused as the
// provider refuses it, without consuming a script: Anthropic's 400
// invalid_request_error "prompt is too long: N tokens > W maximum",
// OpenAI's 400 context_length_exceeded "This model's maximum context
// length is W tokens. However, your messages resulted in N tokens.",
// Gemini's 400 INVALID_ARGUMENT "The input token count (N) exceeds the
// maximum number of tokens allowed (W).". The requests it serves report
// their prompt's size as input tokens when the script sets none (and
// WithPromptCache is not accounting for them). Sizes are PromptTokens.
func (s *Server) WithContextWindow(window int) *Server {
	s.mu.Lock()
	s.window = window
	s.mu.Unlock()
	return s
}

// PromptTokens is the size the fakes give a request's prompt: a quarter of
// its body's bytes, rounded up. Real tokenizers run at about four bytes a
// token on English and code, and the JSON framing the body adds stands
// for the framing tokens the providers add.
func PromptTokens(body []byte) int { return (len(body) + 3) / 4 }

// overflow is the provider's refusal of a prompt of tokens over the
// window; s.mu held.
func (s *Server) overflow(tokens int) Script {
	switch s.proto.(type) {
	case AnthropicProtocol, *AnthropicProtocol:
		return Script{Status: 400, ErrorType: "invalid_request_error",
			ErrorMessage: fmt.Sprintf("prompt is too long: %d tokens > %d maximum", tokens, s.window)}
	case *OpenAIProtocol:
		return Script{Status: 400, ErrorType: "context_length_exceeded",
			ErrorMessage: fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.", s.window, tokens)}
	case GeminiProtocol, *GeminiProtocol:
		return Script{Status: 400, ErrorType: "INVALID_ARGUMENT",
			ErrorMessage: fmt.Sprintf("The input token count (%d) exceeds the maximum number of tokens allowed (%d).", tokens, s.window)}
	}
	return Script{Status: 400, ErrorMessage: fmt.Sprintf("prompt is too long: %d tokens > %d maximum", tokens, s.window)}
}
