package rtsp

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/pion/sdp/v3"

	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/mediaengine/rtpcodec"
)

// SessionDescription is what the engine needs from an SDP (RFC 8866): the
// session control attribute and, per media, its control attribute, the
// payload format chosen and the track it describes.
type SessionDescription struct {
	Control string
	Medias  []MediaDescription
}

// MediaDescription is one m= section. Track is nil when none of its
// formats is one the engine carries; such media are not set up.
type MediaDescription struct {
	Kind    string // video, audio, application, ...
	Control string
	Format  rtpcodec.Format
	Track   *media.Track
}

// Tracks returns the tracks of the supported media, in order; their IDs
// are their positions in this list.
func (s *SessionDescription) Tracks() []*media.Track {
	var out []*media.Track
	for _, m := range s.Medias {
		if m.Track != nil {
			out = append(out, m.Track)
		}
	}
	return out
}

// ParseSessionDescription parses an SDP as cameras write it: the text is
// first put into the shape RFC 8866 (and pion/sdp) requires — line ends,
// missing or malformed v=/o=/s=/c=/t= lines, lines out of order, unknown
// media kinds — and then read with pion/sdp.
func ParseSessionDescription(b []byte) (*SessionDescription, error) {
	var sd sdp.SessionDescription
	if err := sd.UnmarshalString(cleanSDP(string(b))); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadSDP, err)
	}
	out := &SessionDescription{}
	out.Control, _ = sd.Attribute("control")
	for _, md := range sd.MediaDescriptions {
		m := MediaDescription{Kind: md.MediaName.Media}
		m.Control, _ = md.Attribute("control")
		formats := mediaFormats(md)
		for _, f := range formats {
			if _, ok := f.Codec(); !ok {
				continue
			}
			t, err := f.Track(len(out.Tracks()))
			if err != nil {
				continue
			}
			m.Format, m.Track = f, t
			break
		}
		if m.Track == nil && len(formats) > 0 {
			m.Format = formats[0]
		}
		out.Medias = append(out.Medias, m)
	}
	return out, nil
}

// mediaFormats collects the payload formats of an m= section with their
// rtpmap and fmtp attributes.
func mediaFormats(md *sdp.MediaDescription) []rtpcodec.Format {
	var out []rtpcodec.Format
	for _, pt := range md.MediaName.Formats {
		n, err := strconv.Atoi(pt)
		if err != nil || n < 0 || n > 127 {
			continue
		}
		f := rtpcodec.Format{PayloadType: uint8(n), FMTP: map[string]string{}}
		for _, a := range md.Attributes {
			value, ok := strings.CutPrefix(a.Value, pt+" ")
			if !ok {
				continue
			}
			switch a.Key {
			case "rtpmap":
				parts := strings.Split(strings.TrimSpace(value), "/")
				f.EncodingName = parts[0]
				if len(parts) > 1 {
					f.ClockRate, _ = strconv.Atoi(parts[1])
				}
				if len(parts) > 2 {
					f.Channels, _ = strconv.Atoi(parts[2])
				}
			case "fmtp":
				f.FMTP = rtpcodec.ParseFMTP(value)
			}
		}
		if f.EncodingName == "" && (n == 0 || n == 8) {
			f.ClockRate = 8000
		}
		out = append(out, f)
	}
	return out
}

// sdpLine matches "x=value".
func sdpLine(l string) (byte, string, bool) {
	if len(l) < 2 || l[1] != '=' {
		return 0, "", false
	}
	c := l[0] | 0x20 // lower case
	if c < 'a' || c > 'z' {
		return 0, "", false
	}
	return c, strings.TrimSpace(l[2:]), true
}

// cleanSDP rewrites an SDP into the order and syntax RFC 8866 requires,
// keeping what it can and dropping lines that cannot be valid.
func cleanSDP(s string) string {
	type section struct{ lines map[byte][]string }
	newSection := func() *section { return &section{lines: map[byte][]string{}} }
	session := newSection()
	var medias []*section
	cur := session
	for _, raw := range strings.Split(strings.ReplaceAll(s, "\r", "\n"), "\n") {
		c, v, ok := sdpLine(strings.TrimSpace(raw))
		if !ok {
			continue
		}
		if c == 'm' {
			cur = newSection()
			medias = append(medias, cur)
		}
		cur.lines[c] = append(cur.lines[c], v)
	}
	var b strings.Builder
	w := func(c byte, v string) {
		b.WriteByte(c)
		b.WriteByte('=')
		b.WriteString(v)
		b.WriteString("\r\n")
	}
	first := func(sec *section, c byte, valid func(string) bool, fallback string) {
		for _, v := range sec.lines[c] {
			if valid(v) {
				w(c, v)
				return
			}
		}
		if fallback != "" {
			w(c, fallback)
		}
	}
	all := func(sec *section, c byte, valid func(string) bool) {
		for _, v := range sec.lines[c] {
			if valid(v) {
				w(c, v)
			}
		}
	}
	w('v', "0")
	first(session, 'o', validOrigin, "- 0 0 IN IP4 0.0.0.0")
	first(session, 's', nonEmpty, "-")
	first(session, 'i', nonEmpty, "")
	first(session, 'u', nonEmpty, "")
	all(session, 'e', nonEmpty)
	all(session, 'p', nonEmpty)
	first(session, 'c', validConnection, "")
	all(session, 'b', validBandwidth)
	first(session, 't', validTiming, "0 0")
	all(session, 'a', nonEmpty)
	for _, m := range medias {
		w('m', cleanMediaLine(m.lines['m'][0]))
		first(m, 'i', nonEmpty, "")
		first(m, 'c', validConnection, "")
		all(m, 'b', validBandwidth)
		all(m, 'a', nonEmpty)
	}
	return b.String()
}

