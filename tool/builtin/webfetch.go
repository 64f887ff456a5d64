package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
	"golang.org/x/net/html/charset"

	"github.com/weft-run/weft/tool"
)

const (
	fetchDefaultMaxBytes = 5 << 20
	fetchDefaultTimeout  = 30 * time.Second
	// The framework's deadline must not fire before the fetch's own, so that
	// the model gets "timed out after 30s" rather than a generic timeout.
	fetchTimeoutMargin = 10 * time.Second
	fetchMaxRedirects  = 5
	// Claude Code hands up to 100k characters of a page to a second model;
	// weft hands the page to the calling model itself, so it gets a larger
	// share than the default cap but not a whole context window.
	fetchOutputCap     = 40000
	fetchExcerptChars  = 300
	fetchErrorBodyRead = 64 << 10
	fetchUserAgent     = "weft-webfetch/1.0 (+https://github.com/weft-run/weft)"
	fetchAccept        = "text/markdown, text/html;q=0.9, application/xhtml+xml;q=0.9, text/plain;q=0.8, application/json;q=0.8, */*;q=0.5"
)

const fetchSchema = `{
  "type": "object",
  "properties": {
    "url": {
      "type": "string",
      "format": "uri",
      "description": "The complete http:// or https:// URL to fetch."
    },
    "prompt": {
      "type": "string",
      "description": "What you want to learn from the page. It is echoed back above the page text; answer it yourself from that text."
    }
  },
  "required": ["url", "prompt"],
  "additionalProperties": false
}`

type fetchTool struct {
	spec     tool.Spec
	client   *http.Client
	maxBytes int64
	timeout  time.Duration
	// guard is nil when private networks are allowed.
	guard *fetchGuard
	// preResolve: the transport is not ours to instrument (a caller's custom
	// RoundTripper or dialer), so each hop's host is resolved and checked
	// before the request instead of at dial time.
	preResolve bool
}

// NewWebFetch returns the WebFetch tool: it fetches an http(s) URL and
// returns the page as text, refusing non-public addresses unless
// cfg.AllowPrivateNetworks is set.
func NewWebFetch(cfg Config) tool.Tool { return fetchNew(cfg, nil) }

// fetchNew lets tests replace the address classification, since every test
// server lives on loopback.
func fetchNew(cfg Config, blocked func(netip.Addr) string) *fetchTool {
	t := &fetchTool{maxBytes: cfg.MaxFetchBytes, timeout: cfg.FetchTimeout}
	if t.maxBytes <= 0 {
		t.maxBytes = fetchDefaultMaxBytes
	}
	if t.timeout <= 0 {
		t.timeout = fetchDefaultTimeout
	}
	if !cfg.AllowPrivateNetworks {
		if blocked == nil {
			blocked = fetchBlockedReason
		}
		t.guard = &fetchGuard{blocked: blocked}
	}
	var base http.RoundTripper
	if cfg.HTTPClient != nil {
		base = cfg.HTTPClient.Transport
	}
	t.client = &http.Client{
		Transport: t.transport(base),
		// Redirects are followed by hand so that each hop is checked and
		// cross-host ones are reported instead of followed.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	t.spec = tool.Spec{
		Name:        "WebFetch",
		Description: fetchDescription(t.maxBytes, t.timeout),
		InputSchema: json.RawMessage(fetchSchema),
		Meta: tool.Meta{
			ReadOnly:        true,
			ConcurrencySafe: true,
			Effect:          tool.EffectExternal,
			Permission:      tool.ClassWebFetch,
			Timeout:         t.timeout + fetchTimeoutMargin,
			OutputCap:       fetchOutputCap,
		},
	}
	return t
}

func fetchDescription(maxBytes int64, timeout time.Duration) string {
	return `Fetches a web page or file over HTTP(S) and returns its content as text, so you can answer a question about it.

- Takes a url and a prompt. The prompt says what you want from the page.
- weft does not run a second model over the page: the result is the page itself (HTML converted to markdown-like text with headings, lists, links and code blocks; plain text, markdown and JSON as they are), headed by the final URL, the HTTP status, the content type and your prompt echoed back. Read it and answer the prompt yourself.
- The URL must be a complete http:// or https:// URL. It is fetched exactly as given: http is not upgraded to https.
- Redirects on the same host are followed (up to ` + strconv.Itoa(fetchMaxRedirects) + `). A redirect to a different host is not followed: the result names the new URL, and you may call WebFetch again with it.
- At most ` + fetchSize(maxBytes) + ` of a response is read and a fetch may take at most ` + timeout.String() + `; very long pages are truncated. Images, PDFs and other binary content are not returned, only their type and size.
- Loopback, private, link-local and other internal network addresses are refused unless the operator allowed them.
- Read-only: it changes nothing locally. Pages that need a login or are rendered by JavaScript may come back empty or incomplete.
- Prefer a more specific tool (an MCP browser or search tool) when one is available and fits better.`
}

func (t *fetchTool) Spec() tool.Spec { return t.spec }

type fetchInput struct {
	URL    string `json:"url"`
	Prompt string `json:"prompt"`
}

func (t *fetchTool) Run(ctx context.Context, call *tool.Call) (tool.Result, error) {
	var in fetchInput
	if err := json.Unmarshal(call.Input, &in); err != nil {
		return tool.Errorf("WebFetch: invalid input: %v", err), nil
	}
	u, err := fetchParseURL(in.URL)
	if err != nil {
		return tool.Errorf("WebFetch: %v", err), nil
	}
	fctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	return t.fetch(ctx, fctx, u, in.Prompt), nil
}

