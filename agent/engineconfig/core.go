package engineconfig

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/svcplatform/svc/shared/agentapi"
	"github.com/svcplatform/svc/shared/engineapi"
)

func coreOf(c engineapi.Config) agentapi.CoreSettings {
	return agentapi.CoreSettings{HTTPAddr: c.HTTPAddr, RTSPAddr: c.RTSPAddr, RTPPortMin: c.RTPPortMin, RTPPortMax: c.RTPPortMax,
		HLSFormat: c.HLS.Format, HLSSegmentSeconds: int(c.HLS.SegmentDuration.D() / time.Second), HLSSegments: c.HLS.Segments,
		GOPCacheMaxFrames: c.GOPCacheMaxFrames, ReaderQueueFrames: c.ReaderQueueFrames, NoReaderTimeoutS: int(c.NoReaderTimeout.D() / time.Second),
		LogLevel: c.LogLevel}
}

// Core reads the core settings.
func (f *File) Core() (agentapi.CoreSettingsDocument, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cur, err := os.ReadFile(f.Path)
	if err != nil {
		return agentapi.CoreSettingsDocument{}, err
	}
	cfg, err := engineapi.Parse(cur)
	if err != nil {
		return agentapi.CoreSettingsDocument{}, fmt.Errorf("%w: the file does not parse (fix it with a raw apply): %w", ErrInvalid, err)
	}
	return agentapi.CoreSettingsDocument{Sha256: digest(cur), Settings: coreOf(cfg)}, nil
}

// ApplyCore validates core settings, backs up and writes them, like a
// settings apply.
func (f *File) ApplyCore(ctx context.Context, p agentapi.CoreSettingsPatch) (agentapi.ConfigApplyResult, error) {
	s := p.Settings
	patch := map[string]any{}
	hls := map[string]any{}
	set := func(m map[string]any, k string, v any, ok bool) {
		if ok {
			m[k] = v
		}
	}
	set(patch, "httpAddr", deref(s.HTTPAddr), s.HTTPAddr != nil)
	set(patch, "rtspAddr", deref(s.RTSPAddr), s.RTSPAddr != nil)
	set(patch, "rtpPortMin", deref(s.RTPPortMin), s.RTPPortMin != nil)
	set(patch, "rtpPortMax", deref(s.RTPPortMax), s.RTPPortMax != nil)
	set(patch, "gopCacheMaxFrames", deref(s.GOPCacheMaxFrames), s.GOPCacheMaxFrames != nil)
	set(patch, "readerQueueFrames", deref(s.ReaderQueueFrames), s.ReaderQueueFrames != nil)
	set(patch, "logLevel", deref(s.LogLevel), s.LogLevel != nil)
	if s.NoReaderTimeoutS != nil {
		patch["noReaderTimeout"] = (time.Duration(*s.NoReaderTimeoutS) * time.Second).String()
	}
	set(hls, "format", deref(s.HLSFormat), s.HLSFormat != nil)
	set(hls, "segments", deref(s.HLSSegments), s.HLSSegments != nil)
	if s.HLSSegmentSeconds != nil {
		hls["segmentDuration"] = (time.Duration(*s.HLSSegmentSeconds) * time.Second).String()
	}
	if len(hls) > 0 {
		patch["hls"] = hls
	}
	if len(patch) == 0 {
		return agentapi.ConfigApplyResult{}, fmt.Errorf("%w: settings must change at least one core setting", ErrInvalid)
	}
	return f.ApplyPatch(ctx, agentapi.ConfigPatch{Settings: patch, ExpectedSha256: p.ExpectedSha256})
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
