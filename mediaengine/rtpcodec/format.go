package rtpcodec

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/svcplatform/svc/mediaengine/media"
)

// Format is one RTP payload format as an SDP media description negotiates
// it (a=rtpmap and a=fmtp): what a depacketiser or packetiser needs beyond
// the media.Track.
type Format struct {
	PayloadType  uint8
	EncodingName string // as in rtpmap: H264, H265, mpeg4-generic, PCMA, PCMU, opus
	ClockRate    int
	Channels     int
	// FMTP holds the format parameters with lower-case keys.
	FMTP map[string]string
}

// ParseFMTP splits an fmtp parameter list ("a=1; b=2") into a map with
// lower-case keys. Parameters without '=' are kept with an empty value;
// nothing in it makes parsing fail, as cameras write odd lists.
func ParseFMTP(s string) map[string]string {
	m := make(map[string]string)
	for _, kv := range strings.Split(s, ";") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		m[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
	}
	return m
}

// Codec maps the format to the engine's codec, if it is one the engine
// carries.
func (f Format) Codec() (media.Codec, bool) {
	switch strings.ToUpper(f.EncodingName) {
	case "H264":
		return media.CodecH264, true
	case "H265", "HEVC":
		return media.CodecH265, true
	case "MPEG4-GENERIC":
		mode := strings.ToLower(f.FMTP["mode"])
		if mode == "" || strings.HasPrefix(mode, "aac") || f.FMTP["streamtype"] == "5" {
			return media.CodecAAC, true
		}
	case encodingLATM:
		return media.CodecAAC, true
	case "PCMA":
		return media.CodecPCMA, true
	case "PCMU":
		return media.CodecPCMU, true
	case "OPUS":
		return media.CodecOpus, true
	case "VP8":
		return media.CodecVP8, true
	case "":
		// Static payload types need no rtpmap (RFC 3551 table 4).
		switch f.PayloadType {
		case 0:
			return media.CodecPCMU, true
		case 8:
			return media.CodecPCMA, true
		}
	}
	return "", false
}

// Track builds the media.Track the format describes, with the parameter
// sets or decoder configuration the SDP carries. Missing or undecodable
// parameter sets are left empty: the depacketiser takes them in-band.
func (f Format) Track(id int) (*media.Track, error) {
	codec, ok := f.Codec()
	if !ok {
		return nil, fmt.Errorf("%w: %q (payload type %d)", ErrUnsupportedCodec, f.EncodingName, f.PayloadType)
	}
	t := &media.Track{ID: id, Codec: codec, ClockRate: f.ClockRate}
	switch codec {
	case media.CodecH264:
		for _, nalu := range spropNALUs(f.FMTP["sprop-parameter-sets"]) {
			switch h264Type(nalu) {
			case h264NALSPS:
				fill(&t.SPS, nalu)
			case h264NALPPS:
				fill(&t.PPS, nalu)
			}
		}
	case media.CodecH265:
		for _, p := range []struct {
			key string
			dst *[]byte
		}{{"sprop-vps", &t.VPS}, {"sprop-sps", &t.SPS}, {"sprop-pps", &t.PPS}} {
			if nalus := spropNALUs(f.FMTP[p.key]); len(nalus) > 0 {
				*p.dst = nalus[0]
			}
		}
	case media.CodecAAC:
		t.SampleRate, t.Channels = f.ClockRate, max(f.Channels, 1)
		if f.isLATM() {
			c, ok, err := f.latmConfig()
			if err != nil {
				return nil, err
			}
			if ok {
				t.AudioSpecificConfig = c.AudioSpecificConfig
				t.SampleRate, t.Channels = c.Config.SampleRate, max(c.Config.Channels, 1)
			}
		} else if c := f.FMTP["config"]; c != "" {
			asc, err := hex.DecodeString(c)
			if err != nil {
				return nil, fmt.Errorf("%w: AAC config=%q", ErrBadParameters, c)
			}
			t.AudioSpecificConfig = asc
		}
	case media.CodecPCMA, media.CodecPCMU:
		if t.ClockRate == 0 {
			t.ClockRate = 8000
		}
		t.SampleRate, t.Channels = t.ClockRate, max(f.Channels, 1)
	case media.CodecOpus:
		t.SampleRate, t.Channels = 48000, 1
		if f.FMTP["sprop-stereo"] == "1" || f.FMTP["stereo"] == "1" {
			t.Channels = 2
		}
	}
	if t.ClockRate <= 0 {
		return nil, fmt.Errorf("%w: clock rate %d", ErrBadParameters, t.ClockRate)
	}
	return t, nil
}

