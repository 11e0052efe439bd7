package fmp4

import (
	"errors"
	"fmt"

	"github.com/svcplatform/svc/mediaengine/codec/h264"
	"github.com/svcplatform/svc/mediaengine/codec/h265"
	"github.com/svcplatform/svc/mediaengine/media"
)

// ErrUnsupported is returned for a track fMP4 cannot carry.
var ErrUnsupported = errors.New("fmp4: unsupported codec")

// Timescale is a track's media timescale: 90 kHz for video, the sample
// rate for audio.
func Timescale(t *media.Track) uint32 {
	if t.Kind() == media.KindVideo {
		return 90000
	}
	switch t.Codec {
	case media.CodecOpus:
		return 48000
	case media.CodecPCMA, media.CodecPCMU:
		if t.SampleRate == 0 {
			return 8000
		}
	}
	if t.SampleRate > 0 {
		return uint32(t.SampleRate)
	}
	return 90000
}

// TrackID is the MP4 track_ID of a media track (1-based).
func TrackID(t *media.Track) uint32 { return uint32(t.ID + 1) }

// InitSegment writes ftyp and moov for tracks, which must be ready.
func InitSegment(tracks []*media.Track) ([]byte, error) {
	w := &boxWriter{b: make([]byte, 0, 1024)}
	w.start("ftyp")
	w.str("iso5")
	w.u32(512)
	w.str("iso5iso6mp41")
	w.end()
	w.start("moov")
	w.startFull("mvhd", 0, 0)
	w.u32(0)
	w.u32(0)
	w.u32(1000)
	w.u32(0)
	w.u32(0x00010000)
	w.u16(0x0100)
	w.zeros(10)
	for _, m := range matrix {
		w.u32(m)
	}
	w.zeros(24)
	next := uint32(1)
	for _, t := range tracks {
		next = max(next, TrackID(t)+1)
	}
	w.u32(next)
	w.end()
	for _, t := range tracks {
		if err := writeTrak(w, t); err != nil {
			return nil, err
		}
	}
	w.start("mvex")
	for _, t := range tracks {
		w.startFull("trex", 0, 0)
		w.u32(TrackID(t))
		w.u32(1)
		w.u32(0)
		w.u32(0)
		w.u32(0)
		w.end()
	}
	w.end()
	w.end()
	return w.b, nil
}

func writeTrak(w *boxWriter, t *media.Track) error {
	video := t.Kind() == media.KindVideo
	w.start("trak")
	w.startFull("tkhd", 0, 3)
	w.u32(0)
	w.u32(0)
	w.u32(TrackID(t))
	w.u32(0)
	w.u32(0)
	w.zeros(8)
	w.u16(0)
	w.u16(0)
	if video {
		w.u16(0)
	} else {
		w.u16(0x0100)
	}
	w.u16(0)
	for _, m := range matrix {
		w.u32(m)
	}
	w.u32(uint32(t.Width) << 16)
	w.u32(uint32(t.Height) << 16)
	w.end()
	w.start("mdia")
	w.startFull("mdhd", 0, 0)
	w.u32(0)
	w.u32(0)
	w.u32(Timescale(t))
	w.u32(0)
	w.u16(0x55c4) // "und"
	w.u16(0)
	w.end()
	w.startFull("hdlr", 0, 0)
	w.u32(0)
	if video {
		w.str("vide")
	} else {
		w.str("soun")
	}
	w.zeros(12)
	if video {
		w.str("VideoHandler\x00")
	} else {
		w.str("SoundHandler\x00")
	}
	w.end()
	w.start("minf")
	if video {
		w.startFull("vmhd", 0, 1)
		w.zeros(8)
	} else {
		w.startFull("smhd", 0, 0)
		w.zeros(4)
	}
	w.end()
	w.start("dinf")
	w.startFull("dref", 0, 0)
	w.u32(1)
	w.startFull("url ", 0, 1)
	w.end()
	w.end()
	w.end()
	w.start("stbl")
	w.startFull("stsd", 0, 0)
	w.u32(1)
	if err := writeSampleEntry(w, t); err != nil {
		return err
	}
	w.end()
	for _, typ := range []string{"stts", "stsc", "stco"} {
		w.startFull(typ, 0, 0)
		w.u32(0)
		w.end()
	}
	w.startFull("stsz", 0, 0)
	w.u32(0)
	w.u32(0)
	w.end()
	w.end() // stbl
	w.end() // minf
	w.end() // mdia
	w.end() // trak
	return nil
}

