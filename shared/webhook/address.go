package webhook

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/moku/sellerapi/shared/errs"
)

// MaxURLLength bounds a subscription URL.
const MaxURLLength = 2048

// nonPublic lists the IPv4 ranges a webhook may never reach: everything
// IANA's special-purpose registry marks as not globally reachable, plus
// multicast and the reserved class E.
var nonPublic4 = prefixes(
	"0.0.0.0/8",          // "this network", including the unspecified address
	"10.0.0.0/8",         // private
	"100.64.0.0/10",      // shared address space (carrier-grade NAT)
	"127.0.0.0/8",        // loopback
	"169.254.0.0/16",     // link-local, including cloud metadata services
	"172.16.0.0/12",      // private
	"192.0.0.0/24",       // IETF protocol assignments
	"192.0.2.0/24",       // documentation (TEST-NET-1)
	"192.31.196.0/24",    // AS112
	"192.52.193.0/24",    // AMT
	"192.88.99.0/24",     // deprecated 6to4 relay anycast
	"192.168.0.0/16",     // private
	"192.175.48.0/24",    // direct delegation AS112
	"198.18.0.0/15",      // benchmarking
	"198.51.100.0/24",    // documentation (TEST-NET-2)
	"203.0.113.0/24",     // documentation (TEST-NET-3)
	"224.0.0.0/4",        // multicast
	"240.0.0.0/4",        // reserved, including the limited broadcast address
	"255.255.255.255/32", // broadcast (within 240/4, named for clarity)
)

// IPv6 must be global unicast (2000::/3) and outside these ranges; the
// rule refuses, among others, ::1, ::, fe80::/10, fc00::/7, ff00::/8,
// IPv4-compatible and NAT64 forms, all of which lie outside 2000::/3.
var nonPublic6 = prefixes(
	"2001::/23",     // IETF protocol assignments (Teredo, benchmarking, ORCHID…)
	"2001:db8::/32", // documentation
	"2002::/16",     // 6to4: embeds an IPv4 address we would have to trust
	"3fff::/20",     // documentation (RFC 9637)
	"5f00::/16",     // segment routing SIDs
)

var global6 = netip.MustParsePrefix("2000::/3")

func prefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// Reachable reports whether the policy lets a webhook connect to addr: a
// public address, or a loopback one under AllowLoopback.
func (p Policy) Reachable(addr netip.Addr) bool {
	return Public(addr) || p.AllowLoopback && addr.IsValid() && addr.Zone() == "" && addr.Unmap().IsLoopback()
}

// Public reports whether a webhook may connect to addr: a globally
// reachable unicast address. IPv4-mapped IPv6 addresses are judged as the
// IPv4 address they carry; an address with a zone is never public.
func Public(addr netip.Addr) bool {
	if !addr.IsValid() || addr.Zone() != "" {
		return false
	}
	addr = addr.Unmap()
	if addr.Is4() {
		for _, p := range nonPublic4 {
			if p.Contains(addr) {
				return false
			}
		}
		return true
	}
	if !global6.Contains(addr) {
		return false
	}
	for _, p := range nonPublic6 {
		if p.Contains(addr) {
			return false
		}
	}
	return true
}

// Policy is what a deployment lets webhooks reach. The zero Policy is
// production's: HTTPS on port 443 to public addresses only.
type Policy struct {
	// AllowLoopback (the local --allow-private-webhooks flag) also allows
	// plain http, any port, single-label names and loopback addresses
	// (127.0.0.0/8, ::1), for local runs and tests. Every other non-public
	// address (10/8, 172.16/12, 192.168/16, link-local, …) stays refused:
	// a local run must not be pointed at machines on the developer's
	// network.
	AllowLoopback bool
	// Resolver finds the addresses of host names at creation and at dial
	// time; nil is the system's resolver. Tests give a fixed one.
	Resolver Resolver
}

func urlErr(format string, args ...any) error {
	return errs.Ef(errs.CodeWebhookURLNotAllowed, "url: "+format, args...)
}

var labelPattern = regexp.MustCompile(`^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$`)