func nonEmpty(v string) bool { return v != "" }

func validOrigin(v string) bool {
	f := strings.Fields(v)
	if len(f) != 6 || f[3] != "IN" {
		return false
	}
	for _, n := range f[1:3] {
		if _, err := strconv.ParseUint(n, 10, 64); err != nil {
			return false
		}
	}
	return f[4] == "IP4" || f[4] == "IP6"
}

func validConnection(v string) bool {
	f := strings.Fields(v)
	return len(f) == 3 && f[0] == "IN" && (f[1] == "IP4" || f[1] == "IP6") && f[2] != ""
}

func validBandwidth(v string) bool {
	k, n, ok := strings.Cut(v, ":")
	_, err := strconv.ParseUint(n, 10, 64)
	return ok && k != "" && err == nil
}

func validTiming(v string) bool {
	f := strings.Fields(v)
	if len(f) != 2 {
		return false
	}
	for _, n := range f {
		if _, err := strconv.ParseUint(n, 10, 64); err != nil {
			return false
		}
	}
	return true
}

// cleanMediaLine repairs an m= line: an unknown media kind becomes
// "application", a bad port 0, an unknown protocol RTP/AVP.
func cleanMediaLine(v string) string {
	f := strings.Fields(v)
	for len(f) < 4 {
		f = append(f, "0")
	}
	switch f[0] = strings.ToLower(f[0]); f[0] {
	case "audio", "video", "text", "application", "message":
	default:
		f[0] = "application"
	}
	port, _, _ := strings.Cut(f[1], "/")
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		f[1] = "0"
	}
	for _, p := range strings.Split(f[2], "/") {
		switch p {
		case "UDP", "RTP", "AVP", "SAVP", "SAVPF", "TLS", "DTLS", "SCTP", "AVPF", "TCP":
			continue
		}
		f[2] = "RTP/AVP"
		break
	}
	return strings.Join(f, " ")
}

// DynamicPayloadType is the payload type the server gives a track (static
// formats such as G.711 keep theirs).
func DynamicPayloadType(t *media.Track) uint8 { return uint8(96 + t.ID%32) }

// MarshalSessionDescription writes the SDP the server answers DESCRIBE
// with: one m= section per track, each with control "trackID=<ID>"
// relative to the Content-Base the server sends.
func MarshalSessionDescription(tracks []*media.Track, host string) ([]byte, error) {
	addrType := "IP4"
	if strings.Contains(host, ":") {
		addrType = "IP6"
	}
	sd := &sdp.SessionDescription{
		Origin:           sdp.Origin{Username: "-", SessionID: 0, SessionVersion: 0, NetworkType: "IN", AddressType: addrType, UnicastAddress: host},
		SessionName:      "svc",
		TimeDescriptions: []sdp.TimeDescription{{Timing: sdp.Timing{}}},
		ConnectionInformation: &sdp.ConnectionInformation{NetworkType: "IN", AddressType: addrType,
			Address: &sdp.Address{Address: map[bool]string{true: "::", false: "0.0.0.0"}[addrType == "IP6"]}},
		Attributes: []sdp.Attribute{{Key: "tool", Value: "svc"}, {Key: "range", Value: "npt=0-"}, {Key: "control", Value: "*"}},
	}
	for _, t := range tracks {
		f, err := rtpcodec.FormatForTrack(t, DynamicPayloadType(t))
		if err != nil {
			continue // a codec RTP cannot carry is left out
		}
		pt := strconv.Itoa(int(f.PayloadType))
		md := &sdp.MediaDescription{
			MediaName: sdp.MediaName{Media: string(t.Kind()), Port: sdp.RangedPort{Value: 0}, Protos: []string{"RTP", "AVP"}, Formats: []string{pt}},
		}
		md.Attributes = append(md.Attributes, sdp.Attribute{Key: "rtpmap", Value: pt + " " + f.RTPMap()})
		if fmtp := f.FMTPString(); fmtp != "" {
			md.Attributes = append(md.Attributes, sdp.Attribute{Key: "fmtp", Value: pt + " " + fmtp})
		}
		md.Attributes = append(md.Attributes, sdp.Attribute{Key: "control", Value: "trackID=" + strconv.Itoa(t.ID)})
		sd.MediaDescriptions = append(sd.MediaDescriptions, md)
	}
	return sd.Marshal()
}
