package rtc

import (
	"strings"
	"testing"
)

const seedOffer = "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\na=fingerprint:sha-256 AB:CD\r\na=group:BUNDLE 0 1\r\n" +
	"m=video 9 UDP/TLS/RTP/SAVPF 96 102\r\nc=IN IP4 0.0.0.0\r\na=ice-ufrag:abcd\r\na=ice-pwd:0123456789012345678901\r\na=mid:0\r\na=recvonly\r\n" +
	"a=rtpmap:96 VP8/90000\r\na=rtpmap:102 H264/90000\r\na=fmtp:102 packetization-mode=1;profile-level-id=42e01f\r\n" +
	"m=audio 9 UDP/TLS/RTP/SAVPF 111 0 8\r\nc=IN IP4 0.0.0.0\r\na=ice-ufrag:abcd\r\na=ice-pwd:0123456789012345678901\r\na=mid:1\r\n" +
	"a=sendrecv\r\na=rtpmap:111 opus/48000/2\r\n"

// FuzzParseOffer: any bytes give an offer or an *Error, never a panic.
func FuzzParseOffer(f *testing.F) {
	f.Add([]byte(seedOffer))
	f.Add([]byte("v=0\r\nm=audio 0 RTP/AVP 0\r\n"))
	f.Add([]byte("v=0\r\no=- 0 0 IN IP4 0\r\ns=-\r\nt=0 0\r\nm=video 9 X 96\r\na=rtpmap:96\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		o, err := parseOffer(b)
		if err != nil {
			if _, ok := asError(err); !ok {
				t.Fatalf("error %v is not an *Error", err)
			}
			return
		}
		if o.videoSections+o.audioSections == 0 {
			t.Fatal("an offer without media sections was accepted")
		}
	})
}

// TestParseOfferBundleOnly: a bundle-only section (port 0, as GStreamer's
// webrtcbin offers with max-bundle) still offers its codecs.
func TestParseOfferBundleOnly(t *testing.T) {
	bundled := strings.Replace(seedOffer, "m=audio 9 ", "m=audio 0 ", 1) + "a=bundle-only\r\n"
	o, err := parseOffer([]byte(bundled))
	if err != nil || !o.offers("audio", "OPUS") || o.audioSections != 1 {
		t.Fatalf("parsed %+v, %v", o, err)
	}
	stopped := strings.Replace(seedOffer, "m=audio 9 ", "m=audio 0 ", 1)
	if o, err := parseOffer([]byte(stopped)); err != nil || o.offers("audio", "OPUS") {
		t.Fatalf("a stopped section's codecs were taken: %+v, %v", o, err)
	}
}

func TestParseOfferSeed(t *testing.T) {
	o, err := parseOffer([]byte(seedOffer))
	if err != nil {
		t.Fatal(err)
	}
	if !o.offers("video", "H264") || !o.offers("video", "VP8") || !o.offers("audio", "OPUS") || !o.offers("audio", "PCMU") ||
		!o.offers("audio", "PCMA") || o.offers("audio", "H264") || !o.recvs || !o.sends {
		t.Fatalf("parsed %+v", o)
	}
}

// FuzzParseFragment: any bytes give a fragment or an *Error.
func FuzzParseFragment(f *testing.F) {
	f.Add([]byte("a=ice-ufrag:abcd\r\na=ice-pwd:x\r\nm=audio 9 RTP/AVP 0\r\na=mid:0\r\na=candidate:1 1 UDP 2130706431 10.0.0.1 5000 typ host\r\na=end-of-candidates\r\n"))
	f.Add([]byte("a=candidate:1 1 udp\n"))
	f.Add([]byte("\n\n=\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, err := parseFragment(b)
		if err != nil {
			if _, ok := asError(err); !ok {
				t.Fatalf("error %v is not an *Error", err)
			}
			return
		}
		for _, c := range fr.candidates {
			if len(c.candidate) < len("candidate:") {
				t.Fatalf("candidate %q", c.candidate)
			}
		}
	})
}