func fetchParseURL(raw string) (*url.URL, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return nil, errors.New("url is empty; give a complete http:// or https:// URL")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("invalid URL %q: %v", raw, err)
	}
	switch u.Scheme {
	case "http", "https":
	case "":
		return nil, fmt.Errorf("URL %q is not absolute; include the scheme, e.g. https://%s", raw, strings.TrimPrefix(raw, "//"))
	default:
		return nil, fmt.Errorf("unsupported URL scheme %q in %q: WebFetch fetches only http:// and https:// URLs", u.Scheme, raw)
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("URL %q has no host", raw)
	}
	if u.User != nil {
		return nil, fmt.Errorf("URL %q contains credentials (user@ or user:password@), which WebFetch does not send; remove them", raw)
	}
	u.Fragment, u.RawFragment = "", ""
	return u, nil
}

// fetch runs the request loop. parent is the caller's context (to tell a
// cancellation from our own timeout), ctx carries the fetch deadline.
func (t *fetchTool) fetch(parent, ctx context.Context, start *url.URL, prompt string) tool.Result {
	cur := start
	for hop := 0; ; hop++ {
		if err := t.checkHop(ctx, cur); err != nil {
			return tool.Errorf("%v", err)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, cur.String(), nil)
		if err != nil {
			return tool.Errorf("WebFetch: invalid URL %s: %v", cur, err)
		}
		req.Header.Set("User-Agent", fetchUserAgent)
		req.Header.Set("Accept", fetchAccept)
		resp, err := t.client.Do(req)
		if err != nil {
			return t.transportError(parent, ctx, cur, err)
		}
		loc := resp.Header.Get("Location")
		if !fetchIsRedirect(resp.StatusCode) || loc == "" {
			defer resp.Body.Close()
			return t.render(resp, start, cur, prompt)
		}
		// Drain a little so the connection can be reused for the next hop.
		_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
		resp.Body.Close()
		next, err := cur.Parse(loc)
		if err != nil {
			return tool.Errorf("WebFetch: %s answered %d with an invalid redirect Location %q", cur, resp.StatusCode, loc)
		}
		next.Fragment, next.RawFragment = "", ""
		if !fetchSameSite(cur, next) {
			return t.redirectReport(cur, next, resp.StatusCode, prompt)
		}
		if hop >= fetchMaxRedirects {
			return tool.Errorf("WebFetch: stopped after %d redirects at %s (next: %s); the site may be redirecting in a loop", fetchMaxRedirects, cur, next)
		}
		cur = next
	}
}

// checkHop refuses a blocked literal address before any network traffic,
// and, where the dial cannot be instrumented, resolves and checks the host.
func (t *fetchTool) checkHop(ctx context.Context, u *url.URL) error {
	if t.guard == nil {
		return nil
	}
	host := u.Hostname()
	if ip, err := netip.ParseAddr(host); err == nil {
		if reason := t.guard.blocked(ip); reason != "" {
			return &fetchBlockedError{Host: host, Addr: ip, Reason: reason}
		}
		return nil
	}
	if !t.preResolve {
		return nil
	}
	blocked, err := t.guard.checkHost(ctx, host)
	if blocked != nil {
		return blocked
	}
	if err != nil {
		return fmt.Errorf("WebFetch: could not resolve host %s: %v", host, err)
	}
	return nil
}

func (t *fetchTool) transportError(parent, ctx context.Context, u *url.URL, err error) tool.Result {
	var blocked *fetchBlockedError
	if errors.As(err, &blocked) {
		return tool.Errorf("%v", blocked)
	}
	if parent.Err() != nil {
		return tool.Errorf("WebFetch: canceled while fetching %s", u)
	}
	if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) {
		return tool.Errorf("WebFetch: timed out after %s fetching %s", t.timeout, u)
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return tool.Errorf("WebFetch: could not resolve host %s: %v", u.Hostname(), dnsErr.Err)
	}
	var uerr *url.Error
	if errors.As(err, &uerr) {
		err = uerr.Err
	}
	return tool.Errorf("WebFetch: fetching %s failed: %v", u, err)
}

func (t *fetchTool) redirectReport(from, to *url.URL, status int, prompt string) tool.Result {
	var b strings.Builder
	fmt.Fprintf(&b, "URL: %s\nStatus: %d\nRedirect: %s\n\n", from, status, to)
	fmt.Fprintf(&b, "The URL redirects to a different host (%s). WebFetch does not follow redirects across hosts. ", to.Host)
	fmt.Fprintf(&b, "To fetch the redirected page, call WebFetch again with:\n- url: %q\n- prompt: %q", to.String(), prompt)
	if to.Scheme != "http" && to.Scheme != "https" {
		fmt.Fprintf(&b, "\n\nNote: the redirect target uses the %s scheme, which WebFetch cannot fetch.", to.Scheme)
	} else if ip, err := netip.ParseAddr(to.Hostname()); err == nil && t.guard != nil {
		if reason := t.guard.blocked(ip); reason != "" {
			fmt.Fprintf(&b, "\n\nNote: the redirect target is a %s address, which WebFetch will refuse.", reason)
		}
	}
	r := tool.Text(b.String())
	r.Data = map[string]any{"url": from.String(), "status": status, "redirect": to.String()}
	return r
}

