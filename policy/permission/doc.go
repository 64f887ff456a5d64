// Package permission decides whether a tool call runs, asks a person, or
// is refused: the deny rules -> ask rules -> allow rules -> mode default
// part of weft's policy pipeline (hooks, the human and checkpoints are
// other stages).
//
// Evaluate works in a fixed order, and the order is the design:
//
//  1. Deny rules first, and for a Bash command a deny rule matches when it
//     might match ANY part: any simple command of a chain, any file it
//     reads or writes, whatever the words only known when it runs turn out
//     to be, and any code the shell analysis cannot see (bash.go). Deny
//     wins whatever order rules were declared in, and whatever the mode: a
//     user's "never" must not depend on anything else.
//  2. bypass mode allows everything not denied; it is the explicit "I
//     know what I am doing" switch.
//  3. The danger floor (package shell's Classify): catastrophic commands
//     (rm -rf /, writes to disks, mkfs, fork bombs) are denied; dangerous
//     ones (rm -r, sudo, git push --force, curl | sh) always ask. It comes
//     before the allow rules so that no allow rule, however broad, opens it.
//  4. Ask rules, matching any part, like deny rules.
//  5. A command the shell analysis could not resolve (a command name in a
//     variable, bash -c "$X", a pipe into sh) asks: rules cannot vouch for
//     what they cannot see.
//  6. Allow rules, and for Bash EVERY part must be allowed, whatever its
//     unknown words turn out to be: Bash(git status) allows "git status"
//     but not "git status && rm -rf x" nor "git $X".
//  7. The mode's default (seed 004): read-only tools run in every mode;
//     plan refuses everything else; default asks; auto runs file edits
//     inside the workspace and the extra directories and asks for the rest.
//
// Each step is a method of Evaluation, the analysis of one call (its input's
// fields, the shell parse, the resolved paths) made once and shared by the
// steps, with one shape (Step) so that package policy runs them as stages
// of its pipeline; Evaluate is the steps in this order.
//
// Where a rule cannot tell whether it applies (a path it cannot resolve, a
// URL it cannot parse), deny and ask rules count as matching and allow
// rules do not: every doubt resolves towards asking.
//
// Rules use Claude Code's syntax (Bash(npm run test:*), Read(./src/**),
// WebFetch(domain:example.com), mcp__server) plus seed 001's
// (Command(git:*), Tool(excel_*), Effect(read), Mcp(github__*)); see
// ParseRule.
package permission
