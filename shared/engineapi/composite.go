package engineapi

// Meeting composites: after a meeting, the engine that holds its track
// files renders them with ffmpeg into one MP4 (a member copy: one lane; the
// full meeting: a grid of lanes), every file placed at its offset from the
// recording's origin so gaps stay as real time. The output is kept and
// served like a cut/merge output, by its id. Repeating the request while
// it runs joins the running render; after it, answers the same output.

// PathRecordingComposite renders a composite (POST CompositeRequest,
// CompositeResult).
const PathRecordingComposite = "/api/v1/recordings/composite"

// CompositeRequest names the output (a UUID) and its lanes.
type CompositeRequest struct {
	CompositeID string `json:"compositeId"`
	// DurationMs is the output's length, from the origin.
	DurationMs int64           `json:"durationMs"`
	Lanes      []CompositeLane `json:"lanes"`
}

// CompositeLane is one participant's picture and sound.
type CompositeLane struct {
	Files []CompositeFile `json:"files"`
}

// CompositeFile is one recorded file placed at OffsetMs from the origin
// (negative when its first frame came a moment before it), with the
// media kinds it holds.
type CompositeFile struct {
	FileID   string `json:"fileId"`
	OffsetMs int64  `json:"offsetMs"`
	Video    bool   `json:"video"`
	Audio    bool   `json:"audio"`
}

// CompositeResult is a written output.
type CompositeResult struct {
	CompositeID string `json:"compositeId"`
	FileSize    int64  `json:"fileSize"`
	DurationMs  int64  `json:"durationMs"`
}

// CodeCompositeRefused: the composite cannot be made (ffmpeg failed, or
// the request names no media).
const CodeCompositeRefused = "composite_refused"