// ParseURL checks a subscription URL's shape without resolving it: an
// absolute https URL (or http under AllowLoopback) without user info or
// fragment, on port 443 (any port under AllowLoopback), whose host is a
// fully qualified domain name or a canonical IP literal. Hosts that only
// look like names but that browsers and resolvers read as IPv4 numbers
// (2130706433, 0x7f.1, 0177.0.0.1, 127.1) are refused, and a literal
// address must be public. It returns the parsed URL.
func (p Policy) ParseURL(raw string) (*url.URL, error) {
	if raw == "" {
		return nil, urlErr("must not be empty")
	}
	if len(raw) > MaxURLLength {
		return nil, urlErr("must be at most %d characters", MaxURLLength)
	}
	if strings.ContainsAny(raw, " \t\r\n\\") {
		return nil, urlErr("must not contain spaces or backslashes")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, urlErr("is not a valid URL")
	}
	switch {
	case u.Scheme != "https" && !(p.AllowLoopback && u.Scheme == "http"):
		return nil, urlErr("must use https")
	case u.Opaque != "" || u.Host == "":
		return nil, urlErr("must be an absolute URL with a host")
	case u.User != nil:
		return nil, urlErr("must not contain user info")
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return nil, urlErr("must not contain a fragment")
	case strings.HasSuffix(u.Host, ":"):
		return nil, urlErr("has an empty port")
	}
	if port := u.Port(); port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
			return nil, urlErr("has an invalid port")
		}
		if !p.AllowLoopback && n != 443 {
			return nil, urlErr("must use port 443")
		}
	}
	host := strings.ToLower(u.Hostname())
	if addr, literal, err := hostAddress(host); err != nil {
		return nil, err
	} else if literal {
		if !p.Reachable(addr) {
			if p.AllowLoopback {
				return nil, urlErr("%s is neither a public nor a loopback address", addr)
			}
			return nil, urlErr("%s is not a public address", addr)
		}
		return u, nil
	}
	if err := checkName(host, p.AllowLoopback); err != nil {
		return nil, err
	}
	return u, nil
}

// hostAddress reads a host that is an IP address in any spelling. It
// returns the address and true for a canonical literal, an error for a
// non-canonical spelling or an invalid number, and false for a name.
func hostAddress(host string) (netip.Addr, bool, error) {
	if strings.Contains(host, ":") {
		// Only a bracketed IPv6 literal has colons in its host.
		addr, err := netip.ParseAddr(host)
		if err != nil {
			return netip.Addr{}, false, urlErr("has an invalid IPv6 address")
		}
		if addr.Zone() != "" {
			return netip.Addr{}, false, urlErr("must not name an IPv6 zone")
		}
		if addr.Is4In6() {
			return netip.Addr{}, false, urlErr("names %s as an IPv4-mapped IPv6 address; such addresses are refused", addr.Unmap())
		}
		return addr, true, nil
	}
	if !endsInNumber(host) {
		return netip.Addr{}, false, nil
	}
	addr, ok := parseIPv4(host)
	if !ok {
		return netip.Addr{}, false, urlErr("has a host that reads as an IP address but is not a valid one")
	}
	if addr.String() != host {
		// 2130706433, 0x7f.1 and 0177.0.0.1 all mean 127.0.0.1 to a
		// resolver; only the dotted-decimal form is accepted, so what the
		// vendor sees is what we connect to.
		return netip.Addr{}, false, urlErr("writes the address %s in a non-canonical form; write it as %s", addr, addr)
	}
	return addr, true, nil
}

// endsInNumber is the WHATWG URL standard's test for hosts that are
// parsed as IPv4: the last label (ignoring one trailing dot) is decimal
// digits or a 0x hex number.
func endsInNumber(host string) bool {
	parts := strings.Split(host, ".")
	if parts[len(parts)-1] == "" {
		if len(parts) == 1 {
			return false
		}
		parts = parts[:len(parts)-1]
	}
	last := parts[len(parts)-1]
	if last != "" && strings.Trim(last, "0123456789") == "" {
		return true
	}
	if h, ok := strings.CutPrefix(last, "0x"); ok && strings.Trim(h, "0123456789abcdef") == "" {
		return true
	}
	return false
}