func fetchIsRedirect(code int) bool {
	switch code {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// fetchSameSite says whether a redirect stays on the same site and may be
// followed: the same host (ignoring a leading "www."), the same scheme and
// port, or an upgrade from http to https on the default ports.
func fetchSameSite(from, to *url.URL) bool {
	if to.User != nil {
		return false
	}
	strip := func(h string) string { return strings.TrimPrefix(strings.ToLower(h), "www.") }
	if strip(from.Hostname()) != strip(to.Hostname()) {
		return false
	}
	if from.Scheme == to.Scheme {
		return fetchPort(from) == fetchPort(to)
	}
	return from.Scheme == "http" && to.Scheme == "https" && fetchPort(from) == "80" && fetchPort(to) == "443"
}

func fetchPort(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch u.Scheme {
	case "http":
		return "80"
	case "https":
		return "443"
	case "socks5", "socks5h":
		return "1080"
	}
	return ""
}

type fetchKind int

const (
	fetchKindUnknown fetchKind = iota
	fetchKindHTML
	fetchKindText
	fetchKindBinary
)

func fetchClassify(mediaType string) fetchKind {
	switch {
	case mediaType == "":
		return fetchKindUnknown
	case mediaType == "text/html", mediaType == "application/xhtml+xml":
		return fetchKindHTML
	case strings.HasPrefix(mediaType, "text/"),
		mediaType == "application/json", strings.HasSuffix(mediaType, "+json"),
		mediaType == "application/xml", strings.HasSuffix(mediaType, "+xml"),
		mediaType == "application/javascript", mediaType == "application/ecmascript",
		mediaType == "application/x-yaml", mediaType == "application/yaml",
		mediaType == "application/toml", mediaType == "application/x-ndjson":
		return fetchKindText
	}
	return fetchKindBinary
}

func (t *fetchTool) render(resp *http.Response, start, final *url.URL, prompt string) tool.Result {
	ctHeader := resp.Header.Get("Content-Type")
	mediaType, params, err := mime.ParseMediaType(ctHeader)
	if err != nil {
		mediaType, params = "", nil
	}
	mediaType = strings.ToLower(mediaType)

	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, min(t.maxBytes, fetchErrorBodyRead)))
		excerpt := fetchExcerpt(fetchDecode(body, mediaType, params, ctHeader, final))
		msg := fmt.Sprintf("WebFetch: %s answered HTTP %s", final, resp.Status)
		if excerpt != "" {
			msg += ": " + excerpt
		}
		r := tool.Errorf("%s", msg)
		r.Data = map[string]any{"url": final.String(), "status": resp.StatusCode}
		return r
	}

	kind := fetchClassify(mediaType)
	var body []byte
	truncated := false
	if kind != fetchKindBinary {
		body, err = io.ReadAll(io.LimitReader(resp.Body, t.maxBytes+1))
		if err != nil {
			return tool.Errorf("WebFetch: reading the response from %s failed: %v", final, err)
		}
		if int64(len(body)) > t.maxBytes {
			body, truncated = body[:t.maxBytes], true
		}
	}
	shownType := ctHeader
	if kind == fetchKindUnknown {
		sniffed, _, _ := mime.ParseMediaType(http.DetectContentType(body))
		kind = fetchClassify(sniffed)
		mediaType = sniffed
		shownType = "(none; sniffed as " + sniffed + ")"
		if ctHeader != "" {
			shownType = ctHeader + " (sniffed as " + sniffed + ")"
		}
	}

	var b strings.Builder
	fmt.Fprintf(&b, "URL: %s\n", final)
	if final.String() != start.String() {
		fmt.Fprintf(&b, "Redirected from: %s\n", start)
	}
	fmt.Fprintf(&b, "Status: %d\nContent-Type: %s\n", resp.StatusCode, shownType)
	if truncated {
		fmt.Fprintf(&b, "Truncated: the response is larger than %s; only the first %s was read.\n", fetchSize(t.maxBytes), fetchSize(t.maxBytes))
	}
	fmt.Fprintf(&b, "\nPrompt: %s\n\n", prompt)

	data := map[string]any{"url": final.String(), "status": resp.StatusCode, "content_type": mediaType, "truncated": truncated}
	if kind == fetchKindBinary {
		n, size := resp.ContentLength, "unknown size"
		if body != nil {
			n = int64(len(body))
		}
		if n >= 0 {
			size = fetchSize(n)
			if truncated {
				size = "more than " + size
			}
			data["bytes"] = n
		}
		fmt.Fprintf(&b, "[The response is %s (%s), which WebFetch does not return as text; no content is shown.]", fetchOr(mediaType, "binary data"), size)
		r := tool.Text(b.String())
		r.Data = data
		return r
	}
	data["bytes"] = int64(len(body))
	content := fetchDecode(body, mediaType, params, ctHeader, final)
	if strings.TrimSpace(content) == "" {
		content = "[The page has no readable text.]"
	}
	b.WriteString(content)
	r := tool.Text(b.String())
	r.Data = data
	return r
}

func fetchOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// fetchDecode turns a body into UTF-8 text: HTML converted to markdown-ish
// text, other text decoded from its declared charset.
func fetchDecode(body []byte, mediaType string, params map[string]string, ctHeader string, base *url.URL) string {
	switch fetchClassify(mediaType) {
	case fetchKindHTML:
		enc, name, certain := charset.DetermineEncoding(body, ctHeader)
		// The guess looks at the first 1024 bytes only; an undeclared page
		// that is valid UTF-8 throughout is UTF-8, not windows-1252.
		if certain || name != "windows-1252" || !utf8.Valid(body) {
			if dec, err := enc.NewDecoder().Bytes(body); err == nil {
				body = dec
			}
		}
		return fetchHTMLToMarkdown(string(body), base)
	case fetchKindText:
		if label := params["charset"]; label != "" && !strings.EqualFold(label, "utf-8") && !strings.EqualFold(label, "utf8") {
			if enc, _ := charset.Lookup(label); enc != nil {
				if dec, err := enc.NewDecoder().Bytes(body); err == nil {
					body = dec
				}
			}
		}
		return strings.ToValidUTF8(string(body), "\uFFFD")
	case fetchKindUnknown:
		return strings.ToValidUTF8(string(body), "\uFFFD")
	}
	return ""
}

