package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestVersion: `weft version` and `weft --version` print the same line: the
// version given at link time, else the one in the build info.
func TestVersion(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, _, err := run(t, nil, "", args...)
		if err != nil || out != versionLine()+"\n" || !strings.HasPrefix(out, "weft ") {
			t.Fatalf("weft %s = %q, %v; want %q", args[0], out, err, versionLine())
		}
	}
	if _, _, err := run(t, nil, "", "version", "extra"); err == nil {
		t.Fatal("weft version took an argument")
	}
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "weft")
	if out, err := exec.Command("go", "build", "-ldflags", "-X main.buildVersion=v1.2.3-test", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, args := range [][]string{{"version"}, {"--version"}} {
		out, err := exec.Command(bin, args...).Output()
		if err != nil || !strings.HasPrefix(string(out), "weft v1.2.3-test ") {
			t.Fatalf("weft %s = %q, %v; want the version given at link time", args[0], out, err)
		}
	}
}

// TestHelpPromisesOnlyWhatExists: the CLI's help names the front doors
// that exist (no web UI yet).
func TestHelpPromisesOnlyWhatExists(t *testing.T) {
	t.Parallel()
	out, _, err := run(t, nil, "", "--help")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.ToLower(out), "web ui") || !strings.Contains(out, "HTTP API") {
		t.Fatalf("weft --help:\n%s", out)
	}
}
