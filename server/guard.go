package server

import (
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// What keeps a web page from driving the API. A server without a bearer
// token trusts whoever can reach it, and a browser reaches a loopback
// server on behalf of any page it shows, in two ways:
//
//   - DNS rebinding: a page on evil.example re-points that name at
//     127.0.0.1. Its requests are then same-origin for the browser (it may
//     read the answers) and carry Host: evil.example. The host guard
//     refuses every Host that is not a loopback name or an IP address,
//     like Jupyter's and Vite's dev servers do: a name the attacker
//     controls is never one of those.
//   - Cross-site requests: a page posts a form (or fetch()es in no-cors
//     mode) to http://127.0.0.1:8080. The browser sends it with the page's
//     Origin; the origin guard refuses every state-changing request (and
//     WebSocket upgrade) from an origin that is neither the server's own
//     nor one of the CORS origins, and JSON bodies must say
//     application/json, which no form and no simple request can send
//     without a CORS preflight.
//
// With a bearer token, rebinding and cross-site pages get nowhere anyway
// (the browser does not hold the token), so the host guard only runs when
// hosts are configured; the origin and Content-Type rules hold always.

// hostGuard refuses requests whose Host is not allowed (see hostAllowed).
func (s *Server) hostGuard(next http.Handler) http.Handler {
	if s.cfg.BearerToken != "" && len(s.cfg.AllowedHosts) == 0 {
		return next
	}
	allow := newHostAllowlist(s.cfg.AllowedHosts)
	if allow.any {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !allow.allowed(r.Host) {
			writeError(w, http.StatusForbidden, errPermission, "host "+quote(r.Host)+
				" is not allowed: this server answers loopback names (localhost) and IP addresses only,"+
				" so that a web page cannot reach it by DNS rebinding; name the host in --allowed-hosts"+
				" (Config.AllowedHosts) to allow it")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// hostAllowlist is the parsed Config.AllowedHosts.
type hostAllowlist struct {
	any     bool
	exact   map[string]bool
	domains []string // ".example.com": the domain and its subdomains
}

func newHostAllowlist(hosts []string) hostAllowlist {
	a := hostAllowlist{exact: map[string]bool{}}
	for _, h := range hosts {
		h = strings.ToLower(strings.TrimSpace(h))
		switch {
		case h == "":
		case h == "*":
			a.any = true
		case strings.HasPrefix(h, "."):
			if d := strings.TrimSuffix(h, "."); len(d) > 1 {
				a.domains = append(a.domains, d)
			}
		default:
			a.exact[hostName(h)] = true
		}
	}
	return a
}

// allowed reports whether a Host header value is allowed: a loopback name
// (localhost, *.localhost), an IP address, or a configured host; the port
// does not matter.
func (a hostAllowlist) allowed(host string) bool {
	name := hostName(host)
	if name == "" {
		return false
	}
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		// RFC 6761: resolvers answer these with loopback themselves, and
		// browsers never ask DNS for them, so no page can rebind them.
		return true
	}
	if _, err := netip.ParseAddr(name); err == nil {
		// An address cannot be rebound: a page served from one is
		// requested from that very address.
		return true
	}
	if a.exact[name] {
		return true
	}
	for _, d := range a.domains {
		if name == d[1:] || strings.HasSuffix(name, d) {
			return true
		}
	}
	return false
}

// hostName is a Host header's name without the port, brackets or a final
// dot, in lower case; "" when it is malformed.
func hostName(host string) string {
	host = strings.ToLower(strings.TrimSpace(host))
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	} else if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	}
	host = strings.TrimSuffix(host, ".")
	if strings.ContainsAny(host, "/@ []") {
		return ""
	}
	return host
}

// originGuard refuses cross-origin state-changing requests and WebSocket
// upgrades: those whose Origin is present and is neither the server's own
// origin nor one of the CORS origins. Requests without an Origin come from
// programs, not pages (browsers send one on every such request), unless
// the browser says through Sec-Fetch-Site that the request is cross-site.
// Safe methods pass: a cross-origin page cannot read their answers (CORS)
// and they change nothing.
func (s *Server) originGuard(next http.Handler) http.Handler {
	anyOrigin, allowed := s.corsOrigins()
	if anyOrigin {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !stateChanging(r) {
			next.ServeHTTP(w, r)
			return
		}
		origin := r.Header.Get("Origin")
		if origin == "" {
			switch r.Header.Get("Sec-Fetch-Site") {
			case "cross-site", "same-site":
				writeError(w, http.StatusForbidden, errPermission,
					"cross-site request refused: a browser sent it from another site without an Origin")
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		if sameOrigin(origin, r) || allowed[normOrigin(origin)] {
			next.ServeHTTP(w, r)
			return
		}
		writeError(w, http.StatusForbidden, errPermission, "cross-origin request from "+quote(origin)+
			" refused: only the server's own origin and the CORS origins (--cors) may change anything")
	})
}

// corsOrigins parses Config.CORSOrigins: whether "*" is among them, and
// the others normalised.
func (s *Server) corsOrigins() (anyOrigin bool, allowed map[string]bool) {
	allowed = map[string]bool{}
	for _, o := range s.cfg.CORSOrigins {
		o = strings.TrimSpace(o)
		if o == "*" {
			anyOrigin = true
		} else if o != "" {
			allowed[normOrigin(o)] = true
		}
	}
	return anyOrigin, allowed
}

// normOrigin lower-cases an origin and drops a trailing slash and the
// scheme's default port, as browsers write it.
func normOrigin(o string) string {
	o = strings.ToLower(strings.TrimRight(strings.TrimSpace(o), "/"))
	if rest, ok := strings.CutPrefix(o, "http://"); ok {
		return "http://" + strings.TrimSuffix(rest, ":80")
	}
	if rest, ok := strings.CutPrefix(o, "https://"); ok {
		return "https://" + strings.TrimSuffix(rest, ":443")
	}
	return o
}

// sameOrigin reports whether origin is the one the request was sent to.
func sameOrigin(origin string, r *http.Request) bool {
	scheme := "http://"
	if r.TLS != nil {
		scheme = "https://"
	}
	return r.Host != "" && normOrigin(origin) == normOrigin(scheme+r.Host)
}

// stateChanging: every method but the safe ones, and WebSocket upgrades
// (a GET that opens a channel able to send messages and answer
// permission requests).
func stateChanging(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		return headerHasToken(r.Header, "Upgrade", "websocket")
	case http.MethodOptions:
		return false
	}
	return true
}

// requireJSON answers 415 and reports false when the request has a body
// that is not declared as JSON (application/json, with a UTF-8 charset if
// any). A form or a no-cors fetch() cannot declare it, so a cross-site
// page cannot get a body decoded. An empty body needs no type: several
// endpoints take an optional one.
func requireJSON(w http.ResponseWriter, r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	if isJSONType(ct) || r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return true
	}
	if r.ContentLength < 0 {
		// Chunked: only the first byte tells whether there is a body (the
		// request is refused if there is, so the byte is not kept).
		var b [1]byte
		if _, err := io.ReadFull(r.Body, b[:]); err == io.EOF {
			return true
		} else if err != nil {
			writeBodyError(w, err)
			return false
		}
	}
	got := "none"
	if ct != "" {
		got = quote(ct)
	}
	writeError(w, http.StatusUnsupportedMediaType, errInvalidRequest,
		"the request body must be JSON sent with Content-Type: application/json (got "+got+")")
	return false
}

func isJSONType(ct string) bool {
	if ct == "" {
		return false
	}
	typ, params, err := mime.ParseMediaType(ct)
	if err != nil || typ != "application/json" {
		return false
	}
	cs, ok := params["charset"]
	return !ok || strings.EqualFold(cs, "utf-8") || strings.EqualFold(cs, "utf8")
}
