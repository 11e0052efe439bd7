// Package recording owns the control plane's side of recording: recording
// sessions (a stream a media server is asked to record, by an operator, a
// business backend or auto-record), the index of recorded files the
// engines report with on_record_mp4 (queried by time intersection), the
// recording.file.completed event written with each file, and the state
// models of both, which GET /api/v2/recording/state-model publishes.
//
// The engines do the writing (mediaengine/recorder); this package asks
// them through node commands relayed by their agents and never addresses
// a file by path: fileId is the only reference callers get.
package recording
