package compact

import (
	"fmt"
	"strings"

	"github.com/weft-run/weft/llm"
)

// SummaryPrompt is the system prompt of a summary request.
const SummaryPrompt = `You compact the conversation of an AI agent with a user so that the agent can go on with the work in less context. You are given the part of the conversation that will be replaced by your summary; the agent keeps the user's first message and the latest messages, and the user's own messages are carried over word for word separately.

Write the summary in these sections, in Markdown:
## Goal
What the user wants, in their terms.
## User's instructions
Every standing instruction, preference and constraint the user gave (what to do, what never to do, style, tools, limits), quoted verbatim.
## Decisions
What was decided or found out, and why; approaches tried that failed.
## Files touched
Files read, created or changed, with what changed.
## Open tasks
What is left to do, in order; the step that was in progress.
## Current state
Where the work stands right now: the last thing done and the next step.

Keep identifiers, paths, commands, error messages and numbers exact. Leave out pleasantries and anything that no longer matters. Write only the summary.`

// summaryAsk follows the conversation in the summary request.
const summaryAsk = "Summarize the conversation above as instructed."

// SummaryInput renders view[:split] as the user message of a summary
// request, in at most budget tokens (as the estimate counts them, times
// the Planner's Ratio): tool results are shortened first, then the oldest
// messages after the first are left out with a note, and a single item
// too large is cut. instructions (from /compact or a pre_compact hook)
// are added to the request.
func (p *Planner) SummaryInput(view []llm.Message, split int, instructions string, budget int) string {
	split = min(split, len(view))
	ask := summaryAsk
	if s := strings.TrimSpace(instructions); s != "" {
		ask += "\n\nAlso follow these instructions for the summary:\n" + s
	}
	if files := FilesTouched(view[:split], 40); len(files) > 0 {
		ask += "\n\nFiles named in the tool calls of this part: " + strings.Join(files, ", ")
	}
	ratio := max(p.Ratio, 1)
	tokens := func(s string) int { return int(float64(EstimateText(s)+2) * ratio) }
	budget -= tokens(ask) + tokens("<conversation>\n</conversation>\n\n")
	names := calls(view[:split])
	for _, resultCap := range []int{4000, 1000, 200} {
		items := renderItems(view[:split], names, resultCap)
		if fitted, ok := fitItems(items, budget, tokens); ok {
			return "<conversation>\n" + fitted + "</conversation>\n\n" + ask
		}
	}
	items := renderItems(view[:split], names, 200)
	fitted, _ := fitItems(items, budget, tokens)
	return "<conversation>\n" + fitted + "</conversation>\n\n" + ask
}

// renderItems renders each message of msgs as lines of text, tool results
// cut to resultCap bytes and other texts to 8 times that.
func renderItems(msgs []llm.Message, names map[string]call, resultCap int) []string {
	short := func(s string, n int) string {
		return cutMiddle(s, n, func(removed, _ int) string { return fmt.Sprintf(" [... %s characters ...] ", thousands(removed)) })
	}
	var items []string
	for i := range msgs {
		var sb strings.Builder
		for _, b := range msgs[i].Content {
			switch {
			case b.Type == llm.BlockText && msgs[i].Role == llm.RoleAssistant:
				fmt.Fprintf(&sb, "ASSISTANT: %s\n", short(b.Text, 8*resultCap))
			case b.Type == llm.BlockText:
				switch b.MetaValue(MetaSummary) {
				case "summary":
					fmt.Fprintf(&sb, "SUMMARY OF AN EARLIER PART: %s\n", strings.TrimPrefix(b.Text, SummaryHeader))
				case "user_messages", "note":
					// Carried over without the model.
				default:
					label := "USER"
					if i == 0 {
						label = "USER (first message)"
					} else if strings.HasPrefix(strings.TrimSpace(b.Text), "[system:") {
						label = "NOTE"
					}
					fmt.Fprintf(&sb, "%s: %s\n", label, short(b.Text, 8*resultCap))
				}
			case b.Type == llm.BlockToolUse:
				fmt.Fprintf(&sb, "TOOL CALL %s (%s): %s\n", b.ToolName, b.ToolUseID, short(string(b.Input), resultCap))
			case b.Type == llm.BlockToolResult:
				text, images := splitContent(b.Content)
				label := "TOOL RESULT"
				if b.IsError {
					label = "TOOL ERROR"
				}
				fmt.Fprintf(&sb, "%s %s (%s): %s\n", label, names[b.ToolUseID].name, b.ToolUseID, short(text, resultCap))
				if len(images) > 0 {
					fmt.Fprintf(&sb, "[%d images]\n", len(images))
				}
			case b.Type == llm.BlockImage:
				sb.WriteString("[an image]\n")
			}
		}
		if sb.Len() > 0 {
			items = append(items, sb.String())
		}
	}
	return items
}

// fitItems joins items within budget: the first always, then the latest
// that fit, with a note where the oldest were left out. ok is false when
// items had to be left out or cut.
func fitItems(items []string, budget int, tokens func(string) int) (string, bool) {
	if len(items) == 0 {
		return "", true
	}
	total := 0
	sizes := make([]int, len(items))
	for i, it := range items {
		sizes[i] = tokens(it)
		total += sizes[i]
	}
	if total <= budget {
		return strings.Join(items, ""), true
	}
	first := items[0]
	room := budget - tokens("[... 0000 earlier messages left out to fit this request ...]\n")
	if sizes[0] > room/2 {
		// The first message alone is too large: it keeps half the room.
		keep := max(int(float64(len(first))*float64(room/2)/float64(sizes[0])), 0)
		first = cutMiddle(first, keep, func(removed, _ int) string {
			return fmt.Sprintf(" [... %s characters ...] ", thousands(removed))
		})
	}
	room -= tokens(first)
	start := len(items)
	for i := len(items) - 1; i >= 1; i-- {
		if sizes[i] > room {
			break
		}
		room -= sizes[i]
		start = i
	}
	var sb strings.Builder
	sb.WriteString(first)
	if start > 1 {
		fmt.Fprintf(&sb, "[... %d earlier messages left out to fit this request ...]\n", start-1)
	}
	if start == len(items) && len(items) > 1 && room > 0 {
		// Not even the latest message fits whole: its end does.
		last := items[len(items)-1]
		keep := max(int(float64(len(last))*float64(room)/float64(sizes[len(items)-1]))-64, 0)
		sb.WriteString(last[runeCeil(last, len(last)-keep):])
	}
	for _, it := range items[start:] {
		sb.WriteString(it)
	}
	return sb.String(), false
}

// SummaryRequest is the request that asks model for a summary of
// view[:split] in at most maxTokens, sized to fit window (the summary
// model's context window).
func (p *Planner) SummaryRequest(model string, window, maxTokens int, view []llm.Message, split int, instructions string) *llm.Request {
	system := llm.SystemText(SummaryPrompt)
	fixed := int(float64(EstimateFixed(system, nil)+messageTokens+blockTokens) * max(p.Ratio, 1))
	// A tenth spare: the estimate errs high, this is for when it does not.
	budget := int(float64(window-maxTokens-fixed) * 0.9)
	return &llm.Request{
		Model:     model,
		System:    system,
		Messages:  []llm.Message{llm.UserText(p.SummaryInput(view, split, instructions, max(budget, 256)))},
		MaxTokens: maxTokens,
		Thinking:  llm.ThinkingNone,
		Cache:     llm.CacheOff,
	}
}
