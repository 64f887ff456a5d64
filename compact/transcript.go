package compact

import (
	"github.com/weft-run/weft/llm"
)

// Transcript is the full record of a conversation whose view (what the
// model is sent) is compacted: the original messages and, where each
// compaction happened, its marker, in one list that only grows. Replaying
// it (View) gives the view; cutting it before a marker and replaying gives
// the view as it was before that compaction.
//
// The transcript is held as the part up to the last marker (log) and the
// view's messages added since, which the session appends to its view as
// usual; History puts the two together. It is not safe for concurrent
// use.
type Transcript struct {
	log []llm.Message
	// The view's extent right after the last marker: its length and the
	// blocks of its last message. What the view holds beyond it was added
	// since (a later message can be merged into the last one).
	baseN, baseBlocks int
}

// Restore replays history, a transcript or a plain list of messages, into
// the transcript and the view.
func Restore(history []llm.Message) (Transcript, []llm.Message) {
	var t Transcript
	var view []llm.Message
	last := -1
	for i := range history {
		if m, ok := ParseMarker(&history[i]); ok {
			view = m.Apply(view)
			last = i
			t.setBase(view)
			continue
		}
		if IsMarker(&history[i]) {
			continue // unreadable: skipped, as if it never was
		}
		view = appendMerged(view, history[i])
	}
	if last >= 0 {
		t.log = append([]llm.Message(nil), history[:last+1]...)
	}
	return t, view
}

// View is what the model is sent of history, a transcript.
func View(history []llm.Message) []llm.Message {
	_, v := Restore(history)
	return v
}

func (t *Transcript) setBase(view []llm.Message) {
	t.baseN, t.baseBlocks = len(view), 0
	if n := len(view); n > 0 {
		t.baseBlocks = len(view[n-1].Content)
	}
}

// pending is what view holds beyond the last marker.
func (t *Transcript) pending(view []llm.Message) []llm.Message {
	if len(view) < t.baseN {
		return nil
	}
	var out []llm.Message
	if t.baseN > 0 {
		if last := view[t.baseN-1]; len(last.Content) > t.baseBlocks {
			out = append(out, llm.Message{Role: last.Role, Content: last.Content[t.baseBlocks:]})
		}
	}
	return append(out, view[t.baseN:]...)
}

// History is the transcript: the log and what view added since.
func (t *Transcript) History(view []llm.Message) []llm.Message {
	p := t.pending(view)
	out := make([]llm.Message, 0, len(t.log)+len(p))
	return append(append(out, t.log...), p...)
}

// Compacted reports whether the transcript holds a marker.
func (t *Transcript) Compacted() bool { return len(t.log) > 0 }

// Record applies m to view and writes it into the transcript, after the
// originals of what view added since the last marker. It returns the new
// view and the marker's index in History.
func (t *Transcript) Record(view []llm.Message, m Marker) ([]llm.Message, int) {
	t.log = append(t.log, t.pending(view)...)
	at := len(t.log)
	t.log = append(t.log, m.Message())
	next := m.Apply(view)
	t.setBase(next)
	return next, at
}

// Original returns the tool result with id as it was before any
// compaction changed it: from the view when it is whole there, else from
// the transcript.
func (t *Transcript) Original(view []llm.Message, id string) (llm.Block, bool) {
	if b, ok := findResult(view, id); ok {
		return b, true
	}
	return findResult(t.log, id)
}

// findResult finds the latest unchanged tool result with id in msgs.
func findResult(msgs []llm.Message, id string) (llm.Block, bool) {
	for i := len(msgs) - 1; i >= 0; i-- {
		if IsMarker(&msgs[i]) {
			continue
		}
		for _, b := range msgs[i].Content {
			if b.Type == llm.BlockToolResult && b.ToolUseID == id && b.MetaValue(MetaStub) == "" && b.MetaValue(MetaCut) == "" {
				return b, true
			}
		}
	}
	return llm.Block{}, false
}

// Reset empties the transcript.
func (t *Transcript) Reset() { *t = Transcript{} }
