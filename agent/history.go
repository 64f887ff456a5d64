package agent

import "github.com/weft-run/weft/llm"

// appendMerged appends m, merging it into the last message when both have
// the same role: Anthropic and Gemini reject consecutive same-role turns,
// and a continuation or a new prompt after tool results would make one.
func appendMerged(msgs []llm.Message, m llm.Message) []llm.Message {
	if n := len(msgs); n > 0 && msgs[n-1].Role == m.Role {
		last := msgs[n-1]
		content := make([]llm.Block, 0, len(last.Content)+len(m.Content))
		content = append(content, last.Content...)
		content = append(content, m.Content...)
		msgs[n-1] = llm.Message{Role: m.Role, Content: content}
		return msgs
	}
	return append(msgs, m)
}

// repairHistory makes every tool_use have exactly one tool_result in the
// next user message, as every provider requires: results are synthesised
// for orphaned calls (a run stopped between a call and its result) and
// results answering no call are dropped. repairs counts both.
func repairHistory(msgs []llm.Message) (out []llm.Message, repairs int) {
	out = make([]llm.Message, 0, len(msgs)+1)
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		if m.Role == llm.RoleUser {
			// Results whose call is not in the previous assistant message.
			n := len(m.Content)
			m.Content = keepAnswered(m.Content, out)
			repairs += n - len(m.Content)
			if len(m.Content) == 0 {
				continue
			}
			out = appendMerged(out, m)
			continue
		}
		out = appendMerged(out, m)
		calls := llm.Message{Content: m.Content}
		uses := calls.ToolUses()
		if len(uses) == 0 {
			continue
		}
		answered := map[string]bool{}
		var next llm.Message
		if i+1 < len(msgs) && msgs[i+1].Role == llm.RoleUser {
			next = msgs[i+1]
			i++
		}
		var results, rest []llm.Block
		for _, b := range next.Content {
			if b.Type == llm.BlockToolResult {
				if answered[b.ToolUseID] || !hasUse(uses, b.ToolUseID) {
					repairs++
					continue
				}
				answered[b.ToolUseID] = true
				results = append(results, b)
			} else {
				rest = append(rest, b)
			}
		}
		ordered := make([]llm.Block, 0, len(uses)+len(rest))
		for _, u := range uses {
			found := false
			for _, r := range results {
				if r.ToolUseID == u.ToolUseID {
					ordered = append(ordered, r)
					found = true
					break
				}
			}
			if !found {
				repairs++
				ordered = append(ordered, llm.ToolResult(u.ToolUseID, true, llm.Text("Tool call interrupted: no result was recorded.")))
			}
		}
		ordered = append(ordered, rest...)
		out = append(out, llm.Message{Role: llm.RoleUser, Content: ordered})
	}
	return out, repairs
}

func hasUse(uses []llm.Block, id string) bool {
	for _, u := range uses {
		if u.ToolUseID == id {
			return true
		}
	}
	return false
}

// keepAnswered drops tool results that follow no matching tool_use.
func keepAnswered(content []llm.Block, prev []llm.Message) []llm.Block {
	var uses []llm.Block
	if n := len(prev); n > 0 && prev[n-1].Role == llm.RoleAssistant {
		uses = prev[n-1].ToolUses()
	}
	out := content[:0:0]
	for _, b := range content {
		if b.Type == llm.BlockToolResult && !hasUse(uses, b.ToolUseID) {
			continue
		}
		out = append(out, b)
	}
	return out
}