func fetchExcerpt(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= fetchExcerptChars {
		return s
	}
	r := []rune(s)
	return string(r[:fetchExcerptChars]) + "…"
}

func fetchSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n == 1:
		return "1 byte"
	}
	return fmt.Sprintf("%d bytes", n)
}

// ---- SSRF guard ----

// fetchBlockedError is the refusal of a non-public address.
type fetchBlockedError struct {
	Host   string
	Addr   netip.Addr
	Reason string
}

func (e *fetchBlockedError) Error() string {
	target := e.Host
	if e.Addr.IsValid() && e.Addr.String() != e.Host {
		target = fmt.Sprintf("%s (%s)", e.Host, e.Addr)
	}
	return fmt.Sprintf("WebFetch refused to connect to %s: it is a %s address. Loopback, private, link-local and other non-public networks are blocked so that an agent cannot probe the network it runs in; an operator can allow them with the AllowPrivateNetworks option of the builtin tools (builtin.Config.AllowPrivateNetworks).", target, e.Reason)
}

type fetchGuard struct {
	blocked func(netip.Addr) string
	// proxies holds the "host:port" of proxies the transport was told to
	// use: their dials are allowed (the operator configured them) and the
	// target is checked in the Proxy hook instead.
	proxies sync.Map
}

// dialContext checks the address of every connection right before it is
// made, after DNS resolution, so neither a redirect nor a DNS answer that
// changes between check and use can reach a blocked address.
func (g *fetchGuard) dialContext(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if _, ok := g.proxies.Load(addr); ok {
			return d.DialContext(ctx, network, addr)
		}
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		dd := *d
		dd.ControlContext = nil
		dd.Control = func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return &fetchBlockedError{Host: host, Reason: "unrecognised (" + address + ")"}
			}
			if reason := g.blocked(ap.Addr()); reason != "" {
				return &fetchBlockedError{Host: host, Addr: ap.Addr(), Reason: reason}
			}
			return nil
		}
		return dd.DialContext(ctx, network, addr)
	}
}

// proxyFunc wraps a transport's Proxy hook: with a proxy, the proxy resolves
// and connects to the target, so the target is resolved and checked here.
// A name that does not resolve locally is let through: behind a proxy, DNS
// for outside names is often the proxy's job.
func (g *fetchGuard) proxyFunc(inner func(*http.Request) (*url.URL, error)) func(*http.Request) (*url.URL, error) {
	return func(req *http.Request) (*url.URL, error) {
		pu, err := inner(req)
		if err != nil || pu == nil {
			return pu, err
		}
		if blocked, _ := g.checkHost(req.Context(), req.URL.Hostname()); blocked != nil {
			return nil, blocked
		}
		g.proxies.Store(net.JoinHostPort(pu.Hostname(), fetchPort(pu)), struct{}{})
		return pu, nil
	}
}

// checkHost resolves host and reports the first blocked address.
func (g *fetchGuard) checkHost(ctx context.Context, host string) (*fetchBlockedError, error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		if reason := g.blocked(ip); reason != "" {
			return &fetchBlockedError{Host: host, Addr: ip, Reason: reason}, nil
		}
		return nil, nil
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, err
	}
	for _, ip := range ips {
		if reason := g.blocked(ip); reason != "" {
			return &fetchBlockedError{Host: host, Addr: ip, Reason: reason}, nil
		}
	}
	return nil, nil
}

// transport builds the round tripper: ours (or a clone of the caller's
// *http.Transport) with the guarded dialer; an opaque caller transport is
// used as is and checked per hop instead.
func (t *fetchTool) transport(base http.RoundTripper) http.RoundTripper {
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	var tr *http.Transport
	switch b := base.(type) {
	case nil:
		tr = &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           dialer.DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          16,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: t.timeout,
			ExpectContinueTimeout: time.Second,
		}
	case *http.Transport:
		if t.guard != nil && (b.DialContext != nil || b.Dial != nil || b.DialTLSContext != nil || b.DialTLS != nil) {
			t.preResolve = true
			return b
		}
		tr = b.Clone()
	default:
		t.preResolve = t.guard != nil
		return base
	}
	if t.guard != nil {
		tr.DialContext = t.guard.dialContext(dialer)
		if tr.Proxy != nil {
			tr.Proxy = t.guard.proxyFunc(tr.Proxy)
		}
	}
	return tr
}

type fetchPrefixRule struct {
	prefix netip.Prefix
	reason string
}

var fetchReservedPrefixes = func() []fetchPrefixRule {
	rules := []struct{ p, r string }{
		{"0.0.0.0/8", "unspecified (\"this network\")"},
		{"100.64.0.0/10", "carrier-grade NAT (shared)"},
		{"192.0.0.0/24", "IETF protocol assignment"},
		{"192.0.2.0/24", "documentation (TEST-NET)"},
		{"198.18.0.0/15", "benchmarking"},
		{"198.51.100.0/24", "documentation (TEST-NET)"},
		{"203.0.113.0/24", "documentation (TEST-NET)"},
		{"240.0.0.0/4", "reserved"},
		{"::/96", "IPv4-compatible (deprecated)"},
		{"64:ff9b:1::/48", "local-use NAT64"},
		{"100::/64", "discard-only"},
		{"2001::/32", "Teredo tunnel"},
		{"2001:db8::/32", "documentation"},
		{"fec0::/10", "site-local (deprecated)"},
	}
	out := make([]fetchPrefixRule, len(rules))
	for i, r := range rules {
		out[i] = fetchPrefixRule{netip.MustParsePrefix(r.p), r.r}
	}
	return out
}()

