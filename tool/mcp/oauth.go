package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// NeedsLoginError is a remote server's answer that it wants OAuth
// authorization weft does not hold (or holds no longer).
type NeedsLoginError struct{ Server string }

func (e *NeedsLoginError) Error() string {
	return fmt.Sprintf("MCP server %q requires authorization: run `weft mcp login %s`", e.Server, e.Server)
}

// TokenStore keeps OAuth tokens of remote MCP servers in a 0600 JSON file
// (~/.weft/mcp-tokens.json), keyed by the server's URL: a configuration
// that renames a server or points a known name elsewhere never receives
// another server's token. Refreshed tokens are written back. A nil
// *TokenStore holds nothing.
type TokenStore struct {
	path string
	mu   sync.Mutex
}

// TokensPath is the token file under home.
func TokensPath(home string) string { return filepath.Join(home, ".weft", "mcp-tokens.json") }

// OpenTokens returns the store at path (created on first write).
func OpenTokens(path string) *TokenStore { return &TokenStore{path: path} }

// StoredToken is one server's authorization: the client weft registered
// (or was configured with) and its current token.
type StoredToken struct {
	Server       string    `json:"server"`
	URL          string    `json:"url"`
	ClientID     string    `json:"client_id"`
	ClientSecret string    `json:"client_secret,omitempty"`
	TokenURL     string    `json:"token_url"`
	AuthStyle    int       `json:"auth_style,omitempty"`
	Scopes       []string  `json:"scopes,omitempty"`
	AccessToken  string    `json:"access_token"`
	TokenType    string    `json:"token_type,omitempty"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	Updated      time.Time `json:"updated"`
}

type tokensFile struct {
	Tokens []StoredToken `json:"tokens"`
}

// Get returns the token stored for url.
func (ts *TokenStore) Get(url string) (StoredToken, bool) {
	if ts == nil {
		return StoredToken{}, false
	}
	data, err := os.ReadFile(ts.path)
	if err != nil {
		return StoredToken{}, false
	}
	var f tokensFile
	if json.Unmarshal(data, &f) != nil {
		return StoredToken{}, false
	}
	for _, t := range f.Tokens {
		if t.URL == url {
			return t, true
		}
	}
	return StoredToken{}, false
}

// Put stores t, replacing the token of the same URL.
func (ts *TokenStore) Put(t StoredToken) error {
	if ts == nil {
		return errors.New("no token store")
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t.Updated = time.Now().UTC()
	return updateJSONFile(ts.path, func(raw []byte) ([]byte, error) {
		var f tokensFile
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, &f); err != nil {
				return nil, fmt.Errorf("%s: %w", ts.path, err)
			}
		}
		out := f.Tokens[:0]
		for _, x := range f.Tokens {
			if x.URL != t.URL {
				out = append(out, x)
			}
		}
		f.Tokens = append(out, t)
		return json.MarshalIndent(f, "", "  ")
	})
}

// Delete forgets the token of url and reports whether there was one.
func (ts *TokenStore) Delete(url string) (bool, error) {
	if ts == nil {
		return false, nil
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	found := false
	err := updateJSONFile(ts.path, func(raw []byte) ([]byte, error) {
		var f tokensFile
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, &f); err != nil {
				return nil, fmt.Errorf("%s: %w", ts.path, err)
			}
		}
		out := f.Tokens[:0]
		for _, x := range f.Tokens {
			if x.URL == url {
				found = true
				continue
			}
			out = append(out, x)
		}
		f.Tokens = out
		return json.MarshalIndent(f, "", "  ")
	})
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	return found, err
}

func (t StoredToken) config() *oauth2.Config {
	return &oauth2.Config{ClientID: t.ClientID, ClientSecret: t.ClientSecret, Scopes: t.Scopes,
		Endpoint: oauth2.Endpoint{TokenURL: t.TokenURL, AuthStyle: oauth2.AuthStyle(t.AuthStyle)}}
}

func (t StoredToken) token() *oauth2.Token {
	return &oauth2.Token{AccessToken: t.AccessToken, TokenType: t.TokenType, RefreshToken: t.RefreshToken, Expiry: t.Expiry}
}

// persistingSource refreshes through src and writes every new token back
// to the store, so the next weft process starts with it.
type persistingSource struct {
	src   oauth2.TokenSource
	store *TokenStore
	mu    sync.Mutex
	last  StoredToken
}

func (p *persistingSource) Token() (*oauth2.Token, error) {
	tok, err := p.src.Token()
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if tok.AccessToken != p.last.AccessToken {
		p.last.AccessToken, p.last.TokenType, p.last.Expiry = tok.AccessToken, tok.TokenType, tok.Expiry
		if tok.RefreshToken != "" {
			p.last.RefreshToken = tok.RefreshToken
		}
		_ = p.store.Put(p.last) // a failed write costs a refresh next time, nothing more
	}
	return tok, nil
}

// storedAuth is the OAuth handler of a server during ordinary use: it
// presents the stored token (refreshing it when it expires) and, when the
// server refuses, reports NeedsLoginError instead of starting a browser
// flow in the middle of a run.
type storedAuth struct {
	server string
	ts     oauth2.TokenSource
}

func (a *storedAuth) TokenSource(context.Context) (oauth2.TokenSource, error) { return a.ts, nil }

func (a *storedAuth) Authorize(_ context.Context, _ *http.Request, resp *http.Response) error {
	if resp != nil && resp.Body != nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
	}
	return &NeedsLoginError{Server: a.server}
}

// handler returns the OAuth handler of an HTTP server.
func (ts *TokenStore) handler(s Server) auth.OAuthHandler {
	a := &storedAuth{server: s.Name}
	if t, ok := ts.Get(s.Config.URL); ok {
		cfg := t.config()
		refreshCtx := context.Background()
		a.ts = &persistingSource{src: cfg.TokenSource(refreshCtx, t.token()), store: ts, last: t}
	}
	return a
}

// LoginOptions configures Login.
type LoginOptions struct {
	// Out gets the authorization URL and progress lines.
	Out io.Writer
	// OpenBrowser opens the URL for the person (nil: only print it).
	OpenBrowser func(url string) error
	// HTTPClient makes the discovery, registration and token requests
	// (nil: the SDK's default, which refuses private addresses).
	HTTPClient *http.Client
	// Timeout bounds the whole flow (0: 5 minutes).
	Timeout time.Duration
	Version string
}

// Login runs OAuth's authorization-code flow with PKCE for an HTTP server
// (discovery, dynamic client registration or the configured client, the
// browser, the redirect to a loopback port) and stores the token.
func Login(ctx context.Context, s Server, store *TokenStore, opts LoginOptions) error {
	if s.Err != nil {
		return s.Err
	}
	if s.Config.Type != TypeHTTP {
		return fmt.Errorf("MCP server %q is a %s server: only http servers use OAuth", s.Name, s.Config.Type)
	}
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()

	port := 0
	if s.Config.OAuth != nil {
		port = s.Config.OAuth.CallbackPort
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("listening for the authorization redirect: %w", err)
	}
	defer ln.Close()
	redirect := fmt.Sprintf("http://127.0.0.1:%d/callback", ln.Addr().(*net.TCPAddr).Port)
	results := make(chan *auth.AuthorizationResult, 1)
	failures := make(chan error, 1)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/callback" {
			http.NotFound(w, r)
			return
		}
		q := r.URL.Query()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if e := q.Get("error"); e != "" {
			msg := e
			if d := q.Get("error_description"); d != "" {
				msg += ": " + d
			}
			fmt.Fprintf(w, "<p>Authorization failed: %s</p>", html.EscapeString(msg))
			select {
			case failures <- fmt.Errorf("the authorization server refused: %s", msg):
			default:
			}
			return
		}
		fmt.Fprint(w, "<p>weft is authorized. You can close this window.</p>")
		select {
		case results <- &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}:
		default:
		}
	})}
	go srv.Serve(ln)
	defer srv.Close()

	fetch := func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		fmt.Fprintf(opts.Out, "Open this URL to authorize weft for MCP server %q:\n\n  %s\n\n", s.Name, args.URL)
		if opts.OpenBrowser != nil {
			if err := opts.OpenBrowser(args.URL); err != nil {
				fmt.Fprintf(opts.Out, "(could not open a browser: %v)\n", err)
			}
		}
		fmt.Fprintln(opts.Out, "Waiting for the authorization...")
		select {
		case r := <-results:
			return r, nil
		case err := <-failures:
			return nil, err
		case <-ctx.Done():
			return nil, fmt.Errorf("no authorization within %s: %w", opts.Timeout, ctx.Err())
		}
	}

	var mu sync.Mutex
	var gotCfg *oauth2.Config
	var gotSrc oauth2.TokenSource
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:              redirect,
		AuthorizationCodeFetcher: fetch,
		RequestRefreshToken:      true,
		Client:                   opts.HTTPClient,
		NewTokenSource: func(ctx context.Context, c *oauth2.Config, t *oauth2.Token) (oauth2.TokenSource, error) {
			src := c.TokenSource(ctx, t)
			mu.Lock()
			gotCfg, gotSrc = c, src
			mu.Unlock()
			return src, nil
		},
	}
	if o := s.Config.OAuth; o != nil && o.ClientID != "" {
		pc := &oauthex.ClientCredentials{ClientID: o.ClientID}
		if o.ClientSecret != "" {
			pc.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: o.ClientSecret}
		}
		cfg.PreregisteredClient = pc
	} else {
		cfg.DynamicClientRegistrationConfig = &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			ClientName:              "weft",
			RedirectURIs:            []string{redirect},
			GrantTypes:              []string{"authorization_code", "refresh_token"},
			ResponseTypes:           []string{"code"},
			TokenEndpointAuthMethod: "none",
		}}
	}
	if o := s.Config.OAuth; o != nil && len(o.Scopes) > 0 {
		scopes := o.Scopes
		cfg.ScopeFilter = func([]string) []string { return scopes }
	}
	h, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		return err
	}
	var base http.RoundTripper = http.DefaultTransport
	if len(s.Config.Headers) > 0 {
		base = &headerTransport{base: base, headers: s.Config.Headers}
	}
	version := opts.Version
	if version == "" {
		version = "dev"
	}
	client := sdk.NewClient(&sdk.Implementation{Name: "weft", Version: version}, nil)
	sess, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: s.Config.URL,
		HTTPClient: &http.Client{Transport: base}, OAuthHandler: h, DisableStandaloneSSE: true, MaxRetries: -1}, nil)
	if err != nil {
		return fmt.Errorf("authorizing MCP server %q: %w", s.Name, err)
	}
	_ = sess.Close()
	mu.Lock()
	c, src := gotCfg, gotSrc
	mu.Unlock()
	if c == nil || src == nil {
		return fmt.Errorf("MCP server %q accepted weft without authorization: nothing to store", s.Name)
	}
	tok, err := src.Token()
	if err != nil {
		return err
	}
	return store.Put(StoredToken{Server: s.Name, URL: s.Config.URL, ClientID: c.ClientID, ClientSecret: c.ClientSecret,
		TokenURL: c.Endpoint.TokenURL, AuthStyle: int(c.Endpoint.AuthStyle), Scopes: c.Scopes,
		AccessToken: tok.AccessToken, TokenType: tok.TokenType, RefreshToken: tok.RefreshToken, Expiry: tok.Expiry})
}
