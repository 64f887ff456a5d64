package builtin

import (
	"bytes"
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
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/base"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/commonmark"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/strikethrough"
	"github.com/JohannesKaufmann/html-to-markdown/v2/plugin/table"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
	"golang.org/x/net/html/charset"

	"github.com/weft-run/weft/internal/netguard"
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
	guard *netguard.Guard
	// preResolve: the transport is not ours to instrument (a caller's custom
	// RoundTripper or dialer), so each hop's host is resolved and checked
	// before the request instead of at dial time.
	preResolve bool
}

// NewWebFetch returns the WebFetch tool: it fetches an http(s) URL and
// returns the page as text, refusing non-public addresses unless
// cfg.AllowPrivateNetworks is set.
func NewWebFetch(cfg Config) tool.Tool { return fetchNew(cfg, nil) }

// fetchNew lets tests replace the address classification (nil means
// netguard.Classify), since every test server lives on loopback.
func fetchNew(cfg Config, classify func(netip.Addr) string) *fetchTool {
	t := &fetchTool{maxBytes: cfg.MaxFetchBytes, timeout: cfg.FetchTimeout}
	if t.maxBytes <= 0 {
		t.maxBytes = fetchDefaultMaxBytes
	}
	if t.timeout <= 0 {
		t.timeout = fetchDefaultTimeout
	}
	if !cfg.AllowPrivateNetworks {
		t.guard = netguard.New(classify)
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
- weft does not run a second model over the page: the result is the page itself (HTML converted to Markdown with headings, lists, links, code blocks and tables, without navigation, sidebars, footers and scripts; plain text, markdown and JSON as they are), headed by the final URL, the HTTP status, the content type and your prompt echoed back. Read it and answer the prompt yourself.
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
		if b := t.guard.Check(host, ip); b != nil {
			return errors.New(fetchRefusal(b))
		}
		return nil
	}
	if !t.preResolve {
		return nil
	}
	blocked, err := t.guard.CheckHost(ctx, host)
	if blocked != nil {
		return errors.New(fetchRefusal(blocked))
	}
	if err != nil {
		return fmt.Errorf("WebFetch: could not resolve host %s: %v", host, err)
	}
	return nil
}

func (t *fetchTool) transportError(parent, ctx context.Context, u *url.URL, err error) tool.Result {
	var blocked *netguard.BlockedError
	if errors.As(err, &blocked) {
		return tool.Errorf("%s", fetchRefusal(blocked))
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
		if blocked := t.guard.Check(to.Hostname(), ip); blocked != nil {
			fmt.Fprintf(&b, "\n\nNote: the redirect target is a %s address, which WebFetch will refuse.", blocked.Reason)
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
		return netguard.Port(from) == netguard.Port(to)
	}
	return from.Scheme == "http" && to.Scheme == "https" && netguard.Port(from) == "80" && netguard.Port(to) == "443"
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

// ---- SSRF guard (internal/netguard) ----

// fetchRefusal is the model's message for a refused address.
func fetchRefusal(b *netguard.BlockedError) string {
	return "WebFetch " + b.Error() + ". Loopback, private, link-local and other non-public networks are blocked so that an agent cannot probe the network it runs in; an operator can allow them with the AllowPrivateNetworks option of the builtin tools (builtin.Config.AllowPrivateNetworks)."
}

// transport builds the round tripper: ours (or a clone of the caller's
// *http.Transport) guarded at dial time; an opaque caller transport is
// used as is and checked per hop instead (preResolve).
func (t *fetchTool) transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		// No DialContext: the guard supplies the dialer; without a guard
		// the clone below gets the same timeouts.
		base = &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          16,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: t.timeout,
			ExpectContinueTimeout: time.Second,
		}
	}
	if t.guard != nil {
		rt, dialGuarded := t.guard.Transport(base)
		t.preResolve = !dialGuarded
		return rt
	}
	tr, ok := base.(*http.Transport)
	if !ok {
		return base
	}
	tr = tr.Clone()
	if tr.DialContext == nil && tr.Dial == nil {
		tr.DialContext = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	return tr
}

// ---- HTML to Markdown (html-to-markdown v2, after a pre-pass) ----

// fetchMaxIndent is how many levels of lists and quotes are kept as such;
// deeper ones become plain blocks, so that a hostile page cannot make
// every line hundreds of characters of indentation.
const fetchMaxIndent = 8

