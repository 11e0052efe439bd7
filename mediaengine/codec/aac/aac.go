// Package aac reads and writes the AAC framing the engine meets: the
// AudioSpecificConfig (ISO/IEC 14496-3 1.6.2.1) that FLV, MP4 and RTSP carry
// out of band, and the ADTS header (ISO/IEC 13818-7 6.2) of MPEG-TS.
package aac

import (
	"errors"
	"fmt"
)

// SampleRates is the sampling frequency table indexed by
// samplingFrequencyIndex.
var SampleRates = [...]int{96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350}

// ObjectTypeLC is AAC Low Complexity, what cameras and encoders send.
const ObjectTypeLC = 2

// SamplesPerFrame is the number of PCM samples one AAC frame decodes to.
const SamplesPerFrame = 1024

// Config is an AudioSpecificConfig.
type Config struct {
	ObjectType int
	SampleRate int
	Channels   int
}

// ParseConfig decodes an AudioSpecificConfig.
func ParseConfig(b []byte) (Config, error) {
	if len(b) < 2 {
		return Config{}, errors.New("aac: AudioSpecificConfig shorter than 2 bytes")
	}
	c := Config{ObjectType: int(b[0] >> 3)}
	idx := int(b[0]&7)<<1 | int(b[1]>>7)
	if c.ObjectType == 31 {
		return Config{}, errors.New("aac: extended audio object types are not supported")
	}
	if idx == 15 {
		if len(b) < 5 {
			return Config{}, errors.New("aac: explicit sample rate runs past the config")
		}
		c.SampleRate = int(b[1]&0x7f)<<17 | int(b[2])<<9 | int(b[3])<<1 | int(b[4]>>7)
		c.Channels = int(b[4]>>3) & 0xf
	} else {
		if idx >= len(SampleRates) {
			return Config{}, fmt.Errorf("aac: sampling frequency index %d", idx)
		}
		c.SampleRate = SampleRates[idx]
		c.Channels = int(b[1]>>3) & 0xf
	}
	if c.ObjectType == 0 {
		return Config{}, errors.New("aac: audio object type 0")
	}
	return c, nil
}

// Marshal encodes the config in its 2-byte form (or 5 bytes for a sample
// rate outside the table).
func (c Config) Marshal() []byte {
	idx := rateIndex(c.SampleRate)
	if idx < 0 {
		r := uint32(c.SampleRate)
		return []byte{byte(c.ObjectType<<3) | 7, 0x80 | byte(r>>17), byte(r >> 9), byte(r >> 1), byte(r&1)<<7 | byte(c.Channels&0xf)<<3}
	}
	return []byte{byte(c.ObjectType<<3) | byte(idx>>1), byte(idx&1)<<7 | byte(c.Channels&0xf)<<3}
}

func rateIndex(rate int) int {
	for i, r := range SampleRates {
		if r == rate {
			return i
		}
	}
	return -1
}

// Codec is the RFC 6381 codecs string (mp4a.40.<object type>) for HLS.
func (c Config) Codec() string { return fmt.Sprintf("mp4a.40.%d", c.ObjectType) }