// parseIPv4 is the WHATWG IPv4 parser: one to four parts, each decimal,
// octal (leading 0) or hex (0x); the last part fills the remaining bytes.
func parseIPv4(host string) (netip.Addr, bool) {
	parts := strings.Split(host, ".")
	if parts[len(parts)-1] == "" && len(parts) > 1 {
		parts = parts[:len(parts)-1]
	}
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	nums := make([]uint64, len(parts))
	for i, p := range parts {
		n, ok := ipv4Number(p)
		if !ok {
			return netip.Addr{}, false
		}
		nums[i] = n
	}
	var v uint64
	for i, n := range nums {
		if i < len(nums)-1 {
			if n > 255 {
				return netip.Addr{}, false
			}
			v |= n << (8 * (3 - i))
			continue
		}
		if n >= 1<<(8*(4-i)) {
			return netip.Addr{}, false
		}
		v |= n
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

func ipv4Number(p string) (uint64, bool) {
	if p == "" {
		return 0, false
	}
	base := 10
	switch {
	case strings.HasPrefix(p, "0x"):
		p, base = p[2:], 16
		if p == "" {
			return 0, true
		}
	case len(p) > 1 && p[0] == '0':
		p, base = p[1:], 8
	}
	n, err := strconv.ParseUint(p, base, 64)
	if err != nil || n > 1<<32 {
		return 0, false
	}
	return n, true
}

// checkName checks a host name's syntax: ASCII labels (punycode for
// international names), and in production a fully qualified name that is
// not localhost.
func checkName(host string, allowPrivate bool) error {
	name := strings.TrimSuffix(host, ".")
	if name == "" || len(name) > 253 {
		return urlErr("has an invalid host name")
	}
	labels := strings.Split(name, ".")
	for _, l := range labels {
		if !labelPattern.MatchString(l) {
			return urlErr("has an invalid host name (write international names in their xn-- form)")
		}
	}
	if allowPrivate {
		return nil
	}
	if len(labels) < 2 {
		return urlErr("must name a fully qualified host")
	}
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return urlErr("must not name localhost")
	}
	return nil
}

// CheckURL parses a subscription URL (ParseURL) and, for a host name,
// resolves it and refuses it when any address is not reachable (public, or
// loopback under AllowLoopback), or when it has none; a lookup that fails
// otherwise is an outage (503), since the service fails closed.
//
// A refusal names the rule, never what the name resolved to, and is the
// same whether the name has no address or one that is not reachable: the
// service's resolver may see names the client cannot (a private zone), and
// its answers must not leak through the API.
func (p Policy) CheckURL(ctx context.Context, raw string) (*url.URL, error) {
	u, err := p.ParseURL(raw)
	if err != nil {
		return u, err
	}
	host := strings.ToLower(u.Hostname())
	if _, literal, _ := hostAddress(host); literal {
		return u, nil
	}
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	addrs, err := p.resolver().LookupNetIP(ctx, "ip", host)
	if err != nil {
		var dnsErr *net.DNSError
		if errors.As(err, &dnsErr) && dnsErr.IsNotFound {
			return nil, p.resolveRule(host)
		}
		return nil, errs.Unavailablef(err, "url: the host %s could not be resolved now", host)
	}
	if len(addrs) == 0 {
		return nil, p.resolveRule(host)
	}
	for _, a := range addrs {
		if !p.Reachable(a) {
			return nil, p.resolveRule(host)
		}
	}
	return u, nil
}

// resolveRule is the refusal of a host name by what it resolves to.
func (p Policy) resolveRule(host string) error {
	if p.AllowLoopback {
		return urlErr("the host %s must resolve, and only to public or loopback addresses", host)
	}
	return urlErr("the host %s must resolve, and only to public addresses", host)
}

// refusal is the error a dial gets for a non-public address. Its message
// goes into the vendor's attempt records, so it names the rule, not the
// address (which the name resolved to at delivery time).
type refusal struct{}

func (r refusal) Error() string {
	return "webhook: refused to connect: the host must resolve only to public addresses"
}
