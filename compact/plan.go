package compact

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/weft-run/weft/llm"
)

// Planner plans the compactions of one conversation's view. Its methods
// only read the view; each returns a Marker to record (Transcript.Record)
// and false when there is nothing to do.
type Planner struct {
	// Config, resolved (Config.Resolved).
	Config Config
	Budget Budget
	// Ratio is the provider's count over the estimate
	// (Accountant.Ratio): text is cut at bytesPerToken/Ratio bytes a
	// token. 0 means 1.
	Ratio float64
	// Recall says the model has the Recall tool: stubs and cuts say how
	// to read the output again with it.
	Recall bool
}

// BytesFor is how many bytes of text make tokens.
func (p *Planner) BytesFor(tokens int) int {
	return max(int(float64(tokens*bytesPerToken)/max(p.Ratio, 1)), 0)
}

// CapFor is the cap, in tokens, of one of n results of the named tool in
// a round; negative means none.
func (p *Planner) CapFor(name string, n int) int {
	if c, ok := p.Config.ToolCaps[name]; ok {
		return c
	}
	if p.Config.ToolShare < 0 {
		return -1
	}
	return max(p.Budget.Share(p.Config.ToolShare)/max(n, 1), 64)
}

// call is a tool call as stubs name it.
type call struct {
	name  string
	input json.RawMessage
}

func calls(view []llm.Message) map[string]call {
	out := make(map[string]call)
	for i := range view {
		if view[i].Role != llm.RoleAssistant {
			continue
		}
		for _, b := range view[i].Content {
			if b.Type == llm.BlockToolUse {
				out[b.ToolUseID] = call{name: b.ToolName, input: b.Input}
			}
		}
	}
	return out
}

// CapRound cuts the tool results of view[at] (a round's results, just
// added) to their caps: each keeps its beginning and end, and a note in
// the middle says how much was cut and how to read it.
func (p *Planner) CapRound(view []llm.Message, at int) (Marker, bool) {
	if at < 0 || at >= len(view) {
		return Marker{}, false
	}
	// Most rounds are under their caps: find that out without allocating
	// (this runs after every round).
	n, largest := 0, 0
	for i := range view[at].Content {
		if b := &view[at].Content[i]; b.Type == llm.BlockToolResult {
			n++
			largest = max(largest, EstimateBlock(b))
		}
	}
	if n == 0 || len(p.Config.ToolCaps) == 0 && (p.Config.ToolShare < 0 || largest <= p.CapFor("", n)) {
		return Marker{}, false
	}
	var results []llm.Block
	for _, b := range view[at].Content {
		if b.Type == llm.BlockToolResult {
			results = append(results, b)
		}
	}
	names := calls(view[max(at-1, 0) : at+1])
	m := Marker{Level: LevelToolCap}
	for _, b := range results {
		c := p.CapFor(names[b.ToolUseID].name, len(results))
		if c < 0 || EstimateBlock(&b) <= c {
			continue
		}
		if content, ok := p.cutResult(b, c); ok {
			m.Edits = append(m.Edits, Edit{ToolUseID: b.ToolUseID, Content: content, Kind: MetaCut})
		}
	}
	return m, len(m.Edits) > 0
}

// cutResult cuts a tool result's text to about tokens, keeping images.
func (p *Planner) cutResult(b llm.Block, tokens int) ([]llm.Block, bool) {
	text, images := splitContent(b.Content)
	keep := p.BytesFor(tokens-toolCallTokens-2*blockTokens-len(images)*(imageTokens+blockTokens)) - 200 // the note
	if keep >= len(text) {
		return nil, false
	}
	id := b.ToolUseID
	cut := cutMiddle(text, max(keep, 0), func(removed, offset int) string {
		s := fmt.Sprintf("\n\n[... %s characters cut here to keep the context window free", thousands(removed))
		if p.Recall {
			s += fmt.Sprintf("; Recall with id %q and offset %d returns them", id, offset)
		}
		return s + " ...]\n\n"
	})
	return append([]llm.Block{llm.Text(cut)}, images...), true
}