var (
	fetchNAT64 = netip.MustParsePrefix("64:ff9b::/96")
	fetch6to4  = netip.MustParsePrefix("2002::/16")
	fetchMeta  = netip.MustParseAddr("169.254.169.254")
)

// fetchBlockedReason classifies an address: "" for a public one, else what
// kind of non-public address it is. IPv4 embedded in IPv6 (mapped, NAT64,
// 6to4) is judged by the IPv4 address it reaches.
func fetchBlockedReason(a netip.Addr) string {
	if !a.IsValid() {
		return "invalid"
	}
	a = a.WithZone("").Unmap()
	switch {
	case a.IsUnspecified():
		return "unspecified"
	case a.IsLoopback():
		return "loopback"
	case a == fetchMeta:
		return "link-local (cloud metadata service)"
	case a.IsMulticast():
		return "multicast"
	case a.IsLinkLocalUnicast():
		return "link-local"
	case a.IsPrivate():
		return "private"
	case a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "broadcast"
	}
	if a.Is6() {
		b := a.As16()
		if fetchNAT64.Contains(a) {
			return fetchEmbedded(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), "NAT64")
		}
		if fetch6to4.Contains(a) {
			return fetchEmbedded(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), "6to4")
		}
	}
	for _, r := range fetchReservedPrefixes {
		if r.prefix.Contains(a) {
			return r.reason
		}
	}
	return ""
}

func fetchEmbedded(v4 netip.Addr, via string) string {
	if r := fetchBlockedReason(v4); r != "" {
		return r + " (via " + via + " " + v4.String() + ")"
	}
	return ""
}

// ---- HTML to markdown-ish text ----

// fetchMaxDepth bounds the converter's recursion; deeper content is kept as
// plain text (pages nested thousands deep are generated or hostile).
const fetchMaxDepth = 400

// fetchMaxIndent is how many levels of lists and quotes are indented.
const fetchMaxIndent = 8

// fetchHTMLToMarkdown converts an HTML document into text a model reads
// well: the title, headings as #, paragraphs, "- " lists, [text](absolute
// url) links, fenced code and pipe tables, without scripts, styles,
// navigation and footers. It never fails and returns valid UTF-8.
func fetchHTMLToMarkdown(src string, base *url.URL) string {
	doc, err := html.Parse(strings.NewReader(src))
	if err != nil {
		// The parser gives up on pathological nesting; the text is still
		// worth having.
		return fetchStripTags(src)
	}
	c := &fetchConv{base: base}
	if b := fetchFind(doc, atom.Base); b != nil && base != nil {
		if href := strings.TrimSpace(fetchAttr(b, "href")); href != "" {
			if nb, err := base.Parse(href); err == nil {
				c.base = nb
			}
		}
	}
	var out strings.Builder
	if title := fetchCollapse(fetchTextContent(fetchFind(doc, atom.Title))); title != "" {
		out.WriteString("Title: " + title + "\n\n")
	}
	c.walk(doc, 0)
	c.flush()
	out.WriteString(c.out.String())
	return strings.ToValidUTF8(strings.TrimSpace(out.String()), "\uFFFD")
}

// fetchStripTags is the fallback for documents the parser rejects: the
// text between tags, without scripts and styles, whitespace collapsed.
func fetchStripTags(src string) string {
	z := html.NewTokenizer(strings.NewReader(src))
	var b strings.Builder
	skip := 0
	for {
		switch z.Next() {
		case html.ErrorToken:
			return strings.ToValidUTF8(fetchCollapse(b.String()), "\uFFFD")
		case html.TextToken:
			if skip == 0 {
				b.Write(z.Text())
				b.WriteByte(' ')
			}
		case html.StartTagToken:
			if name, _ := z.TagName(); fetchSkipsText(string(name)) {
				skip++
			}
		case html.EndTagToken:
			if name, _ := z.TagName(); fetchSkipsText(string(name)) && skip > 0 {
				skip--
			}
		}
	}
}

func fetchSkipsText(tag string) bool {
	switch tag {
	case "script", "style", "noscript", "template", "svg":
		return true
	}
	return false
}

type fetchFrame struct {
	quote  bool
	marker string // list item marker ("- ", "3. ")
	used   bool   // the marker has been written
}

type fetchConv struct {
	base   *url.URL
	inLink bool // images inside links render as their alt text
	out    strings.Builder
	para   strings.Builder // the inline text of the current block
	space  bool            // whitespace is pending before the next word
	lead   bool            // whitespace came before any text (for inline sub-renders)
	frames []fetchFrame
	items  int // how many of frames are list items
	// forceBlank asks for a blank line before the next block even inside a
	// list (around a top-level list).
	forceBlank bool
	lastCont   string // the line prefix of the last block written
}

func fetchCommonPrefix(a, b string) string {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return a[:n]
}

func (c *fetchConv) walk(n *html.Node, depth int) {
	switch n.Type {
	case html.TextNode:
		c.text(n.Data)
	case html.ElementNode:
		c.element(n, depth)
	case html.DocumentNode:
		c.children(n, depth)
	}
}

