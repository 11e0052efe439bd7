package engineapi

// PathSmokeTestRTSP runs an RTSP smoke test from the engine (POST
// SmokeTestRequest, SmokeTestResult): it connects to a source, waits for the
// first keyframe and measures what arrives, within the request's time.
const PathSmokeTestRTSP = "/api/v1/smoke-tests/rtsp"

// SmokeTestRequest names the source to test.
type SmokeTestRequest struct {
	// URL is rtsp:// or rtsps://, credentials in its user info.
	URL string `json:"url"`
	// Transport is "auto" (or empty), "tcp" or "udp".
	Transport string `json:"transport,omitempty"`
	// TimeoutMs bounds the whole test (default 10 s, at most 30 s).
	TimeoutMs int `json:"timeoutMs,omitempty"`
}

// SmokeTestResult is what a smoke test found. OK means a keyframe arrived
// in time; Error says where it failed otherwise (connect, describe, setup,
// play or no keyframe).
type SmokeTestResult struct {
	OK    bool   `json:"ok"`
	Stage string `json:"stage"`
	Error string `json:"error,omitempty"`
	// Transport is the one that delivered media (udp or tcp).
	Transport string `json:"transport,omitempty"`
	// TimeToFirstFrameMs is from the start of the test to the first
	// keyframe.
	TimeToFirstFrameMs float64     `json:"timeToFirstFrameMs,omitempty"`
	VideoCodec         string      `json:"videoCodec,omitempty"`
	Width              int         `json:"width,omitempty"`
	Height             int         `json:"height,omitempty"`
	FPS                float64     `json:"fps,omitempty"`
	AudioCodec         string      `json:"audioCodec,omitempty"`
	Tracks             []TrackInfo `json:"tracks,omitempty"`
	DurationMs         float64     `json:"durationMs"`
}
