package main

import (
	"fmt"
	goruntime "runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// buildVersion is set at link time by release builds:
//
//	go build -ldflags "-X main.buildVersion=v1.2.3" ./cmd/weft
//
// Without it the version comes from the build info: the module version for
// `go install github.com/weft-run/weft/cmd/weft@v1.2.3`, a pseudo-version
// or "(devel)" for a build from a checkout.
var buildVersion string

// version is the version the binary was built as (also in GET /v1/health).
func version() string {
	if buildVersion != "" {
		return buildVersion
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "(devel)"
}

// versionLine is what `weft version` and `weft --version` print: the
// version, and for a build from a checkout the commit it was built from.
func versionLine() string {
	line := "weft " + version()
	if info, ok := debug.ReadBuildInfo(); ok {
		var rev, modified string
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if rev != "" {
			line += " (commit " + rev
			if modified == "true" {
				line += ", modified"
			}
			line += ")"
		}
	}
	return fmt.Sprintf("%s %s %s/%s", line, goruntime.Version(), goruntime.GOOS, goruntime.GOARCH)
}

func newVersionCmd(env environ) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print weft's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, err := fmt.Fprintln(env.stdout, versionLine())
			return err
		},
	}
}