func (c *fetchConv) children(n *html.Node, depth int) {
	if depth > fetchMaxDepth {
		c.text(fetchTextContent(n))
		return
	}
	for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
		c.walk(ch, depth+1)
	}
}

func (c *fetchConv) element(n *html.Node, depth int) {
	if n.Namespace == "svg" || fetchHasAttr(n, "hidden") || fetchAttr(n, "aria-hidden") == "true" {
		return
	}
	if n.Namespace == "math" {
		c.text(" " + fetchTextContent(n) + " ")
		return
	}
	switch n.DataAtom {
	case atom.Script, atom.Style, atom.Noscript, atom.Nav, atom.Footer, atom.Template,
		atom.Iframe, atom.Object, atom.Embed, atom.Canvas, atom.Head, atom.Title,
		atom.Select, atom.Button, atom.Textarea, atom.Input, atom.Audio, atom.Video, atom.Dialog:
		return
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		c.flush()
		c.children(n, depth)
		text := strings.TrimSpace(strings.ReplaceAll(c.para.String(), "\n", " "))
		c.para.Reset()
		c.space = false
		if text != "" {
			c.forceBlank = true
			c.para.WriteString(strings.Repeat("#", int(n.Data[1]-'0')) + " " + text)
			c.flush()
			c.forceBlank = true
		}
	case atom.Br:
		c.hardBreak()
	case atom.Hr:
		c.flush()
		c.writeLines([]string{"---"})
	case atom.Ul, atom.Ol, atom.Menu:
		c.list(n, depth)
	case atom.Li:
		c.item(n, "- ", depth)
	case atom.Blockquote:
		c.flush()
		c.push(fetchFrame{quote: true})
		c.children(n, depth)
		c.flush()
		c.pop()
	case atom.Pre:
		c.pre(n)
	case atom.Code, atom.Kbd, atom.Samp, atom.Tt:
		c.code(n)
	case atom.A:
		c.link(n, depth)
	case atom.Img:
		c.image(n)
	case atom.Table:
		c.table(n, depth)
	case atom.P, atom.Div, atom.Section, atom.Article, atom.Main, atom.Header, atom.Aside,
		atom.Figure, atom.Figcaption, atom.Address, atom.Details, atom.Summary, atom.Dl,
		atom.Dt, atom.Dd, atom.Fieldset, atom.Form, atom.Legend, atom.Center, atom.Hgroup,
		atom.Caption, atom.Tr, atom.Body, atom.Html:
		c.flush()
		c.children(n, depth)
		c.flush()
	case atom.Td, atom.Th:
		c.children(n, depth)
		c.softSpace()
	default:
		c.children(n, depth)
	}
}

func (c *fetchConv) text(s string) {
	for _, r := range s {
		if unicode.IsSpace(r) {
			if c.para.Len() > 0 {
				c.space = true
			} else if c.out.Len() == 0 {
				c.lead = true
			}
			continue
		}
		if c.space {
			c.para.WriteByte(' ')
			c.space = false
		}
		c.para.WriteRune(r)
	}
}

// word writes an inline token that must not be split or collapsed.
func (c *fetchConv) word(s string) {
	if c.space {
		c.para.WriteByte(' ')
		c.space = false
	}
	c.para.WriteString(s)
}

func (c *fetchConv) softSpace() {
	if c.para.Len() > 0 {
		c.space = true
	}
}

func (c *fetchConv) hardBreak() {
	if c.para.Len() > 0 {
		c.para.WriteByte('\n')
	}
	c.space = false
}

func (c *fetchConv) inList() bool { return c.items > 0 }

func (c *fetchConv) push(f fetchFrame) {
	c.frames = append(c.frames, f)
	if !f.quote {
		c.items++
	}
}

func (c *fetchConv) pop() {
	if !c.frames[len(c.frames)-1].quote {
		c.items--
	}
	c.frames = c.frames[:len(c.frames)-1]
}

// prefix is what starts a line: quote marks, list indentation, and on the
// first line of a block the list markers not yet written.
// Nesting deeper than fetchMaxIndent frames is not indented further, so a
// hostile page cannot make every line hundreds of characters long.
func (c *fetchConv) prefix(first bool) string {
	var b strings.Builder
	for i := range c.frames {
		f := &c.frames[i]
		switch {
		case first && !f.quote && !f.used:
			b.WriteString(f.marker)
			f.used = true
		case i >= fetchMaxIndent:
		case f.quote:
			b.WriteString("> ")
		default:
			b.WriteString(strings.Repeat(" ", len(f.marker)))
		}
	}
	return b.String()
}

func (c *fetchConv) flush() {
	text := strings.TrimRight(c.para.String(), " \n")
	c.para.Reset()
	c.space = false
	if strings.TrimSpace(text) == "" {
		return
	}
	raw := strings.Split(text, "\n")
	lines := raw[:0]
	for i, l := range raw {
		l = strings.TrimRight(l, " ")
		if l == "" && i > 0 && raw[i-1] == "" {
			continue
		}
		raw[i] = l
		lines = append(lines, l)
	}
	c.writeLines(lines)
}

// writeLines writes one block, separated from the previous one by a blank
// line (a plain newline between the items of a list).
func (c *fetchConv) writeLines(lines []string) {
	if c.out.Len() > 0 {
		// The blank line carries only the quote marks both blocks share, so
		// a quote does not start with an empty ">" line.
		blank := strings.TrimRight(fetchCommonPrefix(c.lastCont, c.prefix(false)), " ")
		if c.inList() && !c.forceBlank {
			c.out.WriteByte('\n')
		} else {
			c.out.WriteString("\n" + blank + "\n")
		}
	}
	c.forceBlank = false
	var cont string
	for i, l := range lines {
		if i == 0 {
			c.out.WriteString(c.prefix(true))
			cont = c.prefix(false)
			c.lastCont = cont
		} else {
			c.out.WriteByte('\n')
			if l == "" {
				c.out.WriteString(strings.TrimRight(cont, " "))
			} else {
				c.out.WriteString(cont)
			}
		}
		c.out.WriteString(l)
	}
}

