package rtc

import (
	"strconv"
	"strings"

	"github.com/pion/sdp/v3"
)

// maxSDPSize bounds an offer or a trickle fragment; real offers are a few
// KiB.
const maxSDPSize = 64 << 10

// offeredCodec is one payload format of an offer's media section.
type offeredCodec struct {
	name      string // upper case: H264, OPUS, PCMU
	clockRate int
	channels  int
}

// offer is what the server needs to know of an SDP offer before it hands
// the offer to pion: which codecs each kind of media section offers, and
// which way media flows.
type offer struct {
	video, audio []offeredCodec
	// videoSections and audioSections count the media sections; a WHEP
	// offer has at most one of each that receives.
	videoSections, audioSections int
	// sends says some section sends media (a WHIP offer); recvs says some
	// section receives (a WHEP offer).
	sends, recvs bool
}

func (o *offer) offers(kind string, name string) bool {
	list := o.audio
	if kind == "video" {
		list = o.video
	}
	for _, c := range list {
		if c.name == name {
			return true
		}
	}
	return false
}

// parseOffer checks an SDP offer from the network: it must parse, carry ICE
// credentials and a DTLS fingerprint (at session level or in every media
// section) and have at least one audio or video section.
func parseOffer(raw []byte) (*offer, error) {
	if len(raw) > maxSDPSize {
		return nil, ErrBodyTooLarge
	}
	var sd sdp.SessionDescription
	if err := sd.Unmarshal(raw); err != nil {
		return nil, ErrInvalidSDP
	}
	_, sessUfrag := sd.Attribute("ice-ufrag")
	_, sessPwd := sd.Attribute("ice-pwd")
	_, sessFP := sd.Attribute("fingerprint")
	o := &offer{}
	for _, md := range sd.MediaDescriptions {
		kind := md.MediaName.Media
		if kind != "audio" && kind != "video" {
			continue
		}
		if _, ok := md.Attribute("ice-ufrag"); !ok && !sessUfrag {
			return nil, ErrNoICECredentials
		}
		if _, ok := md.Attribute("ice-pwd"); !ok && !sessPwd {
			return nil, ErrNoICECredentials
		}
		if _, ok := md.Attribute("fingerprint"); !ok && !sessFP {
			return nil, ErrNoFingerprint
		}
		if _, bundleOnly := md.Attribute("bundle-only"); md.MediaName.Port.Value == 0 && !bundleOnly {
			continue // a rejected or stopped section (bundle-only ones have port 0 too)
		}
		codecs := sectionCodecs(md)
		switch direction(md, &sd) {
		case "sendonly":
			o.sends = true
		case "recvonly":
			o.recvs = true
		case "sendrecv":
			o.sends, o.recvs = true, true
		}
		if kind == "video" {
			o.videoSections++
			o.video = append(o.video, codecs...)
		} else {
			o.audioSections++
			o.audio = append(o.audio, codecs...)
		}
	}
	if o.videoSections+o.audioSections == 0 {
		return nil, ErrInvalidSDP
	}
	return o, nil
}

func direction(md *sdp.MediaDescription, sd *sdp.SessionDescription) string {
	for _, d := range []string{"sendrecv", "sendonly", "recvonly", "inactive"} {
		if _, ok := md.Attribute(d); ok {
			return d
		}
	}
	for _, d := range []string{"sendrecv", "sendonly", "recvonly", "inactive"} {
		if _, ok := sd.Attribute(d); ok {
			return d
		}
	}
	return "sendrecv"
}

// sectionCodecs lists a media section's payload formats from its rtpmap
// lines, and the static G.711 types (0, 8) that need none.
func sectionCodecs(md *sdp.MediaDescription) []offeredCodec {
	var out []offeredCodec
	mapped := map[string]bool{}
	for _, a := range md.Attributes {
		if a.Key != "rtpmap" {
			continue
		}
		pt, enc, ok := strings.Cut(a.Value, " ")
		if !ok {
			continue
		}
		mapped[pt] = true
		parts := strings.Split(enc, "/")
		c := offeredCodec{name: strings.ToUpper(parts[0]), channels: 1}
		if len(parts) > 1 {
			c.clockRate, _ = strconv.Atoi(parts[1])
		}
		if len(parts) > 2 {
			if n, err := strconv.Atoi(parts[2]); err == nil && n > 0 {
				c.channels = n
			}
		}
		out = append(out, c)
	}
	for _, f := range md.MediaName.Formats {
		if mapped[f] {
			continue
		}
		switch f {
		case "0":
			out = append(out, offeredCodec{name: "PCMU", clockRate: 8000, channels: 1})
		case "8":
			out = append(out, offeredCodec{name: "PCMA", clockRate: 8000, channels: 1})
		}
	}
	return out
}

// candidateFragment is the content of a trickle ICE PATCH body (RFC 8840,
// application/trickle-ice-sdpfrag): the ICE credentials it names and its
// candidates, each with the media section (mid) it belongs to.
type candidateFragment struct {
	ufrag, pwd string
	candidates []fragmentCandidate
	end        bool // a=end-of-candidates
}

type fragmentCandidate struct {
	mid       string
	candidate string // the attribute value after "candidate:"
}

// parseFragment reads a trickle ICE SDP fragment line by line; it takes
// only what trickling needs and refuses anything that is not SDP.
func parseFragment(raw []byte) (*candidateFragment, error) {
	if len(raw) > maxSDPSize {
		return nil, ErrBodyTooLarge
	}
	f := &candidateFragment{}
	mid := ""
	for _, line := range strings.Split(string(raw), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if line == "" {
			continue
		}
		if len(line) < 2 || line[1] != '=' || line[0] < 'a' || line[0] > 'z' {
			return nil, ErrInvalidFragment
		}
		switch {
		case strings.HasPrefix(line, "m="):
			mid = ""
		case strings.HasPrefix(line, "a=mid:"):
			mid = line[len("a=mid:"):]
		case strings.HasPrefix(line, "a=ice-ufrag:"):
			f.ufrag = line[len("a=ice-ufrag:"):]
		case strings.HasPrefix(line, "a=ice-pwd:"):
			f.pwd = line[len("a=ice-pwd:"):]
		case strings.HasPrefix(line, "a=candidate:"):
			c := line[len("a=candidate:"):]
			if len(strings.Fields(c)) < 8 {
				return nil, ErrInvalidFragment
			}
			f.candidates = append(f.candidates, fragmentCandidate{mid: mid, candidate: "candidate:" + c})
		case line == "a=end-of-candidates":
			f.end = true
		}
	}
	return f, nil
}
