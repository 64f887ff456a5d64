// Package shell reads a Bash command the way the permission layer needs to:
// as the list of simple commands it would run and the files it would write,
// without running anything.
//
// Analyze parses with mvdan.cc/sh and walks the whole syntax tree, so a
// command hidden in a chain, a pipe, a subshell, a loop body, a function, a
// command substitution or a process substitution is found like any other.
// Wrappers that only change how a command runs (env, timeout, nice, xargs,
// sudo, bash -c 'literal', eval 'literal', ...) are seen through, so a rule
// about "rm" still applies to "timeout 5 sudo rm". Output redirections are
// reported as writes so file rules can apply to them.
//
// Static analysis cannot know everything a script does. Whenever something
// that matters cannot be resolved (a command name held in a variable, a
// script passed to bash -c in a variable, a shell reading its script from a
// pipe, a write to a computed path), Analyze says so in Analysis.Problems
// rather than guessing; the permission layer asks a person in that case.
//
// Classify is the danger floor: commands that can destroy data or the
// machine (rm -rf on broad targets, writes to disks, mkfs, fork bombs) are
// Catastrophic and commands that are risky but sometimes needed (rm -r,
// sudo, kill, git push --force, curl | sh) are Dangerous. The permission
// layer never lets an allow rule open either.
package shell
