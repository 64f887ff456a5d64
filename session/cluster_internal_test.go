package session

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/weft-run/weft/record"
)

// TestCommandResultErrors: an error the owner returns reaches the node
// that sent the command as the same kind of error (the status a front
// door answers with depends on it), through the JSON the store keeps.
func TestCommandResultErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		same func(error) bool
	}{
		{nil, func(err error) bool { return err == nil }},
		{ErrNotFound, func(err error) bool { return errors.Is(err, ErrNotFound) }},
		{ErrAnswered, func(err error) bool { return errors.Is(err, ErrAnswered) }},
		{ErrNotBudget, func(err error) bool { return errors.Is(err, ErrNotBudget) }},
		{&record.InvalidError{Err: errors.New("bad content")}, func(err error) bool {
			var inv *record.InvalidError
			return errors.As(err, &inv) && inv.Err.Error() == "bad content"
		}},
		{errors.New("disk on fire"), func(err error) bool { return err != nil && err.Error() == "disk on fire" }},
	} {
		b, err := json.Marshal(resultOf(tc.err))
		if err != nil {
			t.Fatal(err)
		}
		var back commandResult
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if got := back.err(); !tc.same(got) {
			t.Errorf("%v came back as %v (%s)", tc.err, got, b)
		}
	}
}
