package webhook

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"syscall"
	"time"
)

// Timeouts of a delivery: connecting (each address), the TLS handshake,
// waiting for the response headers, and the whole exchange. The whole is
// the 10 s the contract gives a receiver to answer plus 2 s to connect and
// read (a healthy receiver connects in well under a second): an attempt to
// a receiver that never answers holds its vendor's delivery slot 12 s.
const (
	ConnectTimeout  = 5 * time.Second
	ResponseTimeout = 10 * time.Second
	RequestTimeout  = 12 * time.Second
	lookupTimeout   = 5 * time.Second
)

// Resolver finds the addresses of a host name; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// resolver is the policy's resolver, the system's by default.
func (p Policy) resolver() Resolver {
	if p.Resolver != nil {
		return p.Resolver
	}
	return net.DefaultResolver
}

// Hosts is a fixed Resolver for tests: a name it does not list does not
// exist.
type Hosts map[string][]netip.Addr

// LookupNetIP returns the addresses listed for host.
func (h Hosts) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := h[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// Dialer connects deliveries. It resolves names itself and dials each
// address with a net.Dialer whose Control hook checks the address actually
// being connected, so a name that resolved to a public address when the
// subscription was made but resolves to a private one now (DNS rebinding)
// is refused at the socket, before any byte is sent.
type Dialer struct {
	Policy Policy
}

// control refuses a connection to an address the policy does not reach.
func (d Dialer) control(_ context.Context, _, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return refusal{}
	}
	if !d.Policy.Reachable(ap.Addr()) {
		return refusal{}
	}
	return nil
}

// DialContext connects to addr ("host:port"), trying each resolved address
// in turn.
func (d Dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil {
		return nil, err
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		lctx, cancel := context.WithTimeout(ctx, lookupTimeout)
		addrs, err = d.Policy.resolver().LookupNetIP(lctx, "ip", host)
		cancel()
		if err != nil {
			return nil, err
		}
	}
	nd := net.Dialer{Timeout: ConnectTimeout, ControlContext: d.control}
	var first error
	for _, a := range addrs {
		conn, err := nd.DialContext(ctx, network, netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			return conn, nil
		}
		if first == nil {
			first = err
		}
	}
	if first == nil {
		first = &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
	}
	return nil, first
}

// IsRefused reports whether err is a connection refused by the address
// check.
func IsRefused(err error) bool {
	var r refusal
	return errors.As(err, &r)
}

// NewClient returns a delivery client for a policy: no proxy (a proxy
// would connect for us, past the address check), no redirects followed (a
// 3xx is a failed delivery), short timeouts. Build one per process and
// share it, so that connections to a receiver are reused.
func NewClient(p Policy) *http.Client {
	tr := &http.Transport{
		Proxy:                  nil,
		DialContext:            Dialer{Policy: p}.DialContext,
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    ConnectTimeout,
		ResponseHeaderTimeout:  ResponseTimeout,
		MaxIdleConns:           100,
		MaxIdleConnsPerHost:    4,
		IdleConnTimeout:        90 * time.Second,
		MaxResponseHeaderBytes: 64 << 10,
	}
	return &http.Client{
		Transport:     tr,
		Timeout:       RequestTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
