package aac

import (
	"errors"
	"fmt"

	"github.com/svcplatform/svc/mediaengine/codec/rbsp"
)

// LATM (ISO/IEC 14496-3 1.7.3) is how MP4A-LATM RTP (RFC 6416) carries AAC:
// GStreamer's rtpmp4apay and many cameras' RTSP servers send it. A
// StreamMuxConfig says how AudioMuxElements are laid out and carries the
// AudioSpecificConfig; each AudioMuxElement holds one or more AAC frames,
// each behind a PayloadLengthInfo. The engine reads the single-program,
// single-layer streams with variable frame lengths that encoders write;
// the rest of the syntax (several programs or layers, CELP/HVXC, fixed
// frame lengths) is refused with ErrLATMUnsupported.

// ErrLATMUnsupported is returned for LATM features no AAC encoder of a
// camera uses.
var ErrLATMUnsupported = errors.New("aac: unsupported LATM stream")

// ErrLATM is returned for LATM data that breaks the syntax.
var ErrLATM = errors.New("aac: malformed LATM data")

// maxLATMFrame bounds one frame's announced length, so a forged
// PayloadLengthInfo cannot make a reader wait for or copy megabytes.
const maxLATMFrame = 1 << 16

// StreamMuxConfig is the part of a LATM StreamMuxConfig the engine needs.
type StreamMuxConfig struct {
	// AudioSpecificConfig is the AudioSpecificConfig, byte aligned, as
	// MP4, FLV and mpeg4-generic RTP carry it.
	AudioSpecificConfig []byte
	// Config is AudioSpecificConfig decoded.
	Config Config
	// SubFrames is the number of AAC frames in each AudioMuxElement.
	SubFrames int
	// OtherDataBits is the length of the other data that ends each
	// AudioMuxElement.
	OtherDataBits int

	audioMuxVersion int
}

// ParseStreamMuxConfig reads a StreamMuxConfig on its own, as the config
// parameter of an MP4A-LATM SDP carries it (RFC 6416 7.3, cpresent=0).
func ParseStreamMuxConfig(b []byte) (StreamMuxConfig, error) {
	r := rbsp.NewReader(b)
	c, err := readStreamMuxConfig(r, b, true)
	if err != nil {
		return StreamMuxConfig{}, err
	}
	return c, nil
}

// latmValue reads LatmGetValue(): a 2-bit byte count less one, then that
// many bytes.
func latmValue(r *rbsp.Reader) int {
	n := int(r.Bits(2))
	v := 0
	for i := 0; i <= n; i++ {
		v = v<<8 | int(r.Bits(8))
	}
	return v
}

// readStreamMuxConfig reads a StreamMuxConfig from r, which reads b. A
// lenient read (an SDP's config) accepts a config that stops after the
// AudioSpecificConfig or within latmBufferFullness, as GStreamer's
// rtpmp4apay writes it: what is missing is then the default (variable
// frame lengths, no other data); in band that would misalign the frames.
func readStreamMuxConfig(r *rbsp.Reader, b []byte, lenient bool) (StreamMuxConfig, error) {
	var c StreamMuxConfig
	c.audioMuxVersion = int(r.Bits(1))
	if c.audioMuxVersion == 1 {
		if r.Bits(1) == 1 { // audioMuxVersionA: reserved for the future
			return c, fmt.Errorf("%w: audioMuxVersionA 1", ErrLATMUnsupported)
		}
		latmValue(r) // taraBufferFullness
	}
	if r.Bits(1) == 0 {
		return c, fmt.Errorf("%w: streams without the same time framing", ErrLATMUnsupported)
	}
	c.SubFrames = int(r.Bits(6)) + 1
	if programs, layers := r.Bits(4), r.Bits(3); programs != 0 || layers != 0 {
		return c, fmt.Errorf("%w: %d programs, %d layers", ErrLATMUnsupported, programs+1, layers+1)
	}
	var err error
	if c.audioMuxVersion == 0 {
		c.AudioSpecificConfig, err = copyAudioSpecificConfig(r, b, -1)
	} else {
		n := latmValue(r)
		c.AudioSpecificConfig, err = copyAudioSpecificConfig(r, b, n)
	}
	if err != nil {
		return c, err
	}
	if c.Config, err = ParseConfig(c.AudioSpecificConfig); err != nil {
		return c, fmt.Errorf("%w: %w", ErrLATM, err)
	}
	if lenient && r.Left() < 3+8 {
		if r.Left() >= 3 && r.Bits(3) != 0 {
			return c, fmt.Errorf("%w: frameLengthType", ErrLATMUnsupported)
		}
		return c, nil
	}
	if flt := r.Bits(3); flt != 0 {
		return c, fmt.Errorf("%w: frameLengthType %d", ErrLATMUnsupported, flt)
	}
	r.Skip(8)     // latmBufferFullness
	if r.Flag() { // otherDataPresent
		if c.audioMuxVersion == 1 {
			c.OtherDataBits = latmValue(r)
		} else {
			for esc := true; esc && r.Err() == nil; {
				esc = r.Flag()
				c.OtherDataBits = c.OtherDataBits<<8 | int(r.Bits(8))
				if c.OtherDataBits > maxLATMFrame*8 {
					return c, fmt.Errorf("%w: other data of %d bits", ErrLATM, c.OtherDataBits)
				}
			}
		}
	}
	if r.Flag() { // crcCheckPresent
		r.Skip(8)
	}
	if r.Err() != nil {
		return c, fmt.Errorf("%w: StreamMuxConfig: %w", ErrLATM, r.Err())
	}
	return c, nil
}

