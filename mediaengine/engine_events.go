package mediaengine

import (
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/mediaengine/codec/h264"
	"github.com/svcplatform/svc/mediaengine/hub"
	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/shared/engineapi"
)

// schemas lists the protocols a ready stream is playable with, for
// on_stream_changed.
func (e *Engine) schemas() []string {
	return []string{"http-flv", "http-fmp4", "hls", "rtsp"}
}

// streamChanged sends on_stream_changed for a stream that became ready or
// ended. A stream becomes ready with its first keyframe, before the hub
// has seen a second of frames to measure the frame rate from, so a video
// track's rate is the one its encoder declared (the H.264 SPS's VUI
// timing); a track that declares none is reported again once the hub has
// measured it.
func (e *Engine) streamChanged(s *hub.Stream, registered bool) {
	info := s.Info()
	h := engineapi.StreamChangedHook{StreamRef: streamRef(s.Path()), Registered: registered, Origin: info.Origin, OriginURL: info.OriginURL}
	if registered {
		unknown := declareFrameRates(info.Tracks, s.Tracks())
		h.Schemas, h.Tracks = e.schemas(), info.Tracks
		if unknown {
			go e.reportMeasuredFrameRate(s)
		}
	}
	e.hooks.Load().StreamChanged(h)
}

// declareFrameRates fills the frame rate of each video track the hub has
// not measured yet from what its encoder declared; it reports whether a
// video track is still without one.
func declareFrameRates(infos []engineapi.TrackInfo, tracks []*media.Track) (unknown bool) {
	for i := range infos {
		ti := &infos[i]
		if ti.Kind != string(media.KindVideo) || ti.FPS > 0 {
			continue
		}
		for _, t := range tracks {
			if t.ID == ti.ID {
				ti.FPS = declaredFrameRate(t)
			}
		}
		unknown = unknown || ti.FPS == 0
	}
	return unknown
}

// declaredFrameRate is a video track's frame rate from its parameter sets;
// 0 when they do not carry one.
func declaredFrameRate(t *media.Track) float64 {
	if t.Codec == media.CodecH264 {
		if sps, err := h264.ParseSPS(t.SPS); err == nil {
			return sps.FrameRate
		}
	}
	return 0
}

// frameRateSettle is how long after registration the hub's own measure
// (frames per second of arrivals) is there.
const frameRateSettle = 2500 * time.Millisecond

// reportMeasuredFrameRate repeats a stream's registration with the frame
// rate the hub measured, for a track that declared none (contract A allows
// separate stream notifications of one registration).
func (e *Engine) reportMeasuredFrameRate(s *hub.Stream) {
	select {
	case <-s.Done():
		return
	case <-e.ctx.Done():
		return
	case <-time.After(frameRateSettle):
	}
	info := s.Info()
	measured := false
	for _, t := range info.Tracks {
		measured = measured || (t.Kind == string(media.KindVideo) && t.FPS > 0)
	}
	if !measured {
		return
	}
	e.hooks.Load().StreamChanged(engineapi.StreamChangedHook{StreamRef: streamRef(s.Path()), Registered: true, Origin: info.Origin,
		OriginURL: info.OriginURL, Schemas: e.schemas(), Tracks: info.Tracks})
}

// noneReader sends on_stream_none_reader; if the control plane answers
// close, a pulled stream's proxy is removed and any other stream is closed.
func (e *Engine) noneReader(s *hub.Stream) {
	e.hooks.Load().StreamNoneReader(engineapi.StreamNoneReaderHook{StreamRef: streamRef(s.Path()), Origin: s.Origin().Kind}, func() {
		e.log.Info("closing a stream nobody watches, as on_stream_none_reader asked", zap.String("stream", s.Path().String()))
		if id, ok := e.proxies.ByPath(s.Path()); ok {
			e.proxies.Remove(id)
			return
		}
		s.Close()
	})
}
