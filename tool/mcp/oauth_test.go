package mcp

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// fakeAuthServer is an OAuth 2.1 authorization server on loopback, as an
// MCP server's would be: metadata, dynamic client registration, the
// authorization endpoint (which "the person" approves at once by
// redirecting), and the token endpoint with PKCE and refresh tokens.
type fakeAuthServer struct {
	t   *testing.T
	srv *httptest.Server
	ttl time.Duration // access token lifetime

	mu        sync.Mutex
	clients   map[string][]string // client_id -> redirect URIs
	codes     map[string]codeGrant
	access    map[string]time.Time // token -> expiry
	refresh   map[string]bool
	refreshes int
}

type codeGrant struct {
	client, redirect, challenge, resource string
}

func randToken() string { return rand.Text() }

func newFakeAuthServer(t *testing.T, ttl time.Duration) *fakeAuthServer {
	a := &fakeAuthServer{t: t, ttl: ttl, clients: map[string][]string{}, codes: map[string]codeGrant{},
		access: map[string]time.Time{}, refresh: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		base := a.srv.URL
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"issuer": base, "authorization_endpoint": base + "/authorize", "token_endpoint": base + "/token",
			"registration_endpoint": base + "/register", "response_types_supported": []string{"code"},
			"grant_types_supported": []string{"authorization_code", "refresh_token"}, "code_challenge_methods_supported": []string{"S256"},
			"token_endpoint_auth_methods_supported": []string{"none"}, "scopes_supported": []string{"tools", "offline_access"},
		})
	})
	mux.HandleFunc("/register", func(w http.ResponseWriter, r *http.Request) {
		var meta oauthex.ClientRegistrationMetadata
		if err := json.NewDecoder(r.Body).Decode(&meta); err != nil || len(meta.RedirectURIs) == 0 {
			http.Error(w, `{"error":"invalid_client_metadata"}`, http.StatusBadRequest)
			return
		}
		id := "client-" + randToken()[:8]
		a.mu.Lock()
		a.clients[id] = meta.RedirectURIs
		a.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(map[string]any{"client_id": id, "redirect_uris": meta.RedirectURIs, "token_endpoint_auth_method": "none"})
	})
	mux.HandleFunc("/authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		a.mu.Lock()
		uris, ok := a.clients[q.Get("client_id")]
		a.mu.Unlock()
		redirect := q.Get("redirect_uri")
		if !ok || !contains(uris, redirect) || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("response_type") != "code" {
			http.Error(w, "bad authorization request", http.StatusBadRequest)
			return
		}
		code := randToken()
		a.mu.Lock()
		a.codes[code] = codeGrant{client: q.Get("client_id"), redirect: redirect, challenge: q.Get("code_challenge"), resource: q.Get("resource")}
		a.mu.Unlock()
		http.Redirect(w, r, redirect+"?"+url.Values{"code": {code}, "state": {q.Get("state")}}.Encode(), http.StatusFound)
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		a.mu.Lock()
		defer a.mu.Unlock()
		fail := func(e string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"error":%q}`, e)
		}
		switch r.Form.Get("grant_type") {
		case "authorization_code":
			g, ok := a.codes[r.Form.Get("code")]
			delete(a.codes, r.Form.Get("code"))
			sum := sha256.Sum256([]byte(r.Form.Get("code_verifier")))
			if !ok || g.client != r.Form.Get("client_id") || g.redirect != r.Form.Get("redirect_uri") ||
				base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge {
				fail("invalid_grant")
				return
			}
		case "refresh_token":
			if !a.refresh[r.Form.Get("refresh_token")] {
				fail("invalid_grant")
				return
			}
			delete(a.refresh, r.Form.Get("refresh_token"))
			a.refreshes++
		default:
			fail("unsupported_grant_type")
			return
		}
		at, rt := "at-"+randToken(), "rt-"+randToken()
		a.access[at] = time.Now().Add(a.ttl)
		a.refresh[rt] = true
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"access_token": at, "token_type": "Bearer", "refresh_token": rt, "expires_in": int(a.ttl.Seconds())})
	})
	a.srv = httptest.NewServer(mux)
	t.Cleanup(a.srv.Close)
	return a
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (a *fakeAuthServer) verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	exp, ok := a.access[token]
	if !ok {
		return nil, auth.ErrInvalidToken
	}
	return &auth.TokenInfo{Expiration: exp, Scopes: []string{"tools"}}, nil
}

// protectedMCPServer serves an MCP server that requires the fake
// authorization server's tokens.
func protectedMCPServer(t *testing.T, as *fakeAuthServer) string {
	s := sdk.NewServer(&sdk.Implementation{Name: "protected", Version: "1"}, nil)
	s.AddTool(&sdk.Tool{Name: "whoami", InputSchema: objectSchema}, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		return textResult("authorized"), nil
	})
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	mcpURL := srv.URL + "/mcp"
	prm := auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{Resource: mcpURL, AuthorizationServers: []string{as.srv.URL}, ScopesSupported: []string{"tools"}})
	mux.Handle("/.well-known/oauth-protected-resource/mcp", prm)
	mux.Handle("/mcp", auth.RequireBearerToken(as.verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: srv.URL + "/.well-known/oauth-protected-resource/mcp"})(
		sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)))
	return mcpURL
}

// browser plays the person approving in a browser: it follows the
// authorization URL's redirect to weft's loopback callback.
func browser(u string) error {
	resp, err := http.Get(u)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("callback answered %s", resp.Status)
	}
	return nil
}

func TestOAuthLoginAndRefresh(t *testing.T) {
	t.Parallel()
	as := newFakeAuthServer(t, 2*time.Second)
	mcpURL := protectedMCPServer(t, as)
	store := OpenTokens(filepath.Join(t.TempDir(), ".weft", "mcp-tokens.json"))
	srv := httpServer("prot", mcpURL)

	// Before login: the server is reported as needing it.
	m0, reg0 := startManager(t, Options{Tokens: store}, srv)
	if st := statusOf(m0, "prot"); st.State != StateNeedsLogin || !strings.Contains(st.Error, "weft mcp login prot") {
		t.Fatalf("before login: %+v", st)
	}
	if hasTool(reg0, "mcp__prot__whoami") {
		t.Fatal("tools registered without authorization")
	}

	var out strings.Builder
	if err := Login(context.Background(), srv, store, LoginOptions{Out: &out, OpenBrowser: browser, HTTPClient: &http.Client{}}); err != nil {
		t.Fatalf("login: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), as.srv.URL+"/authorize?") {
		t.Errorf("the authorization URL was not printed:\n%s", out.String())
	}
	st, err := os.Stat(store.path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want 0600", st.Mode().Perm())
	}
	first, ok := store.Get(mcpURL)
	if !ok || first.AccessToken == "" || first.RefreshToken == "" || first.ClientID == "" {
		t.Fatalf("stored token = %+v", first)
	}

	// A new process (manager) uses the stored token...
	_, reg := startManager(t, Options{Tokens: store}, srv)
	if res := call(t, reg, "mcp__prot__whoami", `{}`); res.IsError || res.TextOf() != "authorized" {
		t.Fatalf("call with the stored token = %q", res.TextOf())
	}
	// ...and refreshes it when it expires, writing the new one back.
	time.Sleep(2500 * time.Millisecond)
	if res := call(t, reg, "mcp__prot__whoami", `{}`); res.IsError || res.TextOf() != "authorized" {
		t.Fatalf("call after expiry = %q", res.TextOf())
	}
	as.mu.Lock()
	refreshes := as.refreshes
	as.mu.Unlock()
	second, _ := store.Get(mcpURL)
	if refreshes == 0 || second.AccessToken == first.AccessToken || second.RefreshToken == first.RefreshToken {
		t.Fatalf("no refresh written back: refreshes=%d first=%s second=%s", refreshes, first.AccessToken, second.AccessToken)
	}

	// A configuration pointing the same name at another URL gets nothing.
	if _, ok := store.Get(mcpURL + "-elsewhere"); ok {
		t.Fatal("a token was found for another URL")
	}
	if found, err := store.Delete(mcpURL); err != nil || !found {
		t.Fatalf("logout: %v %v", found, err)
	}
	if _, ok := store.Get(mcpURL); ok {
		t.Fatal("the token survived logout")
	}
}

// A refusal at the authorization server ends the login with its reason.
func TestOAuthLoginRefused(t *testing.T) {
	t.Parallel()
	as := newFakeAuthServer(t, time.Minute)
	mcpURL := protectedMCPServer(t, as)
	store := OpenTokens(filepath.Join(t.TempDir(), "tokens.json"))
	deny := func(u string) error {
		pu, err := url.Parse(u)
		if err != nil {
			return err
		}
		q := pu.Query()
		resp, err := http.Get(q.Get("redirect_uri") + "?error=access_denied&error_description=the+user+said+no&state=" + q.Get("state"))
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	err := Login(context.Background(), httpServer("prot", mcpURL), store, LoginOptions{OpenBrowser: deny, HTTPClient: &http.Client{}})
	if err == nil || !strings.Contains(err.Error(), "access_denied: the user said no") {
		t.Fatalf("login = %v, want the refusal", err)
	}
	if _, ok := store.Get(mcpURL); ok {
		t.Fatal("a refused login stored a token")
	}
}