// splitContent joins a result's text blocks and returns its images.
func splitContent(content []llm.Block) (string, []llm.Block) {
	var texts []string
	var images []llm.Block
	for _, b := range content {
		switch b.Type {
		case llm.BlockText:
			texts = append(texts, b.Text)
		case llm.BlockImage:
			images = append(images, b)
		}
	}
	return strings.Join(texts, "\n"), images
}

// cutMiddle keeps about keep bytes of s, two thirds from its beginning and
// one third from its end, with note(characters removed, the offset in
// characters where they began) between them.
func cutMiddle(s string, keep int, note func(removed, offset int) string) string {
	if keep >= len(s) {
		return s
	}
	head := runeFloor(s, keep*2/3)
	tail := runeCeil(s, len(s)-(keep-head))
	if tail < head {
		tail = head
	}
	offset := utf8.RuneCountInString(s[:head])
	removed := utf8.RuneCountInString(s[head:tail])
	return s[:head] + note(removed, offset) + s[tail:]
}

// runeFloor is the largest rune boundary of s at or before i.
func runeFloor(s string, i int) int {
	if i >= len(s) {
		return len(s)
	}
	if i <= 0 {
		return 0
	}
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}

// runeCeil is the smallest rune boundary of s at or after i.
func runeCeil(s string, i int) int {
	if i <= 0 {
		return 0
	}
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return min(i, len(s))
}

// Micro stubs the tool results of view older than the latest keepRounds
// rounds (keepRounds <= 0: Config.KeepRounds) that are worth it: a result
// of a few dozen tokens gains nothing from a stub of as many.
func (p *Planner) Micro(view []llm.Message, keepRounds int) (Marker, bool) {
	if keepRounds <= 0 {
		keepRounds = p.Config.KeepRounds
	}
	protect := 0 // results from here on are kept
	for i, seen := len(view)-1, 0; i >= 0; i-- {
		if view[i].Role == llm.RoleAssistant && hasToolUse(&view[i]) {
			if seen++; seen == keepRounds {
				protect = i
				break
			}
		}
	}
	if protect == 0 {
		return Marker{}, false
	}
	names := calls(view[:protect])
	m := Marker{Level: LevelMicro}
	for i := 0; i < protect; i++ {
		for _, b := range view[i].Content {
			if b.Type != llm.BlockToolResult || b.MetaValue(MetaStub) != "" {
				continue
			}
			stub := p.stub(b, names[b.ToolUseID])
			if EstimateBlock(&b) < 2*(EstimateText(stub)+toolCallTokens+2*blockTokens) {
				continue
			}
			m.Edits = append(m.Edits, Edit{ToolUseID: b.ToolUseID, Content: []llm.Block{llm.Text(stub)}, Kind: MetaStub})
		}
	}
	return m, len(m.Edits) > 0
}

func hasToolUse(m *llm.Message) bool {
	for _, b := range m.Content {
		if b.Type == llm.BlockToolUse {
			return true
		}
	}
	return false
}

func hasToolResult(m *llm.Message) bool {
	for _, b := range m.Content {
		if b.Type == llm.BlockToolResult {
			return true
		}
	}
	return false
}

// stub is the one line that stands for a removed tool result: what it
// was and how to get it back. It is built in one buffer: micro writes one
// per old result, hundreds at a time.
func (p *Planner) stub(b llm.Block, c call) string {
	text, images := splitContent(b.Content)
	buf := make([]byte, 0, 320)
	buf = append(buf, "[The "...)
	if b.IsError {
		buf = append(buf, "error "...)
	}
	buf = append(buf, "output of "...)
	if c.name != "" {
		buf = append(buf, c.name...)
		if args := oneLine(string(c.input), 80); args != "" && args != "{}" {
			buf = append(buf, ' ')
			buf = append(buf, args...)
		}
	} else {
		buf = append(buf, "a tool call"...)
	}
	buf = append(buf, " ("...)
	buf = appendThousands(buf, utf8.RuneCountInString(text))
	buf = append(buf, " characters"...)
	if len(images) > 0 {
		buf = append(buf, ", "...)
		buf = strconv.AppendInt(buf, int64(len(images)), 10)
		buf = append(buf, " images"...)
	}
	if first := oneLine(text, 60); first != "" {
		buf = append(buf, ", beginning "...)
		buf = strconv.AppendQuote(buf, first)
	}
	buf = append(buf, ") was removed from the context to save space. "...)
	if p.Recall {
		buf = append(buf, "Call Recall with id "...)
		buf = strconv.AppendQuote(buf, b.ToolUseID)
		buf = append(buf, " to read it again.]"...)
	} else {
		buf = append(buf, "Run the call again if you need it.]"...)
	}
	return string(buf)
}

