package event

// Suggestions is appended to a session's event log after a turn's done
// event when the turn-end pipeline (package turnend) produced follow-up
// prompts: up to three short next prompts the user might send. It is
// advisory: a client that ignores it misses nothing of the turn.
const Suggestions = "suggestions"

// SuggestionsData is the payload of a suggestions event; the web UI
// renders exactly this shape.
type SuggestionsData struct {
	Suggestions []string `json:"suggestions"`
}
