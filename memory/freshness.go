package memory

import (
	"fmt"
	"strings"
	"time"
)

// FreshnessConfig says when a memory entry is old enough for the prompt
// to warn that it may be out of date (seed 000's FreshnessConfig). A
// memory is a point-in-time observation: a file path, a flag or a
// decision it records may have changed since.
type FreshnessConfig struct {
	// GlobalThreshold is the age past which an entry is stale; 0 means
	// every entry is.
	GlobalThreshold time.Duration
	// TypeOverrides replace GlobalThreshold for entries of a type (e.g.
	// "project" memories go stale faster than "user" ones).
	TypeOverrides map[string]time.Duration
}

// DefaultFreshnessThreshold is DefaultFreshnessConfig's GlobalThreshold.
const DefaultFreshnessThreshold = 24 * time.Hour

// DefaultFreshnessConfig warns about entries older than a day.
func DefaultFreshnessConfig() FreshnessConfig {
	return FreshnessConfig{GlobalThreshold: DefaultFreshnessThreshold}
}

// ThresholdFor is the staleness threshold of entries of type t.
func (c FreshnessConfig) ThresholdFor(t Type) time.Duration {
	if d, ok := c.TypeOverrides[string(t)]; ok {
		return d
	}
	return c.GlobalThreshold
}

// ShouldWarn reports whether an entry last modified at modTime is stale
// at now. A modification time in the future (clock skew, a copied file)
// counts as fresh.
func ShouldWarn(modTime, now time.Time, threshold time.Duration) bool {
	age := now.Sub(modTime)
	if age < 0 {
		return false
	}
	return threshold <= 0 || age > threshold
}

// ageText is the entry's age in whole days, or in whole hours under two
// days: coarse on purpose, so that the prompt's bytes (and the provider's
// prompt cache) do not change with every call.
func ageText(age time.Duration) string {
	switch {
	case age < time.Hour:
		return "less than an hour"
	case age < 2*time.Hour:
		return "1 hour"
	case age < 48*time.Hour:
		return fmt.Sprintf("%d hours", int(age/time.Hour))
	}
	return fmt.Sprintf("%d days", int(age/(24*time.Hour)))
}

// FreshnessText is the warning for a stale entry, "" for a fresh one.
func FreshnessText(modTime, now time.Time, threshold time.Duration) string {
	if !ShouldWarn(modTime, now, threshold) {
		return ""
	}
	return "This memory is " + ageText(now.Sub(modTime)) + " old. Memories are point-in-time observations, not live state: " +
		"what it says about code, files or behaviour may be outdated. Verify it against the current state before relying on it or asserting it as fact."
}

// FreshnessNote is FreshnessText wrapped in <system-reminder> tags, as the
// prompt carries it; "" when no warning is needed.
func FreshnessNote(modTime, now time.Time, threshold time.Duration) string {
	t := FreshnessText(modTime, now, threshold)
	if t == "" {
		return ""
	}
	return "<system-reminder>" + t + "</system-reminder>"
}

// IndexAnnotation is what MEMORY.md adds at the end of a stale entry's
// line (with its leading space); "" for a fresh one.
func IndexAnnotation(modTime, now time.Time, threshold time.Duration) string {
	if !ShouldWarn(modTime, now, threshold) {
		return ""
	}
	return " (stale: " + ageText(now.Sub(modTime)) + " old, verify before use)"
}

// Limits of the MEMORY.md index.
const (
	MaxIndexLines = 200
	MaxIndexBytes = 25 << 10
)

// TruncateIndex caps MEMORY.md at MaxIndexLines lines and MaxIndexBytes
// bytes (whichever is hit first), cutting at a line boundary, and says so
// in a WARNING line at the end. It reports whether it cut anything.
func TruncateIndex(content string) (string, bool) {
	lines := strings.SplitAfter(content, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	const warnRoom = 200 // the warning itself must fit in the byte cap
	size, keep := 0, 0
	for keep < len(lines) && keep < MaxIndexLines && size+len(lines[keep]) <= MaxIndexBytes {
		size += len(lines[keep])
		keep++
	}
	if keep == len(lines) {
		return content, false
	}
	// Make room for the warning inside both caps.
	for keep > 0 && (keep+2 > MaxIndexLines || size+warnRoom > MaxIndexBytes) {
		keep--
		size -= len(lines[keep])
	}
	var b strings.Builder
	for _, l := range lines[:keep] {
		b.WriteString(l)
	}
	if s := b.String(); s != "" && !strings.HasSuffix(s, "\n") {
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "\nWARNING: MEMORY.md is longer than %d lines or %d KB; %d of its %d lines are not shown. Keep the index short: one line per entry.\n",
		MaxIndexLines, MaxIndexBytes>>10, len(lines)-keep, len(lines))
	return b.String(), true
}
