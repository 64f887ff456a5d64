package policy

import "context"

// Caller is the policy a tool call runs under, with its human and
// checkpoint, carried in the tool's context so that a tool which makes
// tool calls of its own (a published workflow, a sub-agent) puts them
// through the same pipeline: nothing nested escapes the caller's rules.
type Caller struct {
	Policy     *Policy
	Human      Human
	Checkpoint Checkpoint
}

type callerKey struct{}

// WithCaller returns ctx carrying c.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the caller ctx carries, if any.
func CallerFrom(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(Caller)
	return c, ok && c.Policy != nil
}