func (c *fetchConv) list(n *html.Node, depth int) {
	c.flush()
	top := !c.inList()
	if top {
		c.forceBlank = true
	}
	ordered := n.DataAtom == atom.Ol
	num := 1
	if v, err := strconv.Atoi(strings.TrimSpace(fetchAttr(n, "start"))); err == nil && v >= 0 && v < 1e9 {
		num = v
	}
	if depth > fetchMaxDepth {
		c.text(fetchTextContent(n))
		c.flush()
		return
	}
	for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
		if ch.Type == html.ElementNode && ch.DataAtom == atom.Li && ch.Namespace == "" {
			marker := "- "
			if ordered {
				marker = strconv.Itoa(num) + ". "
				num++
			}
			c.item(ch, marker, depth+1)
			continue
		}
		c.walk(ch, depth+1)
	}
	c.flush()
	if top {
		c.forceBlank = true
	}
}

func (c *fetchConv) item(li *html.Node, marker string, depth int) {
	c.flush()
	c.push(fetchFrame{marker: marker})
	c.children(li, depth)
	c.flush()
	c.pop()
}

func (c *fetchConv) pre(n *html.Node) {
	raw := strings.ReplaceAll(fetchTextContent(n), "\r", "")
	raw = strings.TrimRight(strings.TrimLeft(raw, "\n"), " \t\n")
	if strings.TrimSpace(raw) == "" {
		return
	}
	fence := "```"
	for strings.Contains(raw, fence) {
		fence += "`"
	}
	lines := append([]string{fence + fetchCodeLang(n)}, strings.Split(raw, "\n")...)
	lines = append(lines, fence)
	c.flush()
	c.writeLines(lines)
	c.forceBlank = true
}

// fetchCodeLang finds a language in the usual class names
// ("language-go", "lang-go", "highlight-source-go") on pre or its code.
func fetchCodeLang(pre *html.Node) string {
	nodes := []*html.Node{pre}
	for ch := pre.FirstChild; ch != nil; ch = ch.NextSibling {
		if ch.Type == html.ElementNode && ch.DataAtom == atom.Code {
			nodes = append(nodes, ch)
		}
	}
	for _, n := range nodes {
		for _, cls := range strings.Fields(fetchAttr(n, "class")) {
			for _, p := range []string{"language-", "lang-", "highlight-source-"} {
				if lang, ok := strings.CutPrefix(cls, p); ok && lang != "" && fetchIsLang(lang) {
					return lang
				}
			}
		}
	}
	return ""
}

func fetchIsLang(s string) bool {
	for _, r := range s {
		if !(r == '-' || r == '+' || r == '#' || r == '_' || r == '.' || unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return false
		}
	}
	return len(s) <= 32
}

func (c *fetchConv) code(n *html.Node) {
	raw := fetchTextContent(n)
	s := fetchCollapse(raw)
	if s == "" {
		c.text(raw)
		return
	}
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	c.edgeSpace(raw, true)
	c.word(fence + s + fence)
	c.edgeSpace(raw, false)
}

// edgeSpace keeps the whitespace at an edge of an element rendered as one
// token, so "see<code> x</code>" stays "see `x`".
func (c *fetchConv) edgeSpace(raw string, leading bool) {
	var r rune
	if leading {
		r, _ = utf8.DecodeRuneInString(raw)
	} else {
		r, _ = utf8.DecodeLastRuneInString(raw)
	}
	if unicode.IsSpace(r) {
		c.softSpace()
	}
}

// inline renders n's children on their own and returns them as one line,
// with whether whitespace preceded and followed the text.
func (c *fetchConv) inline(n *html.Node, depth int) (text string, lead, trail bool) {
	sub := &fetchConv{base: c.base, inLink: c.inLink || n.DataAtom == atom.A}
	sub.children(n, depth)
	trail = sub.space
	sub.flush()
	return strings.Join(strings.Fields(sub.out.String()), " "), sub.lead, trail
}

func (c *fetchConv) link(n *html.Node, depth int) {
	text, lead, trail := c.inline(n, depth)
	if lead {
		c.softSpace()
	}
	if text != "" {
		href := strings.TrimSpace(fetchAttr(n, "href"))
		if target := c.resolve(href); target != "" && !strings.HasPrefix(href, "#") && !c.inLink {
			text = strings.NewReplacer("[", `\[`, "]", `\]`).Replace(text)
			c.word("[" + text + "](" + target + ")")
		} else {
			c.word(text)
		}
	}
	if trail {
		c.softSpace()
	}
}

func (c *fetchConv) image(n *html.Node) {
	alt := fetchCollapse(fetchAttr(n, "alt"))
	if alt == "" {
		return
	}
	src := c.resolve(strings.TrimSpace(fetchAttr(n, "src")))
	if c.inLink || src == "" || strings.HasPrefix(src, "mailto:") {
		c.word(alt)
		return
	}
	c.word("![" + strings.NewReplacer("[", `\[`, "]", `\]`).Replace(alt) + "](" + src + ")")
}