// oneLine is s's first non-empty line, cut to n bytes.
func oneLine(s string, n int) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	if len(s) > n {
		s = s[:runeFloor(s, n)] + "..."
	}
	return s
}

// thousands formats n with comma separators.
func thousands(n int) string { return string(appendThousands(nil, n)) }

func appendThousands(buf []byte, n int) []byte {
	if n < 0 {
		buf = append(buf, '-')
		n = -n
	}
	var digits [24]byte
	d := strconv.AppendInt(digits[:0], int64(n), 10)
	for i, c := range d {
		if i > 0 && (len(d)-i)%3 == 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, c)
	}
	return buf
}

// Truncate cuts every message of view estimated over maxTokens: each of
// its blocks over its share keeps its beginning and end (a tool result,
// text, a tool call's long string arguments); images go. Thinking blocks
// are left whole: providers refuse a changed one.
func (p *Planner) Truncate(view []llm.Message, maxTokens int) (Marker, bool) {
	m := Marker{Level: LevelTruncate}
	for i := range view {
		msg := &view[i]
		if EstimateMessage(msg) <= maxTokens {
			continue
		}
		share := max(maxTokens/max(len(msg.Content), 1), 64)
		for j, b := range msg.Content {
			if EstimateBlock(&b) <= share {
				continue
			}
			switch b.Type {
			case llm.BlockToolResult:
				if content, ok := p.cutResult(llm.Block{ToolUseID: b.ToolUseID, Content: textOnly(b.Content)}, share); ok {
					m.Edits = append(m.Edits, Edit{ToolUseID: b.ToolUseID, Content: content, Kind: MetaCut})
				}
			case llm.BlockText:
				keep := p.BytesFor(share-blockTokens) - 120
				if keep < len(b.Text) {
					text := cutMiddle(b.Text, max(keep, 0), func(removed, _ int) string {
						return fmt.Sprintf("\n\n[... %s characters cut here: the message was too long for the context window ...]\n\n", thousands(removed))
					})
					m.Edits = append(m.Edits, Edit{Msg: i, Block: j, Text: text, Kind: MetaCut})
				}
			case llm.BlockImage:
				m.Edits = append(m.Edits, Edit{Msg: i, Block: j, Text: "[an image was removed: the message was too long for the context window]", Kind: MetaCut})
			case llm.BlockToolUse:
				if input, ok := cutInput(b.Input, p.BytesFor(share-toolCallTokens-blockTokens)); ok {
					m.Edits = append(m.Edits, Edit{Msg: i, Block: j, Input: input, Kind: MetaCut})
				}
			}
		}
	}
	return m, len(m.Edits) > 0
}

// textOnly drops a result's images (Truncate's last resort).
func textOnly(content []llm.Block) []llm.Block {
	var out []llm.Block
	n := 0
	for _, b := range content {
		if b.Type == llm.BlockImage {
			n++
			continue
		}
		out = append(out, b)
	}
	if n > 0 {
		out = append(out, llm.Text(fmt.Sprintf("[%d images removed: the output was too long for the context window]", n)))
	}
	return out
}

