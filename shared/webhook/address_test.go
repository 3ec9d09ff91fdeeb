package webhook

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"testing"

	"github.com/moku/sellerapi/shared/errs"
)

func TestPublic(t *testing.T) {
	for addr, want := range map[string]bool{
		"8.8.8.8": true, "1.1.1.1": true, "93.184.216.34": true, "2606:4700:4700::1111": true, "2a00:1450:4001:82a::200e": true,
		"0.0.0.0": false, "0.1.2.3": false, "10.1.2.3": false, "100.64.0.1": false, "100.127.255.254": false,
		"127.0.0.1": false, "127.255.255.254": false, "169.254.169.254": false, "172.16.0.1": false, "172.31.255.255": false,
		"192.0.0.8": false, "192.0.2.1": false, "192.88.99.1": false, "192.168.1.1": false, "198.18.0.1": false, "198.19.255.255": false,
		"198.51.100.7": false, "203.0.113.9": false, "224.0.0.1": false, "239.255.255.250": false, "240.0.0.1": false, "255.255.255.255": false,
		"100.63.255.255": true, "100.128.0.0": true, "172.15.255.255": true, "172.32.0.0": true, "198.17.255.255": true, "198.20.0.0": true,
		"::": false, "::1": false, "fe80::1": false, "fc00::1": false, "fd12:3456::1": false, "ff02::1": false, "fec0::1": false,
		"::ffff:127.0.0.1": false, "::ffff:10.0.0.1": false, "::ffff:8.8.8.8": true, "::127.0.0.1": false, "64:ff9b::7f00:1": false,
		"2001:db8::1": false, "2001::1": false, "2001:2::1": false, "2002:7f00:1::1": false, "3fff::1": false, "100::1": false,
		"fe80::1%eth0": false,
	} {
		if got := Public(netip.MustParseAddr(addr)); got != want {
			t.Errorf("Public(%s) = %v, want %v", addr, got, want)
		}
	}
}

func TestParseIPv4LikeBrowsers(t *testing.T) {
	for host, want := range map[string]string{
		"127.0.0.1": "127.0.0.1", "2130706433": "127.0.0.1", "0x7f000001": "127.0.0.1", "0x7f.1": "127.0.0.1",
		"0177.0.0.1": "127.0.0.1", "127.1": "127.0.0.1", "127.0.1": "127.0.0.1", "0x7f.0.0.0x1": "127.0.0.1",
		"017700000001": "127.0.0.1", "10.0.0.1.": "10.0.0.1", "0": "0.0.0.0", "0x": "0.0.0.0", "8.8.8.8": "8.8.8.8",
		"3232235777": "192.168.1.1",
	} {
		got, ok := parseIPv4(host)
		if !ok || got.String() != want {
			t.Errorf("parseIPv4(%q) = %v %v, want %s", host, got, ok, want)
		}
	}
	for _, host := range []string{"256.0.0.1", "1.2.3.4.5", "4294967296", "0x100000000", "09.1.1.1", "1..1", "foo.1", "1.256.1.1"} {
		if a, ok := parseIPv4(host); ok {
			t.Errorf("parseIPv4(%q) = %v, want failure", host, a)
		}
	}
	for host, want := range map[string]bool{"example.com": false, "1.2.3.4": true, "2130706433": true, "a.0x7f": true, "a.0x": true,
		"1abc": false, "a.b.": false, "x.123.": true, "0xg": false, "": false, "123.example": false} {
		if got := endsInNumber(host); got != want {
			t.Errorf("endsInNumber(%q) = %v, want %v", host, got, want)
		}
	}
}

