// Package shell reads a Bash command the way the permission layer needs to:
// as the simple commands it would run and the files it would read and
// write, without running anything.
//
// Analyze parses with mvdan.cc/sh and walks the whole syntax tree, so a
// command hidden in a chain, a pipe, a subshell, a loop body, a function, a
// command substitution or a process substitution is found like any other.
// It models what bash does rather than what the text looks like:
//
//   - Wrappers that only change how a command runs (env, timeout, nice,
//     xargs, sudo, flock, script -c, watch, ...) are seen through, their
//     options parsed as getopt_long parses them (wrappers.go, getopt.go),
//     so a rule about "rm" still applies to "timeout --sig KILL 5 rm".
//   - Scripts given as strings (bash -c, eval, trap, alias, mapfile -C,
//     PAGER=..., git -c core.pager=...) are analyzed as scripts.
//   - Every command's file descriptors are followed as bash sets them up
//     (redirect.go): the last redirection of fd 0 decides which script a
//     shell reads.
//   - Values bash evaluates as code (arithmetic, subscripts, ${!x},
//     ${x@P}) are checked against every value the script can assign
//     (vars.go).
//   - Words only known when the command runs and globs are kept as
//     patterns (pattern.go), so a deny rule can tell whether it might
//     match them.
//   - Output redirections are writes; input redirections and the operands
//     of commands known to read files are reads (reads.go).
//
// Static analysis cannot know everything a script does. Whenever something
// that matters cannot be resolved, Analyze says so in Analysis.Problems
// rather than guessing; the permission layer asks a person in that case.
// When what it cannot see is code that may run (a script in a variable, a
// shell reading a pipe), it is also in Analysis.Opaque, and a deny rule
// might match it.
//
// Classify is the danger floor: commands that can destroy data or the
// machine (rm -rf on broad targets, writes to disks, mkfs, fork bombs) are
// Catastrophic and commands that are risky but sometimes needed (rm -r,
// sudo, kill, git push --force, curl | sh) are Dangerous. The permission
// layer never lets an allow rule open either.
package shell
