package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weft-run/weft/checkpoint"
	"github.com/weft-run/weft/llm/llmtest"
	"github.com/weft-run/weft/llm/registry"
	"github.com/weft-run/weft/policy"
	"github.com/weft-run/weft/policy/permission"
	"github.com/weft-run/weft/session"
	"github.com/weft-run/weft/store/sqlite"
	"github.com/weft-run/weft/tool"
	"github.com/weft-run/weft/tool/builtin"
)

// newCheckpointAPI is the API over a runtime whose agent has the builtin
// tools in a workspace that is a git repository of its own, with the
// checkpoint stage in its pipeline, as weft serve sets it up.
func newCheckpointAPI(t *testing.T, ws string) *api {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	a := &api{t: t, logs: &logBuffer{}, fake: llmtest.NewOpenAI(t), path: filepath.Join(t.TempDir(), "weft.db")}
	db, err := sqlite.Open(context.Background(), a.path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a.db = db
	reg, err := tool.NewRegistry(builtin.Tools(builtin.Config{Workspace: ws})...)
	if err != nil {
		t.Fatal(err)
	}
	store, err := checkpoint.Open(checkpoint.Options{Dir: filepath.Join(t.TempDir(), "checkpoints")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	cw, err := store.Workspace(ws)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := checkpoint.Install(nil, &checkpoint.Stage{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	models := registry.New(registry.Config{Providers: map[string]registry.ProviderConfig{"openai": {BaseURL: a.fake.URL + "/v1", APIKey: "k"}},
		Getenv: func(string) string { return "" }})
	log := slog.New(slog.NewTextHandler(a.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	rt, err := session.New(session.Config{Store: db, Models: models, DefaultModel: "openai:gpt-4.1", Tools: reg,
		Policy: &policy.Policy{Mode: permission.ModeBypass, Workspace: ws, Pipeline: pl, Validate: reg.Validate}, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	a.rt = rt
	a.s = New(Config{Runtime: rt, Tools: reg.Specs(), RateLimit: -1, Logger: log, Version: "test", Checkpoints: cw})
	a.srv = httptest.NewServer(a.s.Handler())
	a.url = a.srv.URL
	t.Cleanup(a.close)
	return a
}

func gitRun(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL="+os.DevNull, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// treeState is every file of the workspace (.git left out) with its mode
// and a digest of its bytes; with gitDir, only the files of its .git.
func treeState(t *testing.T, dir string, gitDir bool) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		inGit := rel == ".git" || strings.HasPrefix(rel, ".git"+string(filepath.Separator))
		if d.IsDir() {
			if rel == ".git" && !gitDir {
				return filepath.SkipDir
			}
			return nil
		}
		if inGit != gitDir {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		h := sha256.Sum256(b)
		out[rel] = info.Mode().String() + " " + hex.EncodeToString(h[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameState(t *testing.T, what string, want, got map[string]string) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s is %q, want %q", what, k, got[k], v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: %s should not exist", what, k)
		}
	}
}

// TestCheckpointEndpoints: the calls of a session's turns are
// checkpointed; GET .../checkpoints lists them, .../diff shows what a
// restore would do; POST .../restore refuses to overwrite a file the user
// changed since (409 with the file) unless forced, brings the files back
// byte for byte (a created file removed, the executable bit kept), with
// "conversation" rewinds the session to before that turn, and is itself
// undoable; the workspace's .git is byte for byte unchanged; another
// session sees none of it.
func TestCheckpointEndpoints(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "run.sh"), []byte("#!/bin/sh\necho one\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	gitRun(t, ws, "init", "-q")
	gitRun(t, ws, "add", "-A")
	gitRun(t, ws, "commit", "-q", "-m", "init")
	gitBefore := treeState(t, ws, true)
	start := treeState(t, ws, false)

	a := newCheckpointAPI(t, ws)
	a.doJSON("POST", "/v1/sessions", map[string]any{"session_id": "s"}, http.StatusCreated)
	a.doJSON("POST", "/v1/sessions", map[string]any{"session_id": "other"}, http.StatusCreated)
	a.fake.Push(
		llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock("call_w", "Write", `{"file_path":"new.txt","content":"created\n"}`)}},
		llmtest.Text("Wrote it."),
		llmtest.Script{Blocks: []llmtest.Block{llmtest.ToolBlock("call_b", "Bash", `{"command":"sed -i 's/one/two/' run.sh"}`)}},
		llmtest.Text("Changed it."),
	)
	a.openSSE("POST", "/v1/sessions/s/messages", map[string]any{"prompt": "write a file"}).readUntilDone()
	afterFirst := treeState(t, ws, false)
	a.openSSE("POST", "/v1/sessions/s/messages", map[string]any{"prompt": "edit run.sh"}).readUntilDone()
	if got, _ := os.ReadFile(filepath.Join(ws, "run.sh")); string(got) != "#!/bin/sh\necho two\n" {
		t.Fatalf("the turn's sed did not run: %q", got)
	}

	list := a.doJSON("GET", "/v1/sessions/s/checkpoints", nil, http.StatusOK)["data"].([]any)
	if len(list) != 2 {
		t.Fatalf("checkpoints = %v", list)
	}
	second, first := list[0].(map[string]any), list[1].(map[string]any)
	if first["tool"] != "Write" || first["tool_call_id"] != "call_w" || second["tool"] != "Bash" || second["tool_call_id"] != "call_b" {
		t.Fatalf("checkpoints = %v", list)
	}
	if l := a.doJSON("GET", "/v1/sessions/other/checkpoints", nil, http.StatusOK)["data"].([]any); len(l) != 0 {
		t.Fatalf("another session lists %v", l)
	}
	id1 := first["id"].(string)
	a.doJSON("GET", "/v1/sessions/other/checkpoints/"+id1+"/diff", nil, http.StatusNotFound)
	a.doJSON("GET", "/v1/sessions/nope/checkpoints", nil, http.StatusNotFound)
	a.doJSON("GET", "/v1/sessions/s/checkpoints/ffffffffffff/diff", nil, http.StatusNotFound)

	d := a.doJSON("GET", "/v1/sessions/s/checkpoints/"+id1+"/diff", nil, http.StatusOK)
	if !strings.Contains(d["patch"].(string), "-created") || !strings.Contains(d["patch"].(string), "+echo one") {
		t.Fatalf("diff = %v", d)
	}

	// Someone edits run.sh after the agent: a restore is a conflict.
	if err := os.WriteFile(filepath.Join(ws, "run.sh"), []byte("#!/bin/sh\necho mine\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	mine := treeState(t, ws, false)
	resp := a.do("POST", "/v1/sessions/s/checkpoints/"+id1+"/restore", `{"conversation": true}`)
	conflict := decodeErr(t, resp, http.StatusConflict, errConflict)
	if !strings.Contains(conflict, "run.sh") {
		t.Fatalf("conflict message %q", conflict)
	}
	sameState(t, "after a refused restore", mine, treeState(t, ws, false))
	if got := a.doJSON("GET", "/v1/sessions/s", nil, http.StatusOK); got["message_count"] != float64(8) {
		t.Fatalf("a refused restore changed the conversation: %v", got)
	}

	r := a.doJSON("POST", "/v1/sessions/s/checkpoints/"+id1+"/restore", `{"conversation": true, "force": true}`, http.StatusOK)
	sameState(t, "after the restore", start, treeState(t, ws, false))
	if rw := r["rewind"].(map[string]any); rw["messages"] != float64(0) || rw["removed"] != float64(8) {
		t.Fatalf("rewind = %v", rw)
	}
	if got := a.doJSON("GET", "/v1/sessions/s", nil, http.StatusOK); got["message_count"] != float64(0) {
		t.Fatalf("the conversation after the restore: %v", got)
	}
	undo := r["undo"].(map[string]any)["id"].(string)
	// Undoing the restore brings back what it overwrote, the user's edit
	// included.
	a.doJSON("POST", "/v1/sessions/s/checkpoints/"+undo+"/restore", nil, http.StatusOK)
	sameState(t, "after undoing the restore", mine, treeState(t, ws, false))
	// The second checkpoint, forced: the state between the two turns.
	a.doJSON("POST", "/v1/sessions/s/checkpoints/"+second["id"].(string)+"/restore", `{"force": true}`, http.StatusOK)
	sameState(t, "after restoring the second checkpoint", afterFirst, treeState(t, ws, false))
	sameState(t, "the workspace's .git", gitBefore, treeState(t, ws, true))

	// Off: 503.
	b := newAPI(t, apiOptions{})
	b.doJSON("POST", "/v1/sessions", map[string]any{"session_id": "s"}, http.StatusCreated)
	b.doJSON("GET", "/v1/sessions/s/checkpoints", nil, http.StatusServiceUnavailable)
}