// spropNALUs decodes a comma-separated list of base64 parameter sets.
// Cameras sometimes encode them in Annex-B form (with start codes), or
// put several in one item; both are split into bare NAL units.
func spropNALUs(list string) [][]byte {
	var out [][]byte
	for _, item := range strings.Split(list, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		b, err := base64.StdEncoding.DecodeString(item)
		if err != nil {
			if b, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(item, "=")); err != nil {
				continue
			}
		}
		for _, nalu := range splitStartCodes(b) {
			if len(nalu) > 0 {
				out = append(out, nalu)
			}
		}
	}
	return out
}

// splitStartCodes splits b at Annex-B start codes (00 00 01 or
// 00 00 00 01); without start codes b is returned whole.
func splitStartCodes(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		i := bytes.Index(b, []byte{0, 0, 1})
		if i < 0 {
			out = append(out, b)
			break
		}
		if head := bytes.TrimRight(b[:i], "\x00"); len(head) > 0 {
			out = append(out, head)
		}
		b = b[i+3:]
	}
	return out
}

// FormatForTrack describes how the engine sends track over RTP with
// payload type pt (static types are used for G.711 whatever pt says).
func FormatForTrack(t *media.Track, pt uint8) (Format, error) {
	f := Format{PayloadType: pt, ClockRate: t.ClockRate, Channels: t.Channels, FMTP: map[string]string{}}
	switch t.Codec {
	case media.CodecH264:
		f.EncodingName, f.ClockRate = "H264", 90000
		f.FMTP["packetization-mode"] = "1"
		if len(t.SPS) >= 4 {
			f.FMTP["profile-level-id"] = strings.ToUpper(hex.EncodeToString(t.SPS[1:4]))
		}
		var sets []string
		for _, ps := range [][]byte{t.SPS, t.PPS} {
			if len(ps) > 0 {
				sets = append(sets, base64.StdEncoding.EncodeToString(ps))
			}
		}
		if len(sets) > 0 {
			f.FMTP["sprop-parameter-sets"] = strings.Join(sets, ",")
		}
	case media.CodecH265:
		f.EncodingName, f.ClockRate = "H265", 90000
		for k, v := range map[string][]byte{"sprop-vps": t.VPS, "sprop-sps": t.SPS, "sprop-pps": t.PPS} {
			if len(v) > 0 {
				f.FMTP[k] = base64.StdEncoding.EncodeToString(v)
			}
		}
	case media.CodecAAC:
		f.EncodingName = "mpeg4-generic"
		if f.ClockRate == 0 {
			f.ClockRate = t.SampleRate
		}
		for k, v := range map[string]string{
			"streamtype": "5", "profile-level-id": "1", "mode": "AAC-hbr",
			"sizelength": "13", "indexlength": "3", "indexdeltalength": "3",
		} {
			f.FMTP[k] = v
		}
		if len(t.AudioSpecificConfig) > 0 {
			f.FMTP["config"] = hex.EncodeToString(t.AudioSpecificConfig)
		}
	case media.CodecPCMA, media.CodecPCMU:
		f.EncodingName, f.PayloadType = string(t.Codec), 8
		if t.Codec == media.CodecPCMU {
			f.PayloadType = 0
		}
		if f.ClockRate == 0 {
			f.ClockRate = 8000
		}
		if f.ClockRate != 8000 || f.Channels > 1 {
			f.PayloadType = pt // not the static format: dynamic type
		}
	case media.CodecOpus:
		f.EncodingName, f.ClockRate, f.Channels = "opus", 48000, 2
		if t.Channels == 2 {
			f.FMTP["sprop-stereo"] = "1"
		}
	case media.CodecVP8:
		f.EncodingName, f.ClockRate = "VP8", 90000
	default:
		return Format{}, fmt.Errorf("%w: %s", ErrUnsupportedCodec, t.Codec)
	}
	if f.ClockRate <= 0 {
		return Format{}, fmt.Errorf("%w: track %d has no clock rate", ErrBadParameters, t.ID)
	}
	return f, nil
}

// RTPMap is the value of the a=rtpmap attribute after the payload type.
func (f Format) RTPMap() string {
	s := f.EncodingName + "/" + strconv.Itoa(f.ClockRate)
	if f.Channels > 1 {
		s += "/" + strconv.Itoa(f.Channels)
	}
	return s
}

// FMTPString is the value of the a=fmtp attribute after the payload type,
// parameters in a stable order; empty when the format has none.
func (f Format) FMTPString() string {
	keys := make([]string, 0, len(f.FMTP))
	for k := range f.FMTP {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(';')
		}
		b.WriteString(k)
		if v := f.FMTP[k]; v != "" {
			b.WriteByte('=')
			b.WriteString(v)
		}
	}
	return b.String()
}
