// Package hook runs lifecycle hooks: user-configured shell commands, HTTP
// endpoints and Go callbacks that observe (and for some events steer) what
// the agent does.
//
// Hooks come from Claude Code settings files ({"hooks": {"PreToolUse":
// [...]}}), from FengYu's flat list ({name, event, matcher, type,
// command|url, timeoutSeconds, enabled}), from plugins (hooks/hooks.json in
// either shape) and from SDK callers (Def.Func). Scripts written for Claude
// Code run unchanged: they get the same JSON envelope on stdin, the same
// exit-code contract and the same stdout JSON vocabulary.
//
// The contract, uniform across events:
//   - exit 0 lets the action proceed; stdout JSON, if any, is honoured
//     (decision, permissionDecision, hookSpecificOutput, reason,
//     updatedInput, additionalContext, continue:false);
//   - exit 2 denies, with the first line of stderr as the reason;
//   - a deny in stdout JSON denies whatever the exit code;
//   - everything else (other exit codes, crashes, a command that cannot
//     start, timeouts, HTTP errors, Go errors and panics) fails open: the
//     failure is logged and the action proceeds. A broken hook is not a
//     threat we defend against (seed 001); turning every crash into a
//     blocked call would make hooks a self-inflicted outage.
//
// What a verdict means is up to the caller: deny on pre_tool_use blocks the
// call, on stop it keeps the agent going with the reason as feedback, on
// post_tool_use it is feedback about a call that already ran.
//
// Plugin hooks are registered but run only while their plugin is trusted
// (Manager.Trust); global hooks always run first.
package hook