func TestParseURL(t *testing.T) {
	prod, local := Policy{}, Policy{AllowLoopback: true}
	accepted := []string{
		"https://hooks.example.com/moku", "https://hooks.example.com:443/moku?x=1", "https://HOOKS.Example.com/", "https://8.8.8.8/x",
		"https://[2606:4700:4700::1111]/x", "https://hooks.example.com./x", "https://xn--bcher-kva.example/",
	}
	for _, u := range accepted {
		if _, err := prod.ParseURL(u); err != nil {
			t.Errorf("ParseURL(%q) = %v, want accepted", u, err)
		}
	}
	refused := map[string]string{
		"http://hooks.example.com/":            "https",
		"https://hooks.example.com:80/":        "port 443",
		"https://hooks.example.com:8443/":      "port 443",
		"https://hooks.example.com:0443/":      "invalid port",
		"https://hooks.example.com:/":          "empty port",
		"https://user:pw@hooks.example.com/":   "user info",
		"https://hooks.example.com/#frag":      "fragment",
		"https://hooks.example.com/#":          "fragment",
		"ftp://hooks.example.com/":             "https",
		"https:///path":                        "host",
		"https:hooks.example.com":              "host",
		"hooks.example.com/x":                  "https",
		"":                                     "empty",
		"https://127.0.0.1/":                   "not a public address",
		"https://10.0.0.8/":                    "not a public address",
		"https://169.254.169.254/latest":       "not a public address",
		"https://100.64.1.1/":                  "not a public address",
		"https://0.0.0.0/":                     "not a public address",
		"https://[::1]/":                       "not a public address",
		"https://[fe80::1]/":                   "not a public address",
		"https://[fc00::1]/":                   "not a public address",
		"https://[::ffff:127.0.0.1]/":          "IPv4-mapped",
		"https://[::ffff:8.8.8.8]/":            "IPv4-mapped",
		"https://[fe80::1%25eth0]/":            "zone",
		"https://2130706433/":                  "non-canonical",
		"https://0177.0.0.1/":                  "non-canonical",
		"https://0x7f000001/":                  "non-canonical",
		"https://0x7f.1/":                      "non-canonical",
		"https://127.1/":                       "non-canonical",
		"https://134744072/":                   "non-canonical", // 8.8.8.8, public but spelled as a number
		"https://1.2.3.4.5/":                   "reads as an IP address",
		"https://foo.123/":                     "reads as an IP address",
		"https://localhost/":                   "fully qualified",
		"https://api.localhost/":               "localhost",
		"https://intranet/":                    "fully qualified",
		"https://bad_host-.example.com/":       "invalid host name",
		"https://bücher.example/":              "xn--",
		"https://hooks.example.com/a b":        "spaces",
		"https://hooks.example.com\\@evil/":    "backslashes",
		"https://" + strings.Repeat("a", 2050): "at most 2048",
	}
	for u, want := range refused {
		_, err := prod.ParseURL(u)
		e := errs.As(err)
		if err == nil || e.Code != errs.CodeWebhookURLNotAllowed || !strings.HasPrefix(e.Detail, "url: ") || !strings.Contains(e.Detail, want) {
			t.Errorf("ParseURL(%q) = %v, want WEBHOOK_URL_NOT_ALLOWED mentioning %q", u, err, want)
		}
	}
	// The local flag opens plain http, any port and loopback addresses, but
	// never user info or fragments, and no other private address.
	for _, u := range []string{"http://127.0.0.1:8080/hook", "https://localhost:9000/", "http://intranet/x", "http://[::1]:3000/"} {
		if _, err := local.ParseURL(u); err != nil {
			t.Errorf("local ParseURL(%q) = %v", u, err)
		}
	}
	for _, u := range []string{"http://u@127.0.0.1/", "http://127.0.0.1/#f", "ftp://127.0.0.1/",
		"http://10.0.0.8/", "http://172.16.0.1:8080/", "http://192.168.1.20/", "http://169.254.169.254/", "http://100.64.1.1/",
		"http://0.0.0.0/", "http://[fd00::1]/", "http://[fe80::1]/", "http://[::]/"} {
		if _, err := local.ParseURL(u); err == nil {
			t.Errorf("local ParseURL(%q) accepted", u)
		}
	}
}

func TestCheckURLResolvesNames(t *testing.T) {
	hosts := Policy{Resolver: Hosts{
		"hooks.example.com":    {netip.MustParseAddr("93.184.216.34")},
		"internal.example.com": {netip.MustParseAddr("10.0.0.5")},
		"mixed.example.com":    {netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("127.0.0.1")},
		"mapped.example.com":   {netip.MustParseAddr("::ffff:192.168.0.1")},
		"v6.example.com":       {netip.MustParseAddr("fd00::1")},
	}}
	ctx := context.Background()
	if _, err := hosts.CheckURL(ctx, "https://hooks.example.com/x"); err != nil {
		t.Fatalf("public name: %v", err)
	}
	// The refusal names the rule, the same whether the name has no address
	// or one that is not public, and never what the name resolved to.
	for name, addr := range map[string]string{
		"internal.example.com": "10.0.0.5", "mixed.example.com": "127.0.0.1",
		"mapped.example.com": "192.168.0.1", "v6.example.com": "fd00::1", "missing.example.com": "",
	} {
		_, err := hosts.CheckURL(ctx, "https://"+name+"/x")
		want := "url: the host " + name + " must resolve, and only to public addresses"
		if e := errs.As(err); e.Code != errs.CodeWebhookURLNotAllowed || e.Detail != want {
			t.Errorf("%s: %v, want %q", name, err, want)
		}
		if addr != "" && strings.Contains(err.Error(), addr) {
			t.Errorf("%s: %v names the address it resolved to", name, err)
		}
	}
	// A lookup that fails for another reason is an outage: fail closed.
	if _, err := (Policy{Resolver: failing{}}).CheckURL(ctx, "https://hooks.example.com/x"); errs.As(err).Kind != errs.Unavailable {
		t.Fatalf("lookup outage: %v, want 503", err)
	}
	// Under the local flag a name may resolve to loopback, never to
	// another private address.
	local := hosts
	local.AllowLoopback = true
	local.Resolver = Hosts{
		"localhost": {netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")}, "hooks.example.com": {netip.MustParseAddr("93.184.216.34")},
		"lan.example.com": {netip.MustParseAddr("192.168.1.20")}, "ten.example.com": {netip.MustParseAddr("10.1.2.3")},
		"corp.example.com": {netip.MustParseAddr("172.20.0.1")}, "ula.example.com": {netip.MustParseAddr("fd12::1")},
		"half.example.com": {netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("10.0.0.1")},
	}
	for _, u := range []string{"http://localhost:8080/x", "https://hooks.example.com/x"} {
		if _, err := local.CheckURL(ctx, u); err != nil {
			t.Errorf("local %s: %v", u, err)
		}
	}
	for _, name := range []string{"lan", "ten", "corp", "ula", "half"} {
		_, err := local.CheckURL(ctx, "http://"+name+".example.com:8080/x")
		if e := errs.As(err); e.Code != errs.CodeWebhookURLNotAllowed || !strings.Contains(e.Detail, "must resolve, and only to public or loopback addresses") ||
			strings.Contains(e.Detail, ".1") || strings.Contains(e.Detail, "::") {
			t.Errorf("local %s: %v, want refused", name, err)
		}
	}
}

type failing struct{}

func (failing) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return nil, &net.DNSError{Err: "server misbehaving", IsTemporary: true}
}

