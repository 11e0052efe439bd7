package mediaengine

import (
	"errors"
	"net/http"
	"time"

	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/mediaengine/recorder"
	"github.com/svcplatform/svc/shared/engineapi"
)

// listRecordings answers GET /api/v1/recordings.
func (e *Engine) listRecordings(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, engineapi.RecordingList{Recordings: e.records.List()})
}

// startRecording answers POST /api/v1/recordings.
func (e *Engine) startRecording(w http.ResponseWriter, r *http.Request) {
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
	info, err := e.records.Start(media.Path{Vhost: req.Vhost, App: req.App, Stream: req.Stream}, time.Duration(req.SegmentSeconds)*time.Second)
	if err != nil {
		writeRecordingError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, info)
}

// stopRecording answers POST /api/v1/recordings/stop once the open file is
// finished.
func (e *Engine) stopRecording(w http.ResponseWriter, r *http.Request) {
	var req engineapi.StopRecordingRequest
	if !decodeBody(w, r, &req) {
		return
	}
	if req.App == "" || req.Stream == "" {
		writeError(w, http.StatusBadRequest, engineapi.CodeInvalidBody, "app and stream are required")
		return
	}
	info, err := e.records.Stop(media.Path{Vhost: req.Vhost, App: req.App, Stream: req.Stream})
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
func (e *Engine) deleteRecordFiles(w http.ResponseWriter, r *http.Request) {
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
		if err := e.records.Delete(id); err != nil {
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
