package permission

import (
	"fmt"
	"strings"
)

// Mode is the coarse permission setting a session runs under (seed 004's
// matrix). The zero value behaves as ModeDefault.
type Mode string

const (
	// ModeDefault runs read-only tools and asks for everything else.
	ModeDefault Mode = "default"
	// ModePlan runs read-only tools and refuses anything that changes
	// something: the model can look around and plan, not act.
	ModePlan Mode = "plan"
	// ModeAuto also runs file edits inside the workspace and the extra
	// directories unasked; shell commands and the rest still ask.
	ModeAuto Mode = "auto"
	// ModeBypass asks nothing. Deny rules still apply; nothing else does.
	// It must be chosen explicitly.
	ModeBypass Mode = "bypass"
)

// ParseMode parses a mode name: weft's (default, plan, auto, bypass) or
// Claude Code's (acceptEdits = auto, bypassPermissions = bypass). Case is
// ignored; "" is ModeDefault.
func ParseMode(s string) (Mode, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "default":
		return ModeDefault, nil
	case "plan":
		return ModePlan, nil
	case "auto", "acceptedits":
		return ModeAuto, nil
	case "bypass", "bypasspermissions":
		return ModeBypass, nil
	}
	return "", fmt.Errorf("unknown permission mode %q: use default, plan, auto or bypass (Claude Code's acceptEdits and bypassPermissions also work)", s)
}

// Verdict is what to do with a tool call.
type Verdict string

const (
	Allow Verdict = "allow" // run it
	Ask   Verdict = "ask"   // ask a person (the approve function)
	Deny  Verdict = "deny"  // refuse it; the model sees Reason
)

// Stages name the step of Evaluate that decided.
const (
	StageDenyRule   = "deny_rule"
	StageAskRule    = "ask_rule"
	StageAllowRule  = "allow_rule"
	StageMode       = "mode"
	StageFloor      = "floor"
	StageUnresolved = "unresolved"
	StageProtected  = "protected" // a write to weft's or git's own configuration
)

// Decision is Evaluate's answer.
type Decision struct {
	Verdict Verdict
	// Reason is one line a person understands and the model can act on.
	Reason string
	// Rule is the deciding rule in canonical form ("" if no rule decided);
	// when several allow rules together cover a command chain, they are
	// listed separated by ", ".
	Rule string
	// Stage is the step that decided: one of the Stage constants.
	Stage string
}
