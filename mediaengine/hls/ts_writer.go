package hls

import (
	"bytes"
	"context"
	"errors"
	"time"

	"github.com/asticode/go-astits"

	"github.com/svcplatform/svc/mediaengine/codec/aac"
	"github.com/svcplatform/svc/mediaengine/codec/h264"
	"github.com/svcplatform/svc/mediaengine/codec/h265"
	"github.com/svcplatform/svc/mediaengine/codec/nalu"
	"github.com/svcplatform/svc/mediaengine/fmp4"
	"github.com/svcplatform/svc/mediaengine/media"
)

// MPEG-TS PIDs of the segments.
const (
	pidVideo = 256
	pidAudio = 257
)

// tsWriter builds MPEG-TS segments with go-astits. One muxer writes every
// segment of a generation (its output is switched at each cut) so that
// continuity counters run on across segments; each segment starts with
// PAT and PMT.
type tsWriter struct {
	video, audio *media.Track
	out          *bytes.Buffer
	mx           *astits.Muxer
	pes          []byte
}

// ErrNoTSVideo refuses MPEG-TS segments of a stream whose video MPEG-TS
// has no format for (VP8 from a WHIP publisher): sound without its picture
// would look like a broken stream, and the fMP4 format carries it.
var ErrNoTSVideo = errors.New("hls: MPEG-TS has no VP8 format; this stream plays over HLS with hls.format fmp4, HTTP-fMP4, RTSP or WebRTC")

func newTSWriter(tracks []*media.Track) (*tsWriter, error) {
	w := &tsWriter{out: &bytes.Buffer{}}
	for _, t := range tracks {
		switch t.Codec {
		case media.CodecVP8:
			return nil, ErrNoTSVideo
		case media.CodecH264, media.CodecH265:
			if w.video == nil {
				w.video = t
			}
		case media.CodecAAC:
			if w.audio == nil {
				w.audio = t
			}
		}
	}
	if w.video == nil && w.audio == nil {
		return nil, fmp4.ErrUnsupported
	}
	w.mx = astits.NewMuxer(context.Background(), writerFunc(func(p []byte) (int, error) { return w.out.Write(p) }))
	if w.video != nil {
		st := astits.StreamTypeH264Video
		if w.video.Codec == media.CodecH265 {
			st = astits.StreamTypeH265Video
		}
		if err := w.mx.AddElementaryStream(astits.PMTElementaryStream{ElementaryPID: pidVideo, StreamType: st}); err != nil {
			return nil, err
		}
		w.mx.SetPCRPID(pidVideo)
	}
	if w.audio != nil {
		if err := w.mx.AddElementaryStream(astits.PMTElementaryStream{ElementaryPID: pidAudio, StreamType: astits.StreamTypeAACAudio}); err != nil {
			return nil, err
		}
		if w.video == nil {
			w.mx.SetPCRPID(pidAudio)
		}
	}
	return w, nil
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func (w *tsWriter) init() []byte { return nil }
func (w *tsWriter) ext() string  { return "ts" }

func (w *tsWriter) write(f *media.Frame, cut bool) []byte {
	var finished []byte
	if cut && w.out.Len() > 0 {
		finished = bytes.Clone(w.out.Bytes())
		w.out.Reset()
		w.mx.WriteTables()
	}
	switch f.Track {
	case w.video:
		w.writeVideo(f)
	case w.audio:
		w.writeAudio(f)
	}
	return finished
}

// ts is a 33-bit 90 kHz timestamp.
func ts(d time.Duration) int64 {
	return int64(fmp4.ToTimescale(d, 90000) % (1 << 33))
}

func (w *tsWriter) writeVideo(f *media.Frame) {
	b := w.pes[:0]
	hevc := f.Track.Codec == media.CodecH265
	if hevc {
		b = append(b, 0, 0, 0, 1, 0x46, 0x01, 0x50) // AUD
	} else {
		b = append(b, 0, 0, 0, 1, 0x09, 0xf0)
	}
	if f.Keyframe && !hasParamSets(f, hevc) {
		if hevc {
			b = nalu.AppendAnnexB(b, [][]byte{f.Track.VPS, f.Track.SPS, f.Track.PPS})
		} else {
			b = nalu.AppendAnnexB(b, [][]byte{f.Track.SPS, f.Track.PPS})
		}
	}
	for _, u := range f.NALUs {
		if (!hevc && h264.Type(u) == h264.NALAUD) || (hevc && h265.Type(u) == h265.NALAUD) {
			continue
		}
		b = nalu.AppendAnnexB(b, [][]byte{u})
	}
	w.pes = b
	oh := &astits.PESOptionalHeader{MarkerBits: 2, PTSDTSIndicator: astits.PTSDTSIndicatorBothPresent,
		PTS: &astits.ClockReference{Base: ts(f.PTS)}, DTS: &astits.ClockReference{Base: ts(f.DTS)}}
	if f.PTS == f.DTS {
		oh.PTSDTSIndicator, oh.DTS = astits.PTSDTSIndicatorOnlyPTS, nil
	}
	af := &astits.PacketAdaptationField{RandomAccessIndicator: f.Keyframe, HasPCR: true, PCR: &astits.ClockReference{Base: ts(f.DTS)}}
	w.mx.WriteData(&astits.MuxerData{PID: pidVideo, AdaptationField: af,
		PES: &astits.PESData{Header: &astits.PESHeader{StreamID: 0xe0, OptionalHeader: oh}, Data: b}})
}

func hasParamSets(f *media.Frame, hevc bool) bool {
	for _, u := range f.NALUs {
		if (!hevc && h264.Type(u) == h264.NALSPS) || (hevc && h265.Type(u) == h265.NALSPS) {
			return true
		}
	}
	return false
}

func (w *tsWriter) writeAudio(f *media.Frame) {
	cfg, err := aac.ParseConfig(f.Track.AudioSpecificConfig)
	if err != nil {
		return
	}
	b := aac.AppendADTS(w.pes[:0], cfg, len(f.Payload))
	b = append(b, f.Payload...)
	w.pes = b
	oh := &astits.PESOptionalHeader{MarkerBits: 2, PTSDTSIndicator: astits.PTSDTSIndicatorOnlyPTS, PTS: &astits.ClockReference{Base: ts(f.PTS)}}
	var af *astits.PacketAdaptationField
	if w.video == nil {
		af = &astits.PacketAdaptationField{RandomAccessIndicator: true, HasPCR: true, PCR: &astits.ClockReference{Base: ts(f.DTS)}}
	}
	w.mx.WriteData(&astits.MuxerData{PID: pidAudio, AdaptationField: af,
		PES: &astits.PESData{Header: &astits.PESHeader{StreamID: 0xc0, OptionalHeader: oh}, Data: b}})
}
