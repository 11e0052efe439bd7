package mediaengine

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/mediaengine/recorder"
	"github.com/svcplatform/svc/mediaengine/recordplay"
	"github.com/svcplatform/svc/shared/engineapi"
)

// startRecorder opens the recording root, repairs the files a crash left
// open and starts reporting finished files with on_record_mp4.
func (e *Engine) startRecorder(cfg engineapi.Config) (*recorder.Recorder, error) {
	rc := cfg.Recording
	root := cfg.RecordingRoot()
	rec, err := recorder.New(e.hub, recorder.Config{Root: root, SegmentDuration: rc.SegmentDuration.D(), SegmentMaxBytes: rc.SegmentMaxBytes,
		PartDuration: rc.PartDuration.D(), Report: e.reportRecordFile,
		Watermarks:   recorder.Watermarks{LowSpaceBytes: rc.LowSpaceBytes, FullBytes: rc.FullBytes, Retention: rc.Retention, MaxAge: rc.MaxAge.D()},
		FallbackRoot: rc.FallbackRoot}, e.log.Named("recorder"))
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	repaired, queued, err := rec.Repair()
	if err != nil {
		e.log.Warn("recording root not fully scanned", zap.String("root", root), zap.Error(err))
	}
	if repaired > 0 || queued > 0 {
		e.log.Info("recording root scanned", zap.Int("repaired", repaired), zap.Int("toReport", queued))
	}
	return rec, nil
}

// recordRoutes are the media port's recorded-playback routes.
func (e *Engine) recordRoutes() map[string]http.Handler {
	return map[string]http.Handler{"/record/{file}": &recordplay.Handler{Files: e.records, Gate: e, Log: e.log.Named("recordplay")}}
}

// reportRecordFile sends on_record_mp4 for a finished file.
func (e *Engine) reportRecordFile(ctx context.Context, f recorder.FileInfo) error {
	return e.hooks.Load().RecordMP4(ctx, recordHook(f))
}

// recordHook describes a finished file as on_record_mp4 does.
func recordHook(f recorder.FileInfo) engineapi.RecordMP4Hook {
	return engineapi.RecordMP4Hook{StreamRef: streamRef(f.Path), FileID: f.FileID,
		FileName: filepath.Base(f.Rel), FilePath: filepath.ToSlash(f.Rel), FileSize: f.Size, StartTime: f.StartTime,
		TimeLen: f.Duration.Seconds(), Frames: f.Frames, Codecs: f.Codecs, Reason: f.Reason, Fallback: f.Fallback}
}

// ScanRecordFiles walks the recording root again (see recorder.Scan) and
// describes what it found as on_record_mp4 does.
func (e *Engine) ScanRecordFiles() (engineapi.RecordFileScanResult, error) {
	res, err := e.records.Scan()
	if err != nil {
		return engineapi.RecordFileScanResult{}, err
	}
	out := engineapi.RecordFileScanResult{Files: make([]engineapi.RecordMP4Hook, 0, len(res.Files)), Repaired: res.Repaired,
		Unreadable: res.Unreadable, Forgotten: res.Forgotten}
	for _, f := range res.Files {
		out.Files = append(out.Files, recordHook(f))
	}
	return out, nil
}
