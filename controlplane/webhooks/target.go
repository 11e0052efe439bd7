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
// link-local, unspecified, multicast or cloud-metadata addresses are
// refused when a plan is saved and again, after DNS resolution, on every
// connection, so a name that later resolves elsewhere (DNS rebinding) is
// caught too. AllowPrivate is the administrator's switch for receivers on
// such addresses (and for tests on loopback).
type TargetGuard struct {
	AllowPrivate bool
	// Resolver resolves host names; net.DefaultResolver when nil.
	Resolver interface {
		LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
	}
}

// refusal says why ip may not be a delivery target, or "" when it may.
func (g *TargetGuard) refusal(ip netip.Addr) string {
	if g.AllowPrivate {
		return ""
	}
	ip = ip.Unmap()
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
			return fmt.Errorf("%w: endpoint host %q does not resolve: %v", ErrInvalid, host, err)
		}
	}
	for _, a := range addrs {
		if why := g.refusal(a); why != "" {
			return fmt.Errorf("%w: endpoint host %q resolves to %s (%s); an administrator can allow private targets", ErrTargetRefused, host, a, why)
		}
	}
	return nil
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
