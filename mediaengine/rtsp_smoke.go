package mediaengine

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/svcplatform/svc/mediaengine/codec/h264"
	"github.com/svcplatform/svc/mediaengine/codec/h265"
	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/mediaengine/rtsp/rtspclient"
	"github.com/svcplatform/svc/shared/engineapi"
)

// smokeMeasure is how long a smoke test keeps reading after the first
// keyframe to measure the frame rate.
const smokeMeasure = 2 * time.Second

// SmokeTestRTSP reads an RTSP URL until the first frame (and a moment
// more to measure the frame rate) or ctx ends, on the pull ports.
func (e *Engine) SmokeTestRTSP(ctx context.Context, req engineapi.SmokeTestRequest) engineapi.SmokeTestResult {
	cfg := e.cfg.Load()
	return e.smokeTest(ctx, req, [2]int{cfg.RTPPortMin + 2, cfg.RTPPortMax})
}

func (e *Engine) smokeTest(ctx context.Context, req engineapi.SmokeTestRequest, ports [2]int) engineapi.SmokeTestResult {
	start := time.Now()
	res := engineapi.SmokeTestResult{Stage: "connect"}
	done := func() engineapi.SmokeTestResult {
		res.DurationMs = float64(time.Since(start).Microseconds()) / 1000
		res.Error = engineapi.RedactURL(res.Error)
		return res
	}
	mode := rtspclient.TransportMode(req.Transport)
	if mode == "" {
		mode = rtspclient.TransportAuto
	}
	c, err := rtspclient.Dial(ctx, req.URL, rtspclient.Config{Transport: mode, UDPPorts: ports, Log: e.log.Named("smoke-test")})
	if err != nil {
		res.Error = err.Error()
		return done()
	}
	defer c.Close()
	res.Stage = "describe"
	if err := c.Options(ctx); err != nil {
		res.Error = err.Error()
		return done()
	}
	if _, err := c.Describe(ctx); err != nil {
		res.Error = err.Error()
		return done()
	}
	res.Stage = "setup"
	useUDP := mode != rtspclient.TransportTCP
	err = c.Setup(ctx, useUDP)
	if err != nil && mode == rtspclient.TransportAuto {
		useUDP = false
		err = c.Setup(ctx, false)
	}
	if err != nil {
		res.Error = err.Error()
		return done()
	}
	res.Transport = map[bool]string{true: "udp", false: "tcp"}[useUDP]
	res.Stage = "play"
	type seen struct {
		first, last time.Duration
		frames      int
	}
	var video seen
	var gotKey bool
	keyAt := make(chan struct{})
	measured := make(chan struct{})
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	err = c.Play(runCtx, func(f *media.Frame) {
		if f.Track.Kind() != media.KindVideo {
			return
		}
		if !gotKey {
			if !f.Keyframe {
				return
			}
			gotKey = true
			res.TimeToFirstFrameMs = float64(time.Since(start).Microseconds()) / 1000
			video.first = f.PTS
			close(keyAt)
		}
		video.last = f.PTS
		video.frames++
		if f.PTS-video.first >= smokeMeasure {
			select {
			case <-measured:
			default:
				close(measured)
			}
		}
	})
	if err != nil {
		res.Error = err.Error()
		return done()
	}
	runErr := make(chan error, 1)
	go func() { runErr <- c.Run(runCtx) }()
	select {
	case <-keyAt:
	case err := <-runErr:
		res.Error = "the stream ended before a keyframe: " + errText(err)
		return done()
	case <-ctx.Done():
		stop()
		<-runErr
		if useUDP && mode == rtspclient.TransportAuto {
			res.Error = "no keyframe within the time over UDP; try transport tcp"
		} else {
			res.Error = "no keyframe within the time"
		}
		return done()
	}
	ended := false
	select {
	case <-measured:
	case <-runErr:
		ended = true
	case <-ctx.Done():
	}
	stop()
	if !ended {
		<-runErr // the frame callback is quiet from here on
	}
	res.OK, res.Stage = true, "done"
	if video.frames > 1 && video.last > video.first {
		res.FPS = float64(video.frames-1) / (video.last - video.first).Seconds()
	}
	for _, t := range c.Tracks() {
		ti := engineapi.TrackInfo{ID: t.ID, Kind: string(t.Kind()), Codec: string(t.Codec), Ready: t.Ready(), SampleRate: t.SampleRate, Channels: t.Channels}
		if t.Kind() == media.KindVideo {
			ti.Width, ti.Height = videoSize(t)
			if res.VideoCodec == "" {
				res.VideoCodec, res.Width, res.Height, ti.FPS = ti.Codec, ti.Width, ti.Height, res.FPS
			}
		} else if res.AudioCodec == "" {
			res.AudioCodec = ti.Codec
		}
		res.Tracks = append(res.Tracks, ti)
	}
	return done()
}

// videoSize reads the coded size from the track's SPS.
func videoSize(t *media.Track) (int, int) {
	if t.Width > 0 {
		return t.Width, t.Height
	}
	switch t.Codec {
	case media.CodecH264:
		if s, err := h264.ParseSPS(t.SPS); err == nil {
			return s.Width, s.Height
		}
	case media.CodecH265:
		if s, err := h265.ParseSPS(t.SPS); err == nil {
			return s.Width, s.Height
		}
	}
	return 0, 0
}

func errText(err error) string {
	if err == nil || errors.Is(err, context.Canceled) {
		return "end of stream"
	}
	return strings.TrimSpace(err.Error())
}
