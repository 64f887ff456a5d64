package server

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/weft-run/weft/llm/llmtest"
)

// TestKeysEndpoint: GET /v1/keys shows the pooled keys masked (never a
// key itself), and the key that got a 429 cooling down with the time
// left, while the turn went on with the healthy key.
func TestKeysEndpoint(t *testing.T) {
	t.Parallel()
	keys := []string{"sk-test-aaaaaaaaaaaa-0001", "sk-test-bbbbbbbbbbbb-0002"}
	fake := llmtest.NewOpenAI(t)
	fake.Push(llmtest.Script{Status: http.StatusTooManyRequests, RetryAfter: time.Minute}, llmtest.Text("ok"))
	a := newAPI(t, apiOptions{fake: fake, apiKeys: keys, token: "secret"})
	auth := []string{"Authorization", "Bearer secret"}

	get := func() (KeysResponse, string) {
		t.Helper()
		resp := a.do("GET", "/v1/keys", nil, auth...)
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /v1/keys: %d %s", resp.StatusCode, raw)
		}
		var out KeysResponse
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatal(err)
		}
		return out, string(raw)
	}
	before, _ := get()
	if len(before.Providers) != 1 || before.Providers[0].Provider != "openai" || before.Providers[0].Usable != 2 {
		t.Fatalf("before any call: %+v", before)
	}

	a.doJSON("POST", "/v1/sessions", map[string]any{"session_id": "s"}, http.StatusCreated, auth...)
	c := a.openSSE("POST", "/v1/sessions/s/messages", map[string]any{"prompt": "hi"}, auth...)
	c.readUntilDone()
	if n := len(fake.Requests()); n != 2 {
		t.Fatalf("the fake saw %d requests, want 2 (the 429, then the other key)", n)
	}

	out, raw := get()
	for _, k := range keys {
		if strings.Contains(raw, k) || strings.Contains(raw, k[4:len(k)-4]) {
			t.Fatalf("GET /v1/keys shows a key: %s", raw)
		}
	}
	if len(out.Providers) != 1 || len(out.Providers[0].Keys) != 2 || out.Providers[0].Usable != 1 {
		t.Fatalf("after the 429: %s", raw)
	}
	cooling := 0
	for i, k := range out.Providers[0].Keys {
		if want := keys[i][:4] + "..." + keys[i][len(keys[i])-4:]; k.Key != want || k.ID == "" {
			t.Errorf("key %d shown as %q (id %q), want %q", i, k.Key, k.ID, want)
		}
		switch k.State {
		case "cooling":
			cooling++
			if k.CooldownSeconds <= 30 || k.CooldownSeconds > 60 || k.CoolUntil.IsZero() {
				t.Errorf("cooling key: %+v", k)
			}
		case "ok":
			if k.CooldownSeconds != 0 || k.Uses == 0 {
				t.Errorf("healthy key: %+v", k)
			}
		default:
			t.Errorf("key state %q", k.State)
		}
	}
	if cooling != 1 {
		t.Fatalf("%d cooling keys, want 1: %s", cooling, raw)
	}
	a.doJSON("GET", "/v1/keys", nil, http.StatusUnauthorized)

	none := newAPI(t, apiOptions{config: func(c *Config) { c.Keys = nil }})
	none.doJSON("GET", "/v1/keys", nil, http.StatusServiceUnavailable)
}
