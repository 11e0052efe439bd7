package rtpcodec

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pion/rtp"

	"github.com/svcplatform/svc/mediaengine/codec/aac"
	"github.com/svcplatform/svc/mediaengine/media"
)

// encodingLATM is the rtpmap encoding name of RFC 6416 MPEG-4 audio.
const encodingLATM = "MP4A-LATM"

// isLATM reports whether f is MP4A-LATM.
func (f Format) isLATM() bool { return strings.EqualFold(f.EncodingName, encodingLATM) }

// latmInBand reports whether f's AudioMuxElements carry their
// StreamMuxConfig (cpresent, 1 unless the SDP says 0: RFC 6416 7.3).
func (f Format) latmInBand() bool { return f.FMTP["cpresent"] != "0" }

// latmConfig reads the StreamMuxConfig of the SDP's config parameter; ok
// is false when there is none.
func (f Format) latmConfig() (c aac.StreamMuxConfig, ok bool, err error) {
	s := f.FMTP["config"]
	if s == "" {
		if !f.latmInBand() {
			return c, false, fmt.Errorf("%w: MP4A-LATM with cpresent=0 and no config", ErrBadParameters)
		}
		return c, false, nil
	}
	if len(s)%2 == 1 { // a trailing half byte of zero bits
		s += "0"
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return c, false, fmt.Errorf("%w: MP4A-LATM config=%q", ErrBadParameters, f.FMTP["config"])
	}
	if c, err = aac.ParseStreamMuxConfig(b); err != nil {
		if errors.Is(err, aac.ErrLATMUnsupported) {
			return c, false, fmt.Errorf("%w: %w", ErrUnsupportedCodec, err)
		}
		return c, false, fmt.Errorf("%w: %w", ErrBadParameters, err)
	}
	return c, true, nil
}

// latmDepacketizer implements RFC 6416 MP4A-LATM for AAC: the payloads of
// the packets up to the one with the marker bit (one RTP timestamp) hold
// whole AudioMuxElements, each with one or more AAC frames behind their
// PayloadLengthInfo; the StreamMuxConfig comes from the SDP (cpresent=0)
// or in band. It shares the mpeg4-generic depacketiser's fragment
// gathering, counters and publishing.
type latmDepacketizer struct {
	aacDepacketizer
	cfg    aac.StreamMuxConfig
	inBand bool
	frames [][]byte // reused per element group
	joined []byte   // the frames of one group back to back, reused
}

func newLATMDepacketizer(f Format, track *media.Track, clock *StreamClock, emit func(*media.Frame)) (*latmDepacketizer, error) {
	d := &latmDepacketizer{
		aacDepacketizer: aacDepacketizer{track: track, timeline: NewTimeline(clock, track.ClockRate), emit: emit,
			frameTicks: aac.SamplesPerFrame, sizes: make([]int, 0, 16)},
		inBand: f.latmInBand(),
	}
	c, ok, err := f.latmConfig()
	if err != nil {
		return nil, err
	}
	if ok {
		d.setConfig(c)
	}
	return d, nil
}

// setConfig takes a StreamMuxConfig: the frame duration follows its
// sample rate, and the track gets its AudioSpecificConfig if it had none.
func (d *latmDepacketizer) setConfig(c aac.StreamMuxConfig) {
	d.cfg = c
	if c.Config.SampleRate > 0 {
		d.frameTicks = aac.SamplesPerFrame * int64(d.track.ClockRate) / int64(c.Config.SampleRate)
	}
	fill(&d.track.AudioSpecificConfig, c.AudioSpecificConfig)
}

func (d *latmDepacketizer) Decode(pkt *rtp.Packet, arrival time.Time) error {
	if !d.accept(pkt) {
		return nil
	}
	var err error
	if d.fragOpen && pkt.Timestamp != d.fragTS {
		// A sender that never sets the marker bit: a new timestamp
		// means what was gathered is complete.
		err = d.elements()
	}
	if !d.fragOpen {
		d.frag = d.frag[:0]
		d.fragOpen, d.fragTS, d.fragStart = true, pkt.Timestamp, arrival
	}
	if len(d.frag)+len(pkt.Payload) > MaxAccessUnitSize {
		d.dropFragment()
		d.stats.Malformed.Add(1)
		return fmt.Errorf("%w: AudioMuxElements over %d bytes", ErrMalformedPacket, MaxAccessUnitSize)
	}
	d.frag = append(d.frag, pkt.Payload...)
	if pkt.Marker {
		if e := d.elements(); e != nil {
			err = e
		}
	}
	return err
}

// elements publishes the frames of the gathered AudioMuxElements.
func (d *latmDepacketizer) elements() error {
	d.fragOpen = false
	cfg := d.cfg
	frames, err := aac.AudioMuxElements(d.frag, &cfg, d.inBand, d.frames[:0])
	d.frames = frames[:0]
	if err != nil {
		d.stats.Malformed.Add(1)
		d.stats.Dropped.Add(1)
		return fmt.Errorf("%w: %w", ErrMalformedPacket, err)
	}
	d.setConfig(cfg) // an in-band config may have replaced it
	d.joined, d.sizes = d.joined[:0], d.sizes[:0]
	for _, f := range frames {
		d.joined = append(d.joined, f...)
		d.sizes = append(d.sizes, len(f))
	}
	d.publish(d.joined, d.fragTS, d.fragStart)
	return nil
}