// fetchConverter is configured for a model reading the text, not for a
// Markdown renderer: no escaping of Markdown characters (a backslash
// before every "*", "_" and "#" of the page is noise; only "|" inside
// table cells is escaped, by fetchPrepare, because it would split the
// cell), tables as GitHub pipe tables with minimal padding, no list-end
// comments (fetchPrepare drops link and image titles). It is immutable once built
// and safe for concurrent use.
var fetchConverter = sync.OnceValue(func() *converter.Converter {
	conv := converter.NewConverter(
		converter.WithEscapeMode(converter.EscapeModeDisabled),
		converter.WithPlugins(
			base.NewBasePlugin(),
			commonmark.NewCommonmarkPlugin(
				commonmark.WithHorizontalRule("---"),
				commonmark.WithListEndComment(false),
				// A link whose target fetchPrepare removed (a fragment, a
				// javascript: URL) or that has no text is its text alone.
				commonmark.WithLinkEmptyHrefBehavior(commonmark.LinkBehaviorSkip),
				commonmark.WithLinkEmptyContentBehavior(commonmark.LinkBehaviorSkip),
			),
			table.NewTablePlugin(
				table.WithHeaderPromotion(true),
				table.WithSkipEmptyRows(true),
				table.WithCellPaddingBehavior(table.CellPaddingBehaviorMinimal),
			),
			strikethrough.NewStrikethroughPlugin(),
		),
	)
	// The base plugin writes "<" and ">" of the page's text as "&lt;" and
	// "&gt;" (for a Markdown renderer's sake) even with escaping off. The
	// page's own characters are put aside before and restored after it, so
	// the model reads "<tag>" as the page shows it.
	conv.Register.TextTransformer(func(_ converter.Context, s string) string {
		return fetchAngleOut.Replace(s)
	}, converter.PriorityEarly)
	conv.Register.TextTransformer(func(_ converter.Context, s string) string {
		return fetchAngleIn.Replace(s)
	}, converter.PriorityLate)
	return conv
})

var (
	// U+E000 and U+E001 (private use) stand in for "<" and ">" between the
	// two transformers; the page's own are replaced so they cannot turn
	// into markup.
	fetchAngleOut = strings.NewReplacer("\ue000", "\ufffd", "\ue001", "\ufffd", "<", "\ue000", ">", "\ue001")
	fetchAngleIn  = strings.NewReplacer("\ue000", "<", "\ue001", ">")
)

// fetchHTMLToMarkdown converts an HTML document into Markdown a model
// reads well: the title, headings, paragraphs, lists, absolute links, fenced
// code and pipe tables, without scripts, styles, navigation, sidebars,
// footers and form controls. It never fails and returns valid UTF-8.
func fetchHTMLToMarkdown(src string, pageURL *url.URL) (out string) {
	doc, err := html.Parse(strings.NewReader(src))
	if err != nil {
		// The parser gives up on pathological nesting (more than 512 open
		// elements); the text is still worth having.
		return fetchStripTags(src)
	}
	defer func() {
		// The page is hostile input to a third-party converter: whatever
		// it trips, the model still gets the text.
		if recover() != nil {
			out = fetchStripTags(src)
		}
	}()
	var b strings.Builder
	if title := fetchCollapse(fetchTextContent(fetchFind(doc, atom.Title))); title != "" {
		b.WriteString("Title: " + title + "\n\n")
	}
	fetchPrepare(doc, fetchBase(doc, pageURL))
	md, err := fetchConverter().ConvertNode(doc)
	if err != nil {
		return fetchStripTags(src)
	}
	b.Write(fetchTidy(md))
	return strings.ToValidUTF8(strings.TrimSpace(b.String()), "\uFFFD")
}

// fetchBase is the URL relative links resolve against: the page's, or its
// <base href>.
func fetchBase(doc *html.Node, pageURL *url.URL) *url.URL {
	if pageURL == nil {
		return nil
	}
	if b := fetchFind(doc, atom.Base); b != nil {
		if href := strings.TrimSpace(fetchAttr(b, "href")); href != "" {
			if u, err := pageURL.Parse(href); err == nil {
				return u
			}
		}
	}
	return pageURL
}

// fetchTidy empties lines that hold only whitespace (the converter indents
// the blank lines inside list items).
func fetchTidy(md []byte) []byte {
	lines := bytes.Split(md, []byte("\n"))
	for i, l := range lines {
		if len(bytes.TrimSpace(l)) == 0 {
			lines[i] = nil
		}
	}
	return bytes.Join(lines, []byte("\n"))
}

// fetchDropped are the elements whose content a reader of the page does
// not want: code, styles, navigation, sidebars, footers, embedded media and
// form controls. A <form> itself stays: some sites (ASP.NET WebForms) wrap
// the whole page in one.
var fetchDropped = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true,
	atom.Nav: true, atom.Footer: true, atom.Aside: true,
	atom.Iframe: true, atom.Object: true, atom.Embed: true, atom.Canvas: true,
	atom.Audio: true, atom.Video: true, atom.Dialog: true,
	atom.Select: true, atom.Button: true, atom.Textarea: true, atom.Input: true,
}

// fetchDroppedRoles are the ARIA landmarks of the same kinds, for sites
// that mark a <div> as navigation rather than use <nav>.
var fetchDroppedRoles = map[string]bool{"navigation": true, "contentinfo": true, "complementary": true}

type fetchVisit struct {
	n      *html.Node
	indent int  // list and quote levels around n
	inLink bool // n is inside a link
	inCell bool // n is inside a table cell
}

