package netguard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		addr string
		want string // "" = allowed; else a substring of the reason
	}{
		// IPv4 loopback, unspecified, private.
		{"127.0.0.1", "loopback"},
		{"127.1.2.3", "loopback"},
		{"127.255.255.255", "loopback"},
		{"0.0.0.0", "unspecified"},
		{"0.1.2.3", "this network"},
		{"10.0.0.1", "private"},
		{"10.255.255.255", "private"},
		{"172.16.0.1", "private"},
		{"172.31.255.254", "private"},
		{"192.168.1.1", "private"},
		// IPv6 loopback, unspecified, unique local (fc00::/7, fd00::/8).
		{"::1", "loopback"},
		{"::", "unspecified"},
		{"fc00::1", "private"},
		{"fd00::1", "private"},
		{"fd12:3456:789a::1", "private"},
		{"fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "private"},
		// IPv4-mapped IPv6 is judged by its IPv4 address.
		{"::ffff:127.0.0.1", "loopback"},
		{"::ffff:0.0.0.0", "unspecified"},
		{"::ffff:192.168.1.1", "private"},
		{"::ffff:169.254.169.254", "cloud metadata"},
		{"::ffff:100.64.0.1", "carrier-grade NAT"},
		// Link-local and cloud metadata services.
		{"169.254.169.254", "link-local (cloud metadata"},
		{"fd00:ec2::254", "private (cloud metadata"},
		{"169.254.1.1", "link-local"},
		{"fe80::1", "link-local"},
		{"fe80::1%eth0", "link-local"},
		// Carrier-grade NAT 100.64/10 (Alibaba's metadata 100.100.100.200).
		{"100.64.0.1", "carrier-grade NAT"},
		{"100.100.100.200", "carrier-grade NAT"},
		{"100.127.255.254", "carrier-grade NAT"},
		// Multicast and broadcast.
		{"224.0.0.1", "multicast"},
		{"239.255.255.250", "multicast"},
		{"ff02::1", "multicast"},
		{"ff05::2", "multicast"},
		{"255.255.255.255", "broadcast"},
		// Reserved and special-purpose ranges.
		{"240.0.0.1", "reserved"},
		{"192.0.2.10", "documentation"},
		{"198.51.100.7", "documentation"},
		{"203.0.113.9", "documentation"},
		{"198.18.0.1", "benchmarking"},
		{"192.0.0.170", "IETF"},
		{"2001:db8::1", "documentation"},
		{"fec0::1", "site-local"},
		{"100::1", "discard-only"},
		{"::7f00:1", "IPv4-compatible"},
		// IPv4 reached through IPv6 transition prefixes.
		{"64:ff9b::7f00:1", "loopback (via NAT64 127.0.0.1)"},
		{"64:ff9b::a9fe:a9fe", "cloud metadata"},
		{"64:ff9b:1::1", "local-use NAT64"},
		{"2002:a00:1::1", "private (via 6to4 10.0.0.1)"},
		{"2002:7f00:1::", "loopback (via 6to4 127.0.0.1)"},
		{"2001::1", "Teredo"},
		// Public addresses, including the edges of blocked ranges.
		{"8.8.8.8", ""},
		{"1.1.1.1", ""},
		{"93.184.215.14", ""},
		{"100.63.255.255", ""},
		{"100.128.0.0", ""},
		{"172.15.255.255", ""},
		{"172.32.0.0", ""},
		{"169.253.255.255", ""},
		{"11.0.0.0", ""},
		{"223.255.255.255", ""},
		{"2606:4700:4700::1111", ""},
		{"2a00:1450:4001::200e", ""},
		{"fe00::1", ""}, // outside fe80::/10 and fc00::/7
		{"64:ff9b::808:808", ""},
		{"2002:808:808::1", ""},
		{"::ffff:8.8.8.8", ""},
	} {
		got := Classify(netip.MustParseAddr(tc.addr))
		switch {
		case tc.want == "" && got != "":
			t.Errorf("%s: blocked as %q, want allowed", tc.addr, got)
		case tc.want != "" && !strings.Contains(got, tc.want):
			t.Errorf("%s: reason %q, want %q", tc.addr, got, tc.want)
		}
	}
	if got := Classify(netip.Addr{}); got == "" {
		t.Error("the zero Addr must be blocked")
	}
}

