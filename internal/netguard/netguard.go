// Package netguard keeps outbound HTTP away from non-public addresses
// (loopback, private, link-local, cloud metadata, multicast, reserved), so
// that a URL chosen by a model cannot make weft probe the network it runs
// in (server-side request forgery).
//
// The check runs at dial time, on the address actually being connected to
// after DNS resolution: neither a redirect nor a DNS answer that changes
// between a check and the connection (DNS rebinding) can reach a blocked
// address. Where the dial cannot be instrumented (a caller's own
// RoundTripper or dialer), Guard.Transport says so and the caller checks
// each host with CheckHost before the request instead.
package netguard

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"sync"
	"syscall"
	"time"
)

// BlockedError is the refusal of a non-public address.
type BlockedError struct {
	// Host is the name or literal address that was asked for.
	Host string
	// Addr is the address it resolved to, when known.
	Addr netip.Addr
	// Reason says what kind of address it is ("loopback", "private", ...).
	Reason string
}

// Target is the host, with the address it resolved to when that differs.
func (e *BlockedError) Target() string {
	if e.Addr.IsValid() && e.Addr.String() != e.Host {
		return fmt.Sprintf("%s (%s)", e.Host, e.Addr)
	}
	return e.Host
}

func (e *BlockedError) Error() string {
	return fmt.Sprintf("refused to connect to %s: it is a %s address", e.Target(), e.Reason)
}

// Guard refuses connections to addresses its Classify function rejects.
// The zero value is not usable; make one with New. A Guard is safe for
// concurrent use.
type Guard struct {
	classify func(netip.Addr) string
	// proxies holds the "host:port" of proxies a transport was told to
	// use: dials to them are allowed (the operator configured them) and
	// the target is checked in the Proxy hook instead.
	proxies sync.Map
}

// New returns a guard that refuses the addresses for which classify
// returns a non-empty reason. nil means Classify, the public-internet
// rule; tests whose servers live on loopback pass a function that lets
// their own address through.
func New(classify func(netip.Addr) string) *Guard {
	if classify == nil {
		classify = Classify
	}
	return &Guard{classify: classify}
}

// Check refuses addr when it is blocked; host names it in the error.
func (g *Guard) Check(host string, addr netip.Addr) *BlockedError {
	if reason := g.classify(addr); reason != "" {
		return &BlockedError{Host: host, Addr: addr, Reason: reason}
	}
	return nil
}

// CheckHost resolves host (unless it is a literal address) and refuses it
// when any of its addresses is blocked. The error is a resolution failure;
// a refusal is reported as *BlockedError with a nil error.
func (g *Guard) CheckHost(ctx context.Context, host string) (*BlockedError, error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		return g.Check(host, ip), nil
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, err
	}
	for _, ip := range ips {
		if b := g.Check(host, ip); b != nil {
			return b, nil
		}
	}
	return nil, nil
}

// DialContext wraps d: every connection's address is checked right before
// the connection is made, after DNS resolution (d's Control hooks are
// replaced by the check).
func (g *Guard) DialContext(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
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
				return &BlockedError{Host: host, Reason: "unrecognised (" + address + ")"}
			}
			if b := g.Check(host, ap.Addr()); b != nil {
				return b
			}
			return nil
		}
		return dd.DialContext(ctx, network, addr)
	}
}

// Proxy wraps a transport's Proxy hook. Behind a proxy the dial goes to
// the proxy, which resolves and connects to the target, so the target is
// resolved and checked here instead. A name that does not resolve locally
// is let through: behind a proxy, DNS for outside names is often the
// proxy's job.
func (g *Guard) Proxy(inner func(*http.Request) (*url.URL, error)) func(*http.Request) (*url.URL, error) {
	return func(req *http.Request) (*url.URL, error) {
		pu, err := inner(req)
		if err != nil || pu == nil {
			return pu, err
		}
		if b, _ := g.CheckHost(req.Context(), req.URL.Hostname()); b != nil {
			return nil, b
		}
		g.proxies.Store(net.JoinHostPort(pu.Hostname(), Port(pu)), struct{}{})
		return pu, nil
	}
}

// Transport guards rt at dial time where it can: nil gets a new
// *http.Transport (with the proxy from the environment), a plain
// *http.Transport is cloned with the guarded dialer and proxy hook. An
// opaque RoundTripper, or a Transport with its own dial functions, cannot
// be instrumented: it comes back as it is with dialGuarded false, and the
// caller must CheckHost every request's host itself.
func (g *Guard) Transport(rt http.RoundTripper) (_ http.RoundTripper, dialGuarded bool) {
	var tr *http.Transport
	switch b := rt.(type) {
	case nil:
		tr = http.DefaultTransport.(*http.Transport).Clone()
	case *http.Transport:
		if b.DialContext != nil || b.Dial != nil || b.DialTLSContext != nil || b.DialTLS != nil {
			return b, false
		}
		tr = b.Clone()
	default:
		return rt, false
	}
	tr.DialContext = g.DialContext(&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second})
	if tr.Proxy != nil {
		tr.Proxy = g.Proxy(tr.Proxy)
	}
	return tr, true
}

// Port is u's port, or its scheme's default.
func Port(u *url.URL) string {
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

type prefixRule struct {
	prefix netip.Prefix
	reason string
}

var reservedPrefixes = func() []prefixRule {
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
	out := make([]prefixRule, len(rules))
	for i, r := range rules {
		out[i] = prefixRule{netip.MustParsePrefix(r.p), r.r}
	}
	return out
}()

var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
	// The metadata services of AWS, Azure, GCP and Oracle (169.254.169.254)
	// and AWS's IPv6 one; Alibaba's 100.100.100.200 is carrier-grade NAT.
	metadata4 = netip.MustParseAddr("169.254.169.254")
	metadata6 = netip.MustParseAddr("fd00:ec2::254")
)

// Classify is the public-internet rule: "" for a public unicast address,
// else what kind of non-public address it is. IPv4 embedded in IPv6
// (mapped, NAT64, 6to4) is judged by the IPv4 address it reaches; the
// zero Addr is blocked.
func Classify(a netip.Addr) string {
	if !a.IsValid() {
		return "invalid"
	}
	a = a.WithZone("").Unmap()
	switch {
	case a.IsUnspecified():
		return "unspecified"
	case a.IsLoopback():
		return "loopback"
	case a == metadata4:
		return "link-local (cloud metadata service)"
	case a == metadata6:
		return "private (cloud metadata service)"
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
		if nat64.Contains(a) {
			return embedded(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), "NAT64")
		}
		if sixToFour.Contains(a) {
			return embedded(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), "6to4")
		}
	}
	for _, r := range reservedPrefixes {
		if r.prefix.Contains(a) {
			return r.reason
		}
	}
	return ""
}

func embedded(v4 netip.Addr, via string) string {
	if r := Classify(v4); r != "" {
		return r + " (via " + via + " " + v4.String() + ")"
	}
	return ""
}