// cutInput cuts the long string values of a tool call's JSON object
// arguments so that the whole is about keep bytes; the arguments stay a
// JSON object.
func cutInput(input json.RawMessage, keep int) (json.RawMessage, bool) {
	if len(input) <= keep {
		return nil, false
	}
	var args map[string]any
	if json.Unmarshal(input, &args) != nil {
		return json.RawMessage(`{}`), true
	}
	over := len(input) - keep
	for k, v := range args {
		s, ok := v.(string)
		if !ok || len(s) < 256 || over <= 0 {
			continue
		}
		keepHere := max(len(s)-over-100, 64)
		args[k] = cutMiddle(s, keepHere, func(removed, _ int) string {
			return fmt.Sprintf("\n[... %s characters cut from the history: too long for the context window ...]\n", thousands(removed))
		})
		over -= len(s) - keepHere
	}
	out, err := json.Marshal(args)
	if err != nil {
		return json.RawMessage(`{}`), true
	}
	return out, true
}

// validStart reports whether a kept tail may begin at view[i]: at an
// assistant message, or at a user message that answers no tool call, so
// that no tool result is kept without its call.
func validStart(view []llm.Message, i int) bool {
	m := &view[i]
	return m.Role == llm.RoleAssistant || m.Role == llm.RoleUser && !hasToolResult(m)
}

// Split is where the kept tail of view begins for a summary: the earliest
// point from which the rest fits tailTokens, but never later than the
// last message that may begin a tail (the latest round is always kept
// whole), and never so early that nothing is left to summarise: when all
// of it fits, the tail begins at the second place it may. 0 means there is
// nothing before the tail to summarise.
func (p *Planner) Split(view []llm.Message, tailTokens int) int {
	best, next, size := 0, 0, 0
	for i := len(view) - 1; i >= 1; i-- {
		size += EstimateMessage(&view[i])
		if !validStart(view, i) {
			continue
		}
		if best != 0 && size > tailTokens {
			break
		}
		best, next = i, best
	}
	if best <= 1 {
		// view[1:next] is the least there is to summarise.
		return next
	}
	return best
}

// MaxMessages keeps at most n messages of view: the first user message
// (with the user's messages from the dropped part carried over verbatim)
// and the latest ones, from a point that separates no tool call from its
// result (which may keep one more than n).
func (p *Planner) MaxMessages(view []llm.Message, n int) (Marker, bool) {
	if n <= 0 || len(view) <= n {
		return Marker{}, false
	}
	start := max(len(view)-(n-1), 1)
	at := 0
	for i := start; i < len(view); i++ {
		if validStart(view, i) {
			at = i
			break
		}
	}
	for i := start - 1; at == 0 && i >= 1; i-- {
		if validStart(view, i) {
			at = i
		}
	}
	if at <= 1 {
		return Marker{}, false
	}
	note := fmt.Sprintf("%d earlier messages were left out to keep the conversation within its message limit", at-1)
	first := p.FirstMessage(view, at, "", note)
	return Marker{Level: LevelMaxMessages, Segments: []Segment{{Message: &first}, {From: at, To: len(view)}}}, true
}

// Summarized is the summary level: view's first message with summary and
// the user's messages before split, then view from split on.
func (p *Planner) Summarized(view []llm.Message, split int, summary string) Marker {
	first := p.FirstMessage(view, split, summary, "")
	return Marker{Level: LevelSummary, Segments: []Segment{{Message: &first}, {From: split, To: len(view)}}}
}

// Dropped is the summary level without a summary: the messages before
// split are dropped, the user's among them carried over verbatim, and
// note says why.
func (p *Planner) Dropped(view []llm.Message, split int, note string) Marker {
	first := p.FirstMessage(view, split, "", fmt.Sprintf("%d earlier messages were left out: %s", split-1, note))
	return Marker{Level: LevelSummary, Note: note, Segments: []Segment{{Message: &first}, {From: split, To: len(view)}}}
}

