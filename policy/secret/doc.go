// Package secret keeps secrets out of what weft shows, stores and writes.
//
// It has two halves. A [Set] holds named secret values a caller registered
// (engine-wide, or per run with [Set.With]): they are handed to Bash as
// environment variables through [Set.Env], and every registered value is
// replaced by "[SECRET:NAME]" wherever text leaves the engine: tool results
// ([Set.Redact]), JSON payloads of events and persisted rows
// ([Set.RedactJSON]), streamed deltas split at arbitrary points
// ([Set.NewStream]) and log records ([NewHandler]).
//
// A [Guard] looks for secrets nobody registered, in content a tool is about
// to write to disk: [DefaultGuard] applies [BuiltinRules] (cloud keys,
// private key blocks, SaaS and package registry tokens, JWTs, database URLs
// with passwords, generic high-entropy assignments) plus custom rules from
// [CompileRules]. A match names its rule for logs and tests only: messages a
// model or user sees say how many secrets were found, never which rule
// fired, so the rule set cannot be probed for blind spots.
package secret
