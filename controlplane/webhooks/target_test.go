package webhooks

import (
	"net/netip"
	"testing"
)

func TestTargetRefusalSeesThroughEmbeddedIPv4(t *testing.T) {
	g := &TargetGuard{OwnAddrs: func() []netip.Addr { return []netip.Addr{netip.MustParseAddr("198.51.100.4")} }}
	for addr, refused := range map[string]bool{
		"203.0.113.10":                         false,
		"64:ff9b::cb00:710a":                   false, // NAT64 of a public address
		"2002:cb00:710a::1":                    false, // 6to4 of a public address
		"2001:db8::1":                          false,
		"64:ff9b::7f00:1":                      true,
		"64:ff9b::c633:6404":                   true, // NAT64 of the node's own address
		"2002:a9fe:a9fe::1":                    true,
		"2001:0:4136:e378:8000:63bf:80ff:fffe": true,
		"::ffff:127.0.0.1":                     true,
		"198.51.100.4":                         true,
	} {
		if got := g.refusal(netip.MustParseAddr(addr)) != ""; got != refused {
			t.Errorf("%s: refused %v, want %v (%s)", addr, got, refused, g.refusal(netip.MustParseAddr(addr)))
		}
	}
}
