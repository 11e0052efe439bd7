package rtsp

import (
	"errors"
	"testing"
)

func TestParseTransports(t *testing.T) {
	tests := []struct {
		in   string
		want Transport
		out  string
	}{
		{"RTP/AVP/TCP;unicast;interleaved=0-1", Transport{TCP: true, Interleaved: [2]int{0, 1}, HasChannels: true}, "RTP/AVP/TCP;unicast;interleaved=0-1"},
		{"RTP/AVP;unicast;client_port=5000-5001;mode=record", Transport{ClientPorts: [2]int{5000, 5001}, Mode: "record"}, "RTP/AVP;unicast;client_port=5000-5001;mode=record"},
		{
			"RTP/AVP/UDP;unicast;client_port=6000;server_port=7000-7001;ssrc=1A2B3C4D;mode=\"PLAY\"",
			Transport{ClientPorts: [2]int{6000, 6001}, ServerPorts: [2]int{7000, 7001}, SSRC: 0x1a2b3c4d, HasSSRC: true, Mode: "play"},
			"",
		},
		{"RTP/AVP;multicast;destination=232.0.0.1", Transport{Multicast: true, Destination: "232.0.0.1"}, ""},
	}
	for _, tt := range tests {
		got, err := ParseTransports(tt.in)
		if err != nil || len(got) != 1 || got[0] != tt.want {
			t.Errorf("%q: %+v %v", tt.in, got, err)
			continue
		}
		if tt.out != "" && got[0].String() != tt.out {
			t.Errorf("%q formats as %q", tt.in, got[0].String())
		}
	}
	two, err := ParseTransports("RTP/AVP;unicast;client_port=1-2, RTP/AVP/TCP;interleaved=2-3")
	if err != nil || len(two) != 2 || !two[1].TCP {
		t.Fatalf("%+v %v", two, err)
	}
	for _, bad := range []string{"", "RAW/RAW/UDP", "RTP/AVP;client_port=x", "RTP/AVP/TCP;interleaved=300-301", "RTP/AVP;client_port=70000"} {
		if _, err := ParseTransports(bad); !errors.Is(err, ErrBadTransport) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
