package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBinaryHasNoSDKs guards the rule that the official provider SDKs are
// test-only oracles: the shipped binary speaks the wire protocols itself.
func TestBinaryHasNoSDKs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "weft")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command("go", "version", "-m", bin).CombinedOutput()
	if err != nil {
		t.Fatalf("go version -m: %v\n%s", err, out)
	}
	for _, sdk := range []string{"github.com/anthropics/anthropic-sdk-go", "github.com/openai/openai-go", "google.golang.org/genai"} {
		if strings.Contains(string(out), sdk) {
			t.Errorf("the weft binary links %s; the SDKs must stay test-only", sdk)
		}
	}
	if !strings.Contains(string(out), "github.com/spf13/cobra") {
		t.Errorf("go version -m output looks wrong (no cobra):\n%s", out)
	}
}