// FirstMessage is view[0] as a compaction that drops view[1:split] leaves
// it: the user's first message as it was, then the summary (the new one,
// else the earlier one), the user's messages carried over verbatim (the
// earlier ones and those of view[1:split], within Config.UserShare), and
// a note.
func (p *Planner) FirstMessage(view []llm.Message, split int, summary, note string) llm.Message {
	var blocks []llm.Block
	var old *llm.Block
	var carried []string
	for _, b := range view[0].Content {
		switch b.MetaValue(MetaSummary) {
		case "":
			blocks = append(blocks, b)
		case "summary":
			old = &b
		case "user_messages":
			_ = json.Unmarshal([]byte(b.MetaValue(MetaUserMessages)), &carried)
		}
	}
	carried = p.fitUserMessages(append(carried, userTexts(view[1:min(split, len(view))])...))
	switch {
	case summary != "":
		blocks = append(blocks, summaryBlock(summary))
	case old != nil:
		blocks = append(blocks, *old)
	}
	if len(carried) > 0 {
		blocks = append(blocks, userMessagesBlock(carried))
	}
	if note != "" {
		b := llm.Text("[weft: " + note + ".]")
		b.Meta = map[string]string{MetaSummary: "note"}
		blocks = append(blocks, b)
	}
	return llm.Message{Role: llm.RoleUser, Content: blocks}
}

// SummaryHeader and UserMessagesHeader open the blocks a summary adds.
const (
	SummaryHeader      = "[weft: the earlier part of this conversation was compacted to fit the context window; this summary replaces it.]\n\n"
	UserMessagesHeader = "[weft: the messages the user sent in the compacted part of the conversation, verbatim, oldest first. Their instructions still apply.]\n"
)

func summaryBlock(summary string) llm.Block {
	b := llm.Text(SummaryHeader + strings.TrimSpace(summary))
	b.Meta = map[string]string{MetaSummary: "summary"}
	return b
}

func userMessagesBlock(msgs []string) llm.Block {
	var sb strings.Builder
	sb.WriteString(UserMessagesHeader)
	for i, m := range msgs {
		fmt.Fprintf(&sb, "\n%d. %s\n", i+1, m)
	}
	data, _ := json.Marshal(msgs)
	b := llm.Text(sb.String())
	b.Meta = map[string]string{MetaSummary: "user_messages", MetaUserMessages: string(data)}
	return b
}

// userTexts are the user's own texts in msgs: not tool results, not the
// engine's notes ("[system: ...]"), not an earlier compaction's blocks.
func userTexts(msgs []llm.Message) []string {
	var out []string
	for i := range msgs {
		if msgs[i].Role != llm.RoleUser {
			continue
		}
		for _, b := range msgs[i].Content {
			if b.Type != llm.BlockText || b.MetaValue(MetaSummary) != "" {
				continue
			}
			t := strings.TrimSpace(b.Text)
			if t == "" || strings.HasPrefix(t, "[system:") {
				continue
			}
			out = append(out, t)
		}
	}
	return out
}

// fitUserMessages keeps the latest of msgs within Config.UserShare, each
// cut to a quarter of it.
func (p *Planner) fitUserMessages(msgs []string) []string {
	budget := p.Budget.Share(p.Config.UserShare)
	each := p.BytesFor(budget / 4)
	total := 0
	start := len(msgs)
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if len(m) > each {
			m = cutMiddle(m, max(each-80, 0), func(removed, _ int) string {
				return fmt.Sprintf(" [... %s characters cut ...] ", thousands(removed))
			})
			msgs[i] = m
		}
		t := EstimateText(m) + 4
		if total+t > budget {
			break
		}
		total += t
		start = i
	}
	return msgs[start:]
}

// FilesTouched lists the paths named in the tool calls of msgs (file_path,
// path, notebook_path arguments), in first-seen order, at most limit.
func FilesTouched(msgs []llm.Message, limit int) []string {
	seen := map[string]bool{}
	var out []string
	for i := range msgs {
		for _, b := range msgs[i].Content {
			if b.Type != llm.BlockToolUse {
				continue
			}
			var args map[string]any
			if json.Unmarshal(b.Input, &args) != nil {
				continue
			}
			for _, k := range []string{"file_path", "path", "notebook_path"} {
				if s, ok := args[k].(string); ok && s != "" && !seen[s] && len(out) < limit {
					seen[s] = true
					out = append(out, s)
				}
			}
		}
	}
	return out
}
