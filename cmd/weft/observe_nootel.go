//go:build nootel

package main

import (
	"fmt"

	"github.com/weft-run/weft/observe"
)

// cliObserver of a binary built with -tags nootel (no OpenTelemetry
// linked in, about 5 MB smaller; docs/dependencies.md): a collector named
// in the environment is reported, not used.
func cliObserver(env environ) (observe.Observer, func() error, error) {
	if env.getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || env.getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" {
		fmt.Fprintln(env.stderr, "weft: this binary was built without OpenTelemetry (-tags nootel); OTEL_EXPORTER_OTLP_ENDPOINT is ignored")
	}
	return nil, func() error { return nil }, nil
}