func writeSampleEntry(w *boxWriter, t *media.Track) error {
	switch t.Codec {
	case media.CodecH264:
		c, err := h264.NewDecoderConfig(t.SPS, t.PPS)
		if err != nil {
			return fmt.Errorf("fmp4: %w", err)
		}
		visualEntry(w, "avc1", t)
		w.start("avcC")
		w.raw(c.Marshal())
		w.end()
		w.end()
	case media.CodecH265:
		c, err := h265.NewDecoderConfig(t.VPS, t.SPS, t.PPS)
		if err != nil {
			return fmt.Errorf("fmp4: %w", err)
		}
		visualEntry(w, "hvc1", t)
		w.start("hvcC")
		w.raw(c.Marshal())
		w.end()
		w.end()
	case media.CodecVP8:
		// VP Codec ISO Media File Format Binding 2.2: vp08 with a vpcC
		// (version 1) saying profile 0, 8 bits, 4:2:0, colours
		// unspecified; VP8 has no codec initialisation data.
		visualEntry(w, "vp08", t)
		w.startFull("vpcC", 1, 0)
		w.u8(0)           // profile
		w.u8(10)          // level 1 (VP8 has no levels)
		w.u8(8<<4 | 1<<1) // bit depth 8, chroma 4:2:0 colocated, limited range
		w.u8(2)           // colour primaries: unspecified
		w.u8(2)           // transfer characteristics: unspecified
		w.u8(2)           // matrix coefficients: unspecified
		w.u16(0)          // codec initialisation data size
		w.end()
		w.end()
	case media.CodecAAC:
		audioEntry(w, "mp4a", t, Timescale(t))
		writeESDS(w, t)
		w.end()
	case media.CodecOpus:
		audioEntry(w, "Opus", t, 48000)
		w.start("dOps")
		w.u8(0)
		w.u8(byte(max(t.Channels, 1)))
		w.u16(312) // pre-skip: libopus's default encoder delay
		w.u32(48000)
		w.u16(0)
		w.u8(0)
		w.end()
		w.end()
	case media.CodecPCMA:
		audioEntry(w, "alaw", t, Timescale(t))
		w.end()
	case media.CodecPCMU:
		audioEntry(w, "ulaw", t, Timescale(t))
		w.end()
	default:
		return fmt.Errorf("%w: %s", ErrUnsupported, t.Codec)
	}
	return nil
}

// visualEntry opens a VisualSampleEntry (ISO/IEC 14496-12 12.1.3); the
// caller adds the configuration box and ends it.
func visualEntry(w *boxWriter, typ string, t *media.Track) {
	w.start(typ)
	w.zeros(6)
	w.u16(1)
	w.zeros(16)
	w.u16(uint16(t.Width))
	w.u16(uint16(t.Height))
	w.u32(0x00480000)
	w.u32(0x00480000)
	w.u32(0)
	w.u16(1)
	w.zeros(32)
	w.u16(0x0018)
	w.u16(0xffff)
}

// audioEntry opens an AudioSampleEntry (ISO/IEC 14496-12 12.2.3).
func audioEntry(w *boxWriter, typ string, t *media.Track, rate uint32) {
	w.start(typ)
	w.zeros(6)
	w.u16(1)
	w.zeros(8)
	w.u16(uint16(max(t.Channels, 1)))
	w.u16(16)
	w.u16(0)
	w.u16(0)
	w.u32(rate << 16)
}

// writeESDS writes the MPEG-4 elementary stream descriptor (ISO/IEC
// 14496-1 7.2.6.5) carrying the AudioSpecificConfig.
func writeESDS(w *boxWriter, t *media.Track) {
	asc := t.AudioSpecificConfig
	w.startFull("esds", 0, 0)
	w.u8(3)
	w.u8(byte(3 + 2 + 13 + 2 + len(asc) + 3))
	w.u16(uint16(TrackID(t)))
	w.u8(0)
	w.u8(4)
	w.u8(byte(13 + 2 + len(asc)))
	w.u8(0x40) // MPEG-4 audio
	w.u8(0x15) // audio stream
	w.zeros(3)
	w.u32(0)
	w.u32(0)
	w.u8(5)
	w.u8(byte(len(asc)))
	w.raw(asc)
	w.u8(6)
	w.u8(1)
	w.u8(2)
	w.end()
}
