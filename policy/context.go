package policy

import (
	"context"

	"github.com/weft-run/weft/policy/permission"
)

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

// ReadFilter returns the test a tool applies before it shows the model a
// file, under the rules of the caller ctx carries: it reports whether
// the file at path (absolute and resolved: a path found by a walk that
// follows no links, or a link's resolved target) may be shown. Tools that
// find files themselves (Grep, Glob, Read's "did you mean") apply it to
// each file, and Read applies it again when it opens the file, so a
// Read(...) rule holds for every way a file's name or content reaches
// the model.
//
// A file a Read deny rule covers is never shown. One a Read ask rule
// covers is shown only when an ask rule also covers root, what the call
// itself named (the file read, the directory searched; "" for none): the
// person was asked about the call, and so about what it finds there,
// while a search of the whole workspace does not show files it would
// have had to ask about. Without a caller (a tool run directly, outside
// any policy) every file may be shown.
func ReadFilter(ctx context.Context, root string) func(path string) bool {
	c, ok := CallerFrom(ctx)
	if !ok {
		return func(string) bool { return true }
	}
	p := c.Policy
	rc := permission.NewReadChecker(p.Rules, permission.Call{Workspace: p.Workspace, ExtraDirs: p.ExtraDirs})
	askedRoot := root != "" && rc.Verdict(root) == permission.Ask
	return func(path string) bool {
		switch rc.Verdict(path) {
		case permission.Deny:
			return false
		case permission.Ask:
			return askedRoot
		}
		return true
	}
}

// PathChecked reports whether ctx carries a caller, that is whether the
// call's input went through the policy, which replaced the paths of
// weft's file tools by the resolved paths it judged
// (permission.ResolvedInput). A tool that is given such a path and finds
// it resolving elsewhere when it runs must refuse it: a symlink was
// swapped in after the check.
func PathChecked(ctx context.Context) bool {
	_, ok := CallerFrom(ctx)
	return ok
}