// copyAudioSpecificConfig reads an AudioSpecificConfig at r's position
// and returns it byte aligned. With audioMuxVersion 1 its length in bits
// is given (n >= 0); with version 0 the syntax itself says where it ends.
// b is the buffer r reads.
func copyAudioSpecificConfig(r *rbsp.Reader, b []byte, n int) ([]byte, error) {
	total := len(b) * 8
	start := total - r.Left()
	if n < 0 {
		if err := skipAudioSpecificConfig(r); err != nil {
			if !errors.Is(err, ErrLATMUnsupported) {
				err = fmt.Errorf("%w: AudioSpecificConfig: %w", ErrLATM, err)
			}
			return nil, err
		}
		n = total - r.Left() - start
	} else {
		if n > maxLATMFrame*8 {
			return nil, fmt.Errorf("%w: AudioSpecificConfig of %d bits", ErrLATM, n)
		}
		r.Skip(n)
	}
	if r.Err() != nil {
		return nil, fmt.Errorf("%w: AudioSpecificConfig: %w", ErrLATM, r.Err())
	}
	// Read the same bits again, into bytes.
	out := make([]byte, (n+7)/8)
	c := rbsp.NewReader(b)
	c.Skip(start)
	for i := 0; i < n; i += 8 {
		w := min(8, n-i)
		out[i/8] = byte(c.Bits(w) << (8 - w))
	}
	return out, c.Err()
}

// audioObjectType reads GetAudioObjectType().
func audioObjectType(r *rbsp.Reader) int {
	t := int(r.Bits(5))
	if t == 31 {
		t = 32 + int(r.Bits(6))
	}
	return t
}

// skipAudioSpecificConfig reads past an AudioSpecificConfig (ISO/IEC
// 14496-3 1.6.2.1) of the general audio object types.
func skipAudioSpecificConfig(r *rbsp.Reader) error {
	aot := audioObjectType(r)
	if r.Bits(4) == 0xf { // samplingFrequencyIndex
		r.Skip(24)
	}
	channels := r.Bits(4)
	explicitSBR := aot == 5 || aot == 29
	if explicitSBR { // explicit SBR (HE-AAC) or PS
		if r.Bits(4) == 0xf { // extensionSamplingFrequencyIndex
			r.Skip(24)
		}
		if aot = audioObjectType(r); aot == 22 {
			r.Skip(4) // extensionChannelConfiguration
		}
	}
	switch aot {
	case 1, 2, 3, 4, 6, 7, 17, 19, 20, 21, 22, 23:
	default:
		return fmt.Errorf("%w: audio object type %d", ErrLATMUnsupported, aot)
	}
	// GASpecificConfig.
	r.Skip(1) // frameLengthFlag
	if r.Flag() {
		r.Skip(14) // coreCoderDelay
	}
	extension := r.Flag()
	if r.Err() != nil {
		return r.Err()
	}
	if channels == 0 {
		return fmt.Errorf("%w: program_config_element", ErrLATMUnsupported)
	}
	if aot == 6 || aot == 20 {
		r.Skip(3) // layerNr
	}
	if extension {
		if aot == 22 {
			r.Skip(16) // numOfSubFrame, layer_length
		}
		if aot == 17 || aot == 19 || aot == 20 || aot == 23 {
			r.Skip(3) // resilience flags
		}
		r.Skip(1) // extensionFlag3
	}
	switch aot {
	case 17, 19, 20, 21, 22, 23:
		if ep := r.Bits(2); ep == 2 || ep == 3 { // epConfig
			return fmt.Errorf("%w: epConfig %d", ErrLATMUnsupported, ep)
		}
	}
	if !explicitSBR {
		skipSyncExtension(r)
	}
	return r.Err()
}

