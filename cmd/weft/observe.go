//go:build !nootel

package main

import (
	"context"
	"time"

	"github.com/weft-run/weft/observe"
	"github.com/weft-run/weft/observe/otelobs"
)

// observeFlushTimeout bounds how long weft waits at exit for the spans
// still batched to reach the collector.
const observeFlushTimeout = 5 * time.Second

// cliObserver is the observer of weft run and chat: OpenTelemetry traces
// over OTLP/HTTP when the environment names a collector
// (OTEL_EXPORTER_OTLP_ENDPOINT; docs/operations.md), else none. closeFn
// flushes what is batched.
func cliObserver(env environ) (obs observe.Observer, closeFn func() error, err error) {
	o, shutdown, err := otelobs.FromEnv(context.Background(), env.getenv, version())
	if err != nil || o == nil {
		return nil, func() error { return nil }, err
	}
	return o, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), observeFlushTimeout)
		defer cancel()
		return shutdown(ctx)
	}, nil
}
