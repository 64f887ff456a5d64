package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeShutdownWaitsForHooks: observer hooks the server fires in the
// background (session_start here, sync and async) finish before weft serve
// exits; before, the process exited under them.
func TestServeShutdownWaitsForHooks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, async := range []bool{false, true} {
		name := map[bool]string{false: "sync", true: "async"}[async]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			done := filepath.Join(dir, name+".done")
			asyncJSON := map[bool]string{false: "false", true: "true"}[async]
			settings := filepath.Join(dir, name+".json")
			body := `{"hooks":{"SessionStart":[{"hooks":[{"type":"command","async":` + asyncJSON + `,"timeout":30,
				"command":"cat >/dev/null; sleep 1; touch '` + done + `'"}]}]}}`
			if err := os.WriteFile(settings, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			p := startServe(t, nil, "--db", filepath.Join(dir, name+".db"), "--workspace", dir, "--settings", settings)
			p.expect("POST", "/v1/sessions", `{"session_id":"s"}`, 201)
			start := time.Now()
			p.stop()
			if _, err := os.Stat(done); err != nil {
				t.Fatalf("weft serve exited %s after SIGTERM with its session_start hook still running:\n%s", time.Since(start), p.log())
			}
		})
	}
}

// TestServeLeavesNoAuditFileInTheWorkingTree: with the defaults (database
// ./weft.db), the JSONL audit log goes to ~/.weft/audit.jsonl, as for run
// and chat, not into the directory weft serve was started in (a clone of
// the repository, typically).
func TestServeLeavesNoAuditFileInTheWorkingTree(t *testing.T) {
	t.Parallel()
	wd, home := t.TempDir(), t.TempDir()
	p := startServeIn(t, wd, []string{"HOME=" + home})
	p.expect("GET", "/v1/health", "", 200)
	p.stop()
	entries, err := os.ReadDir(wd)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "weft.db") {
			t.Errorf("weft serve left %s in its working directory", e.Name())
		}
	}
	if _, err := os.Stat(filepath.Join(home, ".weft", "audit.jsonl")); err != nil {
		t.Errorf("no audit log in the home directory: %v", err)
	}
}
