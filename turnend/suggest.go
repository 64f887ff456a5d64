package turnend

import (
	"context"

	"github.com/weft-run/weft/event"
	"github.com/weft-run/weft/llm"
	"github.com/weft-run/weft/memory"
)

const suggestSystem = `You suggest what the user might ask next. Given the end of a conversation between a user and an AI coding agent, answer with up to 3 short follow-up prompts the user could send next, one per line, each under 15 words, in the user's voice and language. No numbering, no commentary. Answer with nothing if no follow-up makes sense.`

// suggestMessages is how much of the conversation the suggestions call
// sees: its end is what the next prompt follows.
const suggestMessages = 6

// suggest asks the model for follow-up prompts within SuggestTimeout and
// delivers them; a slow or failing model delivers an empty list (a
// waiting REPL stops waiting; no event is made of it).
func (p *Pipeline) suggest(t Turn) {
	var list []string
	defer func() { t.Suggest(event.SuggestionsData{Suggestions: list}) }()
	prov, model := p.model(t)
	if prov == nil || model == "" {
		return
	}
	ctx, cancel := context.WithTimeout(p.ctx, p.cfg.SuggestTimeout)
	defer cancel()
	msgs := t.Messages
	if len(msgs) > suggestMessages {
		msgs = msgs[len(msgs)-suggestMessages:]
	}
	req := &llm.Request{
		Model:     model,
		System:    llm.SystemText(suggestSystem),
		Messages:  []llm.Message{llm.UserText("<conversation>\n" + memory.Transcript(msgs, 8<<10) + "</conversation>\nThe user's next prompts:")},
		MaxTokens: 200,
	}
	res := llm.Collect(prov.Stream(ctx, req))
	if ctx.Err() != nil || res.Outcome.Status != llm.StatusCompleted {
		if ctx.Err() != nil {
			p.log.Debug("suggestions: no answer in time", "session", t.Session, "timeout", p.cfg.SuggestTimeout)
		} else {
			p.log.Debug("suggestions: the model call failed", "session", t.Session, "error", res.Outcome.Message)
		}
		return
	}
	list = cleanSuggestions(res.Message.Text())
}