// resolve makes a link absolute; links a reader cannot follow
// (javascript:, data:) come back empty.
func (c *fetchConv) resolve(href string) string {
	if href == "" {
		return ""
	}
	var u *url.URL
	var err error
	if c.base != nil {
		u, err = c.base.Parse(href)
	} else {
		u, err = url.Parse(href)
	}
	if err != nil {
		return ""
	}
	switch u.Scheme {
	case "http", "https", "mailto", "ftp":
	default:
		return ""
	}
	return strings.NewReplacer("(", "%28", ")", "%29", " ", "%20").Replace(u.String())
}

type fetchRow struct {
	cells  []*html.Node
	header bool
}

func (c *fetchConv) table(n *html.Node, depth int) {
	c.flush()
	var rows []fetchRow
	var caption *html.Node
	cols, layout := 0, false
	addRow := func(tr *html.Node, inHead bool) {
		row := fetchRow{header: true}
		for cell := tr.FirstChild; cell != nil; cell = cell.NextSibling {
			if cell.Type != html.ElementNode || (cell.DataAtom != atom.Td && cell.DataAtom != atom.Th) {
				continue
			}
			row.cells = append(row.cells, cell)
			if cell.DataAtom == atom.Td && !inHead {
				row.header = false
			}
			if fetchHasBlock(cell) {
				layout = true
			}
		}
		if len(row.cells) > 0 {
			rows = append(rows, row)
			cols = max(cols, len(row.cells))
		}
	}
	for ch := n.FirstChild; ch != nil; ch = ch.NextSibling {
		if ch.Type != html.ElementNode {
			continue
		}
		switch ch.DataAtom {
		case atom.Caption:
			caption = ch
		case atom.Tr:
			addRow(ch, false)
		case atom.Thead, atom.Tbody, atom.Tfoot:
			for tr := ch.FirstChild; tr != nil; tr = tr.NextSibling {
				if tr.Type == html.ElementNode && tr.DataAtom == atom.Tr {
					addRow(tr, ch.DataAtom == atom.Thead)
				}
			}
		}
	}
	if caption != nil {
		c.children(caption, depth)
		c.flush()
	}
	// Tables that lay out a page rather than hold data read better as
	// blocks than as one enormous row.
	if cols <= 1 || layout || depth > fetchMaxDepth {
		for _, r := range rows {
			for _, cell := range r.cells {
				c.children(cell, depth+1)
				c.flush()
			}
		}
		return
	}
	var lines []string
	for _, r := range rows {
		cells := make([]string, len(r.cells))
		empty := true
		for i, cell := range r.cells {
			text, _, _ := c.inline(cell, depth+1)
			cells[i] = strings.ReplaceAll(text, "|", `\|`)
			if text != "" {
				empty = false
			}
		}
		if empty {
			continue
		}
		lines = append(lines, "| "+strings.Join(cells, " | ")+" |")
		if len(lines) == 1 && r.header {
			lines = append(lines, "|"+strings.Repeat(" --- |", len(cells)))
		}
	}
	if len(lines) > 0 {
		c.writeLines(lines)
		c.forceBlank = true
	}
}

// fetchHasBlock reports block structure inside a table cell, the mark of a
// layout table.
func fetchHasBlock(cell *html.Node) bool {
	found := false
	fetchEach(cell, func(n *html.Node) bool {
		switch n.DataAtom {
		case atom.Table, atom.Ul, atom.Ol, atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6,
			atom.Pre, atom.Blockquote, atom.Hr:
			found = true
		}
		return !found
	})
	return found
}

// fetchEach visits n's element descendants depth-first without recursion
// (documents can nest deeper than a goroutine stack should), skipping the
// subtree of any element for which visit returns false.
func fetchEach(n *html.Node, visit func(*html.Node) bool) {
	if n == nil {
		return
	}
	stack := []*html.Node{}
	for ch := n.LastChild; ch != nil; ch = ch.PrevSibling {
		stack = append(stack, ch)
	}
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if x.Type == html.ElementNode && !visit(x) {
			continue
		}
		for ch := x.LastChild; ch != nil; ch = ch.PrevSibling {
			stack = append(stack, ch)
		}
	}
}

func fetchFind(n *html.Node, a atom.Atom) *html.Node {
	var found *html.Node
	fetchEach(n, func(x *html.Node) bool {
		if found != nil || x.Namespace == "svg" {
			return false
		}
		if x.DataAtom == a && x.Namespace == "" {
			found = x
			return false
		}
		return true
	})
	return found
}

// fetchTextContent is the text under n (whitespace kept, <br> as a newline),
// without scripts and styles.
func fetchTextContent(n *html.Node) string {
	if n == nil {
		return ""
	}
	if n.Type == html.TextNode {
		return n.Data
	}
	var b strings.Builder
	stack := []*html.Node{}
	for ch := n.LastChild; ch != nil; ch = ch.PrevSibling {
		stack = append(stack, ch)
	}
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		switch x.Type {
		case html.TextNode:
			b.WriteString(x.Data)
			continue
		case html.ElementNode:
			switch x.DataAtom {
			case atom.Script, atom.Style, atom.Template, atom.Noscript:
				continue
			case atom.Br:
				b.WriteByte('\n')
				continue
			}
		default:
			continue
		}
		for ch := x.LastChild; ch != nil; ch = ch.PrevSibling {
			stack = append(stack, ch)
		}
	}
	return b.String()
}

func fetchCollapse(s string) string { return strings.Join(strings.Fields(s), " ") }

func fetchAttr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			return a.Val
		}
	}
	return ""
}

func fetchHasAttr(n *html.Node, key string) bool {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			return true
		}
	}
	return false
}