// The dialer checks the address it actually connects to, whatever the
// name resolved to when the subscription was made: a rebinding name that
// now resolves to loopback is refused at the socket.
func TestDialerRefusesPrivateAddressesAtConnect(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) }))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	rebind := Hosts{"rebind.example.com": {netip.MustParseAddr("127.0.0.1")}}
	ctx := context.Background()
	for _, addr := range []string{net.JoinHostPort("rebind.example.com", strconv.Itoa(port)), net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), net.JoinHostPort("::ffff:127.0.0.1", strconv.Itoa(port))} {
		conn, err := Dialer{Policy: Policy{Resolver: rebind}}.DialContext(ctx, "tcp", addr)
		if err == nil {
			conn.Close()
			t.Fatalf("dial %s: connected, want refused", addr)
		}
		if !IsRefused(err) {
			t.Fatalf("dial %s: %v, want a refusal", addr, err)
		}
	}
	// The same request through the production client never reaches the server.
	_, err := NewClient(Policy{Resolver: rebind}).Get(srv.URL)
	if !IsRefused(err) {
		t.Fatalf("client: %v, want refused", err)
	}
	// Under the local flag it connects.
	res, err := NewClient(Policy{AllowLoopback: true, Resolver: rebind}).Get("http://rebind.example.com:" + strconv.Itoa(port) + "/")
	if err != nil || res.StatusCode != 204 {
		t.Fatalf("local client: %v %v", res, err)
	}
	res.Body.Close()
}

// The dial-time check under the local flag lets loopback through and
// refuses every other private address. The check runs on the address
// strings the dialer hands its Control hook, so no packet is sent anywhere
// but loopback.
func TestLocalDialerAllowsLoopbackOnly(t *testing.T) {
	local := Dialer{Policy: Policy{AllowLoopback: true}}
	prod := Dialer{}
	ctx := context.Background()
	for _, a := range []string{"127.0.0.1:80", "127.9.8.7:8080", "[::1]:3000", "[::ffff:127.0.0.1]:80"} {
		if err := local.control(ctx, "tcp", a, nil); err != nil {
			t.Errorf("local %s: %v, want allowed", a, err)
		}
		if err := prod.control(ctx, "tcp", a, nil); !IsRefused(err) {
			t.Errorf("production %s: %v, want refused", a, err)
		}
	}
	for _, a := range []string{"10.0.0.8:80", "172.16.0.1:80", "172.31.255.254:443", "192.168.1.20:8080", "169.254.169.254:80",
		"100.64.1.1:80", "0.0.0.0:80", "[fd00::1]:80", "[fe80::1]:80", "[::ffff:192.168.0.1]:80", "[::]:80", "224.0.0.1:80"} {
		if err := local.control(ctx, "tcp", a, nil); !IsRefused(err) {
			t.Errorf("local %s: %v, want refused", a, err)
		}
	}
	if err := local.control(ctx, "tcp", "93.184.216.34:443", nil); err != nil {
		t.Errorf("local public address: %v", err)
	}
}

// Redirects are never followed: a 3xx is the answer, and a failure.
func TestClientFollowsNoRedirect(t *testing.T) {
	hit := false
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hit = true }))
	defer target.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL, http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	res, err := NewClient(Policy{AllowLoopback: true}).Post(srv.URL, "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusTemporaryRedirect || hit {
		t.Fatalf("status %d, target hit %v", res.StatusCode, hit)
	}
}

func itoa(n int) string {
	return netip.AddrPortFrom(netip.IPv4Unspecified(), uint16(n)).String()[len("0.0.0.0:"):]
}
