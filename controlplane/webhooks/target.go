package webhooks

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
)

// metadataAddrs are cloud instance-metadata services outside the
// link-local range (the common 169.254.169.254 is link-local already).
var metadataAddrs = []netip.Addr{
	netip.MustParseAddr("100.100.100.200"), // Alibaba Cloud
	netip.MustParseAddr("192.0.0.192"),     // Oracle Cloud
	netip.MustParseAddr("fd00:ec2::254"),   // AWS over IPv6
}

// TargetGuard keeps delivery plans from turning the control plane into a
// proxy into its own network (SSRF): endpoints that resolve to loopback,
// link-local, unspecified, multicast or cloud-metadata addresses, to one
// of the node's own addresses, or to an IPv6 address embedding such an
// IPv4 address (NAT64, 6to4, Teredo), are refused when a plan is saved and
// again, after DNS resolution, on every connection, so a name that later
// resolves elsewhere (DNS rebinding) is caught too. AllowPrivate is the administrator's switch for receivers on
// such addresses (and for tests on loopback).
type TargetGuard struct {
	AllowPrivate bool
	// Resolver resolves host names; net.DefaultResolver when nil.
	Resolver interface {
		LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
	}
	// OwnAddrs lists this host's addresses (its interfaces' when nil): a
	// plan must not make the control node call itself on an address that
	// is not loopback, where its own services listen too.
	OwnAddrs func() []netip.Addr
}

// refusal says why ip may not be a delivery target, or "" when it may.
func (g *TargetGuard) refusal(ip netip.Addr) string {
	if g.AllowPrivate {
		return ""
	}
	ip = ip.Unmap()
	if v4, how, ok := embeddedIPv4(ip); ok {
		if why := g.refusal(v4); why != "" {
			return why + " embedded in " + how
		}
	}
	for _, own := range g.ownAddrs() {
		if own.Unmap() == ip {
			return "an address of this control node"
		}
	}
	switch {
	case ip.IsLoopback():
		return "a loopback address"
	case ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast():
		return "a link-local address (cloud metadata services live here)"
	case ip.IsUnspecified():
		return "the unspecified address"
	case ip.IsMulticast():
		return "a multicast address"
	}
	for _, m := range metadataAddrs {
		if ip == m {
			return "a cloud metadata address"
		}
	}
	return ""
}

// IPv6 prefixes that carry an IPv4 address a router or relay turns into
// an IPv4 connection: NAT64 (RFC 6052 well-known and RFC 8215 local-use),
// 6to4 (RFC 3056) and Teredo (RFC 4380).
var (
	nat64WellKnown = netip.MustParsePrefix("64:ff9b::/96")
	nat64Local     = netip.MustParsePrefix("64:ff9b:1::/48")
	sixToFour      = netip.MustParsePrefix("2002::/16")
	teredo         = netip.MustParsePrefix("2001::/32")
)

// embeddedIPv4 is the IPv4 address an IPv6 address stands for on the way
// (so ::ffff:127.0.0.1's cousins 64:ff9b::7f00:1 and 2002:7f00:1:: are
// refused like 127.0.0.1), with the mechanism's name.
func embeddedIPv4(ip netip.Addr) (netip.Addr, string, bool) {
	if !ip.Is6() {
		return netip.Addr{}, "", false
	}
	b := ip.As16()
	switch {
	case nat64WellKnown.Contains(ip), nat64Local.Contains(ip):
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), "a NAT64 address", true
	case sixToFour.Contains(ip):
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), "a 6to4 address", true
	case teredo.Contains(ip):
		// The client's address, inverted (the server's, bits 32-63, is a
		// public relay).
		return netip.AddrFrom4([4]byte{^b[12], ^b[13], ^b[14], ^b[15]}), "a Teredo address", true
	case b[0]|b[1]|b[2]|b[3]|b[4]|b[5]|b[6]|b[7]|b[8]|b[9]|b[10]|b[11] == 0 && !ip.IsUnspecified() && !ip.IsLoopback():
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), "an IPv4-compatible address", true
	}
	return netip.Addr{}, "", false
}

// ownAddrs are this host's addresses.
func (g *TargetGuard) ownAddrs() []netip.Addr {
	if g.OwnAddrs != nil {
		return g.OwnAddrs()
	}
	return interfaceAddrs()
}

// interfaceAddrs lists the addresses of this host's interfaces.
func interfaceAddrs() []netip.Addr {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var out []netip.Addr
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil {
			out = append(out, p.Addr().Unmap())
		}
	}
	return out
}

// ParseEndpoint checks an endpoint's form: an absolute http(s) URL without
// credentials, query or fragment, http only when allowHTTP.
func ParseEndpoint(raw string, allowHTTP bool) (*url.URL, error) {
	if raw == "" || len(raw) > 2048 {
		return nil, fmt.Errorf("%w: endpoint must be an absolute URL of at most 2048 characters", ErrInvalid)
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" || u.Opaque != "" {
		return nil, fmt.Errorf("%w: endpoint must be an absolute http(s) URL", ErrInvalid)
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !allowHTTP {
			return nil, fmt.Errorf("%w: endpoint uses http; use https or turn on allowHttp (controlled isolated networks only)", ErrInvalid)
		}
	default:
		return nil, fmt.Errorf("%w: endpoint scheme must be http or https", ErrInvalid)
	}
	if u.User != nil {
		return nil, fmt.Errorf("%w: endpoint must not embed credentials; the plan's secret signs every delivery", ErrInvalid)
	}
	if u.RawQuery != "" || u.ForceQuery || strings.Contains(raw, "?") {
		return nil, fmt.Errorf("%w: endpoint must not have a query string", ErrInvalid)
	}
	if u.Fragment != "" || strings.Contains(raw, "#") {
		return nil, fmt.Errorf("%w: endpoint must not have a fragment", ErrInvalid)
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("%w: endpoint has no host", ErrInvalid)
	}
	return u, nil
}

// CheckHost resolves the endpoint's host and refuses it when any address
// is not allowed.
func (g *TargetGuard) CheckHost(ctx context.Context, host string) error {
	var addrs []netip.Addr
	if ip, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		addrs = []netip.Addr{ip}
	} else {
		r := g.Resolver
		if r == nil {
			r = net.DefaultResolver
		}
		addrs, err = r.LookupNetIP(ctx, "ip", host)
		if err != nil {
			return fmt.Errorf("%w: endpoint host %q does not resolve: %w", ErrInvalid, host, err)
		}
	}
	for _, a := range addrs {
		if why := g.refusal(a); why != "" {
			return fmt.Errorf("%w: endpoint host %q resolves to %s (%s); an administrator can allow private targets", ErrTargetRefused, host, a, why)
		}
	}
	return nil
}

// Control is control for other senders to the outside (cut/merge
// callbacks), so they are guarded like deliveries.
func (g *TargetGuard) Control(network, address string, c syscall.RawConn) error {
	return g.control(network, address, c)
}

// control is a net.Dialer Control function refusing disallowed addresses
// at connect time, after resolution.
func (g *TargetGuard) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: cannot parse dialled address %q", ErrTargetRefused, address)
	}
	if why := g.refusal(ap.Addr()); why != "" {
		return fmt.Errorf("%w: %s is %s", ErrTargetRefused, ap.Addr(), why)
	}
	return nil
}