// Sync words of the backward-compatible SBR and PS signalling.
const (
	syncExtensionSBR = 0x2b7
	syncExtensionPS  = 0x548
)

// skipSyncExtension reads past the backward-compatible extension that may
// end an AudioSpecificConfig (implicit HE-AAC signalling; GStreamer writes
// one for plain AAC-LC too). Where the config's length is not given, its
// sync word tells it is there: what follows a config in a StreamMuxConfig
// (frameLengthType 0) cannot start with it.
func skipSyncExtension(r *rbsp.Reader) {
	if peek(r, 11) != syncExtensionSBR || r.Left() < 16 {
		return
	}
	r.Skip(11)
	switch r.Bits(5) { // extensionAudioObjectType
	case 5:
		if r.Flag() { // sbrPresentFlag
			if r.Bits(4) == 0xf {
				r.Skip(24)
			}
			if r.Left() >= 12 && peek(r, 11) == syncExtensionPS {
				r.Skip(12) // the sync word and psPresentFlag
			}
		}
	case 22:
		if r.Flag() {
			if r.Bits(4) == 0xf {
				r.Skip(24)
			}
		}
		r.Skip(4) // extensionChannelConfiguration
	}
}

// peek returns the next n bits without consuming them (0 when fewer are
// left).
func peek(r *rbsp.Reader, n int) uint32 {
	c := *r
	if c.Left() < n {
		return 0
	}
	return c.Bits(n)
}

// AudioMuxElements splits data holding whole AudioMuxElements (RFC 6416:
// one RTP packet, or the fragments of one joined) into AAC frames,
// appended to frames. With inBand (cpresent=1) each element may carry a
// StreamMuxConfig, which replaces *c; without it *c must be the SDP's.
// A frame before any configuration is known is an error.
func AudioMuxElements(data []byte, c *StreamMuxConfig, inBand bool, frames [][]byte) ([][]byte, error) {
	r := rbsp.NewReader(data)
	total := len(data) * 8
	for r.Left() >= 8 {
		if inBand && !r.Flag() { // useSameStreamMux
			nc, err := readStreamMuxConfig(r, data, false)
			if err != nil {
				return frames, err
			}
			*c = nc
		}
		if c.SubFrames == 0 {
			return frames, fmt.Errorf("%w: AudioMuxElement before any StreamMuxConfig", ErrLATM)
		}
		for i := 0; i < c.SubFrames; i++ {
			n := 0
			for {
				b := int(r.Bits(8))
				n += b
				if b != 255 || r.Err() != nil {
					break
				}
			}
			if n > maxLATMFrame || n*8 > r.Left() {
				return frames, fmt.Errorf("%w: a frame of %d bytes in %d bits", ErrLATM, n, r.Left())
			}
			pos := total - r.Left()
			var frame []byte
			if pos%8 == 0 {
				frame = data[pos/8 : pos/8+n : pos/8+n]
				r.Skip(n * 8)
			} else { // after a 1-bit useSameStreamMux: not byte aligned
				frame = make([]byte, n)
				for j := range frame {
					frame[j] = byte(r.Bits(8))
				}
			}
			frames = append(frames, frame)
		}
		r.Skip(c.OtherDataBits)
		if rest := r.Left() % 8; rest != 0 { // byte_align()
			r.Skip(rest)
		}
		if r.Err() != nil {
			return frames, fmt.Errorf("%w: AudioMuxElement: %w", ErrLATM, r.Err())
		}
	}
	return frames, nil
}