// fetchPrepare edits the parsed page before conversion: it removes what
// fetchDropped names and hidden elements, makes links and image sources
// absolute (dropping targets a reader cannot follow), renders images inside
// links and images without a usable source as their alt text, keeps only a
// sane code language on <pre>, flattens lists and quotes nested deeper
// than fetchMaxIndent, turns no-break spaces into spaces and escapes "|" in
// table cells. The walk is iterative: a page can nest deeper than a
// goroutine stack should recurse.
func fetchPrepare(doc *html.Node, base *url.URL) {
	stack := []fetchVisit{{n: doc}}
	for len(stack) > 0 {
		v := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n := v.n
		switch n.Type {
		case html.TextNode:
			s := strings.ReplaceAll(n.Data, "\u00a0", " ")
			if v.inCell {
				s = strings.ReplaceAll(s, "|", `\|`)
			}
			n.Data = s
			continue
		case html.ElementNode:
			if fetchDrop(n) {
				n.Parent.RemoveChild(n)
				continue
			}
			if !fetchPrepareElement(n, &v, base) {
				continue
			}
		case html.DocumentNode:
		default:
			continue
		}
		for ch := n.LastChild; ch != nil; ch = ch.PrevSibling {
			stack = append(stack, fetchVisit{n: ch, indent: v.indent, inLink: v.inLink, inCell: v.inCell})
		}
	}
}

func fetchDrop(n *html.Node) bool {
	return n.Namespace == "svg" || fetchDropped[n.DataAtom] ||
		fetchHasAttr(n, "hidden") || fetchAttr(n, "aria-hidden") == "true" ||
		fetchDroppedRoles[strings.ToLower(strings.TrimSpace(fetchAttr(n, "role")))]
}

// fetchPrepareElement edits one element and updates v for its children;
// false means its children need no visit (it was replaced or is code).
func fetchPrepareElement(n *html.Node, v *fetchVisit, base *url.URL) bool {
	switch n.DataAtom {
	case atom.Ul, atom.Ol, atom.Menu, atom.Blockquote, atom.Li:
		if n.DataAtom != atom.Li {
			v.indent++
		}
		if v.indent > fetchMaxIndent {
			fetchRename(n, atom.Div)
		}
	case atom.Td, atom.Th:
		v.inCell = true
	case atom.A:
		target := fetchResolve(base, strings.TrimSpace(fetchAttr(n, "href")))
		if strings.HasPrefix(strings.TrimSpace(fetchAttr(n, "href")), "#") || v.inLink {
			target = ""
		}
		fetchSetAttr(n, "href", target)
		fetchSetAttr(n, "title", "")
		v.inLink = true
	case atom.Img:
		alt := fetchCollapse(fetchAttr(n, "alt"))
		if v.inCell {
			alt = strings.ReplaceAll(alt, "|", `\|`)
		}
		src := fetchResolve(base, strings.TrimSpace(fetchAttr(n, "src")))
		switch {
		case alt == "":
			n.Parent.RemoveChild(n)
		case v.inLink || src == "" || strings.HasPrefix(src, "mailto:"):
			n.Parent.InsertBefore(&html.Node{Type: html.TextNode, Data: alt}, n)
			n.Parent.RemoveChild(n)
		default:
			n.Attr = []html.Attribute{{Key: "src", Val: src}, {Key: "alt", Val: alt}}
		}
		return false
	case atom.Pre:
		lang := fetchCodeLang(n)
		fetchEach(n, func(x *html.Node) bool {
			fetchSetAttr(x, "class", "")
			return true
		})
		fetchSetAttr(n, "class", "")
		if lang != "" {
			fetchSetAttr(n, "class", "language-"+lang)
		}
		if v.inCell {
			// The code's own text is the cell's: escape it too.
			fetchEachText(n, func(t *html.Node) { t.Data = strings.ReplaceAll(t.Data, "|", `\|`) })
		}
		return false
	}
	return true
}

// fetchRename turns n into another element, keeping its children.
func fetchRename(n *html.Node, a atom.Atom) {
	n.DataAtom, n.Data, n.Attr = a, a.String(), nil
}

// fetchSetAttr sets (or with "" removes) an attribute.
func fetchSetAttr(n *html.Node, key, val string) {
	attrs := n.Attr[:0]
	for _, a := range n.Attr {
		if a.Namespace != "" || a.Key != key {
			attrs = append(attrs, a)
		}
	}
	if val != "" {
		attrs = append(attrs, html.Attribute{Key: key, Val: val})
	}
	n.Attr = attrs
}

func fetchEachText(n *html.Node, fn func(*html.Node)) {
	stack := []*html.Node{n}
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if x.Type == html.TextNode {
			fn(x)
		}
		for ch := x.FirstChild; ch != nil; ch = ch.NextSibling {
			stack = append(stack, ch)
		}
	}
}

// fetchResolve makes a link absolute; links a reader cannot follow
// (javascript:, data:, unparseable) come back empty.
func fetchResolve(base *url.URL, href string) string {
	if href == "" {
		return ""
	}
	var u *url.URL
	var err error
	if base != nil {
		u, err = base.Parse(href)
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
	return u.String()
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