func TestBlockedError(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err       BlockedError
		target    string
		inMessage string
	}{
		{BlockedError{Host: "localhost", Addr: netip.MustParseAddr("127.0.0.1"), Reason: "loopback"}, "localhost (127.0.0.1)", "refused to connect to localhost (127.0.0.1): it is a loopback address"},
		{BlockedError{Host: "10.0.0.1", Addr: netip.MustParseAddr("10.0.0.1"), Reason: "private"}, "10.0.0.1", "refused to connect to 10.0.0.1: it is a private address"},
		{BlockedError{Host: "example.test", Reason: "unrecognised (x)"}, "example.test", "unrecognised (x) address"},
	} {
		if got := tc.err.Target(); got != tc.target {
			t.Errorf("Target() = %q, want %q", got, tc.target)
		}
		if got := tc.err.Error(); got != tc.inMessage && !strings.Contains(got, tc.inMessage) {
			t.Errorf("Error() = %q, want it to contain %q", got, tc.inMessage)
		}
	}
}

// server starts a loopback server that counts its requests.
func server(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.WriteString(w, "reached "+r.URL.String())
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

// TestDialRefusesAfterResolution dials through the guard alone: names
// that resolve to loopback and literal loopback forms are refused at
// connect time, and no request reaches the server.
func TestDialRefusesAfterResolution(t *testing.T) {
	t.Parallel()
	srv, hits := server(t)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	rt, guarded := New(nil).Transport(nil)
	if !guarded {
		t.Fatal("a new transport must be guarded at dial time")
	}
	client := &http.Client{Transport: rt}
	for _, tc := range []struct{ url, host string }{
		{srv.URL, "127.0.0.1"},
		{fmt.Sprintf("http://localhost:%d/", port), "localhost"},
		{fmt.Sprintf("http://[::ffff:127.0.0.1]:%d/", port), "::ffff:127.0.0.1"},
	} {
		resp, err := client.Get(tc.url)
		if err == nil {
			resp.Body.Close()
			t.Errorf("%s: not refused", tc.url)
			continue
		}
		var b *BlockedError
		if !errors.As(err, &b) || b.Reason != "loopback" || b.Host != tc.host {
			t.Errorf("%s: error %v, want a loopback refusal of host %q", tc.url, err, tc.host)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the server received %d requests", n)
	}
}

// TestDialRebinding: the classification changes between two connections
// to the same name (a DNS answer that flips to an internal address): the
// second connection is refused although the first went through.
func TestDialRebinding(t *testing.T) {
	t.Parallel()
	srv, hits := server(t)
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	var rebound atomic.Bool
	g := New(func(a netip.Addr) string {
		if rebound.Load() {
			return "private"
		}
		return ""
	})
	rt, _ := g.Transport(&http.Transport{DisableKeepAlives: true})
	client := &http.Client{Transport: rt}
	u := fmt.Sprintf("http://localhost:%d/x", port)
	resp, err := client.Get(u)
	if err != nil {
		t.Fatalf("first connection: %v", err)
	}
	resp.Body.Close()
	rebound.Store(true)
	if resp, err := client.Get(u); err == nil {
		resp.Body.Close()
		t.Fatal("the second connection was not refused")
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("the server received %d requests, want 1", n)
	}
}

// TestClassifyOverride: the classification a test passes lets exactly
// its fakes through.
func TestClassifyOverride(t *testing.T) {
	t.Parallel()
	srv, _ := server(t)
	g := New(func(a netip.Addr) string {
		if a == netip.MustParseAddr("127.0.0.1") {
			return ""
		}
		return Classify(a)
	})
	rt, _ := g.Transport(nil)
	resp, err := (&http.Client{Transport: rt}).Get(srv.URL + "/ok")
	if err != nil {
		t.Fatalf("allowed fake: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "reached /ok" {
		t.Errorf("body %q", body)
	}
	if b := g.Check("10.0.0.1", netip.MustParseAddr("10.0.0.1")); b == nil || b.Reason != "private" {
		t.Errorf("Check(10.0.0.1) = %v, want a private refusal", b)
	}
}

func TestCheckHost(t *testing.T) {
	t.Parallel()
	g := New(nil)
	for _, tc := range []struct {
		host   string
		reason string // "" = allowed
	}{
		{"localhost", "loopback"},
		{"127.0.0.1", "loopback"},
		{"::1", "loopback"},
		{"169.254.169.254", "cloud metadata"},
		{"93.184.215.14", ""},
	} {
		b, err := g.CheckHost(context.Background(), tc.host)
		if err != nil {
			t.Errorf("%s: %v", tc.host, err)
			continue
		}
		switch {
		case tc.reason == "" && b != nil:
			t.Errorf("%s: refused (%v)", tc.host, b)
		case tc.reason != "" && (b == nil || !strings.Contains(b.Reason, tc.reason)):
			t.Errorf("%s: %v, want a %s refusal", tc.host, b, tc.reason)
		}
	}
	if _, err := g.CheckHost(context.Background(), "no-such-host.invalid"); err == nil {
		t.Error("an unresolvable name must be a resolution error")
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestTransportKinds: only transports whose dial weft controls are
// reported as guarded; the others come back untouched for per-request
// checks.
func TestTransportKinds(t *testing.T) {
	t.Parallel()
	g := New(nil)
	custom := roundTripper(func(*http.Request) (*http.Response, error) { return nil, errors.New("unused") })
	ownDial := &http.Transport{DialContext: (&net.Dialer{}).DialContext}
	plain := &http.Transport{MaxIdleConns: 3}
	for _, tc := range []struct {
		name    string
		in      http.RoundTripper
		guarded bool
		same    bool // returned as is
	}{
		{"nil", nil, true, false},
		{"plain transport", plain, true, false},
		{"transport with its own dialer", ownDial, false, true},
		{"transport with its own TLS dialer", &http.Transport{DialTLSContext: ownDial.DialContext}, false, true},
		{"custom round tripper", custom, false, true},
	} {
		rt, guarded := g.Transport(tc.in)
		if guarded != tc.guarded {
			t.Errorf("%s: guarded %v, want %v", tc.name, guarded, tc.guarded)
		}
		if tc.same && fmt.Sprintf("%p", rt) != fmt.Sprintf("%p", tc.in) {
			t.Errorf("%s: the transport was replaced", tc.name)
		}
		if tr, ok := rt.(*http.Transport); ok && tc.guarded {
			if tr == plain || tr.DialContext == nil {
				t.Errorf("%s: not a guarded clone", tc.name)
			}
			if tc.in == plain && tr.MaxIdleConns != 3 {
				t.Errorf("%s: the clone lost the caller's settings", tc.name)
			}
		}
	}
	if plain.DialContext != nil {
		t.Error("the caller's transport was modified")
	}
}

// TestProxyChecksTarget: behind a proxy the target is checked before the
// request, and the proxy itself (on loopback here) may be dialled.
func TestProxyChecksTarget(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.URL.String())
		mu.Unlock()
		io.WriteString(w, "via proxy")
	}))
	t.Cleanup(proxy.Close)
	pu, _ := url.Parse(proxy.URL)
	rt, guarded := New(nil).Transport(&http.Transport{Proxy: http.ProxyURL(pu)})
	if !guarded {
		t.Fatal("not guarded")
	}
	client := &http.Client{Transport: rt}
	resp, err := client.Get("http://93.184.215.14/page")
	if err != nil {
		t.Fatalf("public target via proxy: %v", err)
	}
	resp.Body.Close()
	for _, u := range []string{"http://localhost/admin", "http://10.1.2.3/", "http://[fd00::1]/"} {
		resp, err := client.Get(u)
		if err == nil {
			resp.Body.Close()
			t.Errorf("%s: not refused", u)
			continue
		}
		var b *BlockedError
		if !errors.As(err, &b) {
			t.Errorf("%s: error %v, want a refusal", u, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen[0] != "http://93.184.215.14/page" {
		t.Errorf("proxy saw %v", seen)
	}
}

func TestPort(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"http://a/": "80", "https://a/": "443", "socks5://p": "1080", "http://a:8080/": "8080", "ftp://a/": "",
	} {
		u, _ := url.Parse(in)
		if got := Port(u); got != want {
			t.Errorf("Port(%s) = %q, want %q", in, got, want)
		}
	}
}
