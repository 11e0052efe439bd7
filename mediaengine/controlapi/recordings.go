package controlapi

import (
	"errors"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/mediaengine/recorder"
	"github.com/svcplatform/svc/shared/engineapi"
)

// listRecordings answers GET /api/v1/recordings.
// The volume is read (and pruned, with retention) on each call; a root
// whose volume cannot be read is listed without it.
func (a *api) listRecordings(w http.ResponseWriter, _ *http.Request) {
	out := engineapi.RecordingList{Recordings: a.Records.List()}
	if v, err := a.Records.Volume(); err == nil {
		out.Volume = &v
	} else {
		a.Log.Warn("recording volume not read", zap.Error(err))
	}
	writeJSON(w, http.StatusOK, out)
}

// startRecording answers POST /api/v1/recordings.
func (a *api) startRecording(w http.ResponseWriter, r *http.Request) {
	var req engineapi.StartRecordingRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if req.App == "" || req.Stream == "" {
		writeError(w, http.StatusBadRequest, engineapi.CodeInvalidBody, "app and stream are required")
		return
	}
	if req.SegmentSeconds < 0 || req.SegmentSeconds > 86400 {
		writeError(w, http.StatusBadRequest, engineapi.CodeInvalidBody, "segmentSeconds is not within 0-86400")
		return
	}
	info, err := a.Records.Start(media.Path{Vhost: req.Vhost, App: req.App, Stream: req.Stream}, time.Duration(req.SegmentSeconds)*time.Second)
	if err != nil {
		writeRecordingError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, info)
}

// stopRecording answers POST /api/v1/recordings/stop once the open file is
// finished.
func (a *api) stopRecording(w http.ResponseWriter, r *http.Request) {
	var req engineapi.StopRecordingRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if req.App == "" || req.Stream == "" {
		writeError(w, http.StatusBadRequest, engineapi.CodeInvalidBody, "app and stream are required")
		return
	}
	info, err := a.Records.Stop(media.Path{Vhost: req.Vhost, App: req.App, Stream: req.Stream})
	if err != nil {
		writeRecordingError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, info)
}

func writeRecordingError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, recorder.ErrAlreadyRecording):
		writeError(w, http.StatusConflict, engineapi.CodeAlreadyRecording, err.Error())
	case errors.Is(err, recorder.ErrNotRecording):
		writeError(w, http.StatusNotFound, engineapi.CodeNotRecording, err.Error())
	case errors.Is(err, recorder.ErrBadName):
		writeError(w, http.StatusBadRequest, engineapi.CodeInvalidBody, err.Error())
	default:
		writeError(w, http.StatusInternalServerError, engineapi.CodeInternal, err.Error())
	}
}

// deleteRecordFiles answers POST /api/v1/recordings/files/delete.
func (a *api) deleteRecordFiles(w http.ResponseWriter, r *http.Request) {
	var req engineapi.DeleteRecordFilesRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if len(req.FileIDs) == 0 || len(req.FileIDs) > 1000 {
		writeError(w, http.StatusBadRequest, engineapi.CodeInvalidBody, "fileIds: 1-1000 ids")
		return
	}
	out := engineapi.DeleteRecordFilesResult{Results: []engineapi.DeleteRecordFileResult{}}
	for _, id := range req.FileIDs {
		res := engineapi.DeleteRecordFileResult{FileID: id, Deleted: true}
		if err := a.Records.Delete(id); err != nil {
			res.Deleted, res.Message = false, err.Error()
			res.Code = engineapi.CodeInternal
			if errors.Is(err, recorder.ErrFileNotFound) {
				res.Code = engineapi.CodeFileNotFound
			}
		}
		out.Results = append(out.Results, res)
	}
	writeJSON(w, http.StatusOK, out)
}

// cutMerge answers POST /api/v1/recordings/cut-merge once the output is
// written.
func (a *api) cutMerge(w http.ResponseWriter, r *http.Request) {
	var req engineapi.CutMergeRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if req.TaskID == "" || len(req.Spans) == 0 || len(req.Spans) > 10000 {
		writeError(w, http.StatusBadRequest, engineapi.CodeInvalidBody, "taskId and 1-10000 spans are required")
		return
	}
	spans := make([]recorder.Span, 0, len(req.Spans))
	for _, s := range req.Spans {
		if s.FromMs < 0 || s.ToMs < 0 {
			writeError(w, http.StatusBadRequest, engineapi.CodeInvalidBody, "fromMs and toMs are not negative")
			return
		}
		spans = append(spans, recorder.Span{FileID: s.FileID, From: time.Duration(s.FromMs) * time.Millisecond, To: time.Duration(s.ToMs) * time.Millisecond})
	}
	res, err := a.Records.CutMerge(req.TaskID, spans)
	switch {
	case errors.Is(err, recorder.ErrCutMerge), errors.Is(err, recorder.ErrBadName):
		writeError(w, http.StatusConflict, engineapi.CodeCutMergeRefused, err.Error())
		return
	case errors.Is(err, recorder.ErrFileNotFound):
		writeError(w, http.StatusNotFound, engineapi.CodeFileNotFound, err.Error())
		return
	case err != nil:
		writeError(w, http.StatusInternalServerError, engineapi.CodeInternal, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, engineapi.CutMergeResult{TaskID: req.TaskID, FileSize: res.Size, DurationMs: res.Duration.Milliseconds(),
		Frames: res.Frames, Parts: res.Parts, Gaps: res.Gaps, StartTime: res.StartTime.UTC()})
}

// scanRecordFiles answers POST /api/v1/recordings/files/scan.
func (a *api) scanRecordFiles(w http.ResponseWriter, _ *http.Request) {
	out, err := a.Engine.ScanRecordFiles()
	if err != nil {
		writeError(w, http.StatusInternalServerError, engineapi.CodeInternal, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// probeRecordingRoot answers POST /api/v1/recordings/roots/probe.
func (a *api) probeRecordingRoot(w http.ResponseWriter, r *http.Request) {
	var req engineapi.RootProbeRequest
	if !decodeBody(w, r, &req) {
		return
	}
	writeJSON(w, http.StatusOK, a.Records.ProbeRoot(req.Path, req.Bind))
}
