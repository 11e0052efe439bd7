package rtsp

import (
	"fmt"
	"strconv"
	"strings"
)

// Transport is one transport specification of the Transport header
// (RFC 2326 section 12.39): RTP over UDP with port pairs, or over the RTSP
// connection with interleaved channel pairs.
type Transport struct {
	// TCP is true for RTP/AVP/TCP (interleaved).
	TCP       bool
	Multicast bool
	// Interleaved is the channel pair for TCP; ClientPorts and ServerPorts
	// the port pairs for UDP. A zero second value means "not given".
	Interleaved [2]int
	ClientPorts [2]int
	ServerPorts [2]int
	HasChannels bool
	SSRC        uint32
	HasSSRC     bool
	// Mode is "play" (the default) or "record".
	Mode        string
	Destination string
	Source      string
}

// ParseTransports parses a Transport header value, which may offer several
// transports separated by commas, in the client's order of preference.
func ParseTransports(v string) ([]Transport, error) {
	var out []Transport
	for _, spec := range strings.Split(v, ",") {
		spec = strings.TrimSpace(spec)
		if spec == "" {
			continue
		}
		t, err := parseTransport(spec)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: empty", ErrBadTransport)
	}
	return out, nil
}

func parseTransport(spec string) (Transport, error) {
	parts := strings.Split(spec, ";")
	var t Transport
	switch strings.ToUpper(strings.TrimSpace(parts[0])) {
	case "RTP/AVP", "RTP/AVP/UDP":
	case "RTP/AVP/TCP":
		t.TCP = true
	default:
		return t, fmt.Errorf("%w: protocol %q", ErrBadTransport, Truncate(parts[0]))
	}
	for _, p := range parts[1:] {
		k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
		var err error
		switch strings.ToLower(k) {
		case "unicast":
			t.Multicast = false
		case "multicast":
			t.Multicast = true
		case "interleaved":
			t.Interleaved, err = parsePair(v, 255)
			t.HasChannels = err == nil
		case "client_port":
			t.ClientPorts, err = parsePair(v, 65535)
		case "server_port":
			t.ServerPorts, err = parsePair(v, 65535)
		case "ssrc":
			var n uint64
			n, err = strconv.ParseUint(strings.TrimSpace(v), 16, 32)
			t.SSRC, t.HasSSRC = uint32(n), err == nil
		case "mode":
			t.Mode = strings.ToLower(strings.Trim(strings.TrimSpace(v), `"`))
		case "destination":
			t.Destination = v
		case "source":
			t.Source = v
		}
		if err != nil {
			return t, fmt.Errorf("%w: %s=%q", ErrBadTransport, k, Truncate(v))
		}
	}
	return t, nil
}

// parsePair parses "a-b" or "a" (then b = a+1).
func parsePair(v string, maxValue int) ([2]int, error) {
	a, b, hasB := strings.Cut(strings.TrimSpace(v), "-")
	x, err := strconv.Atoi(a)
	if err != nil || x < 0 || x > maxValue {
		return [2]int{}, ErrBadTransport
	}
	y := x + 1
	if hasB {
		if y, err = strconv.Atoi(b); err != nil || y < 0 || y > maxValue {
			return [2]int{}, ErrBadTransport
		}
	}
	return [2]int{x, y}, nil
}

// String formats the transport as a Transport header value.
func (t Transport) String() string {
	var b strings.Builder
	if t.TCP {
		b.WriteString("RTP/AVP/TCP")
	} else {
		b.WriteString("RTP/AVP")
	}
	if t.Multicast {
		b.WriteString(";multicast")
	} else {
		b.WriteString(";unicast")
	}
	pair := func(name string, p [2]int) {
		fmt.Fprintf(&b, ";%s=%d-%d", name, p[0], p[1])
	}
	if t.TCP {
		pair("interleaved", t.Interleaved)
	} else {
		if t.Destination != "" {
			b.WriteString(";destination=" + t.Destination)
		}
		if t.Source != "" {
			b.WriteString(";source=" + t.Source)
		}
		if t.ClientPorts[0] != 0 {
			pair("client_port", t.ClientPorts)
		}
		if t.ServerPorts[0] != 0 {
			pair("server_port", t.ServerPorts)
		}
	}
	if t.HasSSRC {
		fmt.Fprintf(&b, ";ssrc=%08X", t.SSRC)
	}
	if t.Mode != "" {
		b.WriteString(";mode=" + t.Mode)
	}
	return b.String()
}
