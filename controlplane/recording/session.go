package recording

import (
	"time"

	"github.com/svcplatform/svc/controlplane/store/query"
)

// SessionPrefix holds one record per media server and stream:
// /recording/sessions/<mediaServerId>/<vhost>/<app>/<stream>. A new start
// after a stop gives it a new session id.
const SessionPrefix = "/recording/sessions/"

// Session states. Values are append-only; see StateModel.
const (
	SessionRequested = "Requested"
	SessionRecording = "Recording"
	SessionStopped   = "Stopped"
	SessionFailed    = "Failed"
)

// Record sources: who asked for the recording.
const (
	RecordManual = "manual"
	RecordAuto   = "auto"
	RecordPlan   = "plan"
)

// Session is a stream a media server is asked to record.
type Session struct {
	SessionID     string `json:"sessionId"`
	MediaServerID string `json:"mediaServerId"`
	NodeID        string `json:"nodeId"`
	ChannelID     string `json:"channelId,omitempty"`
	Vhost         string `json:"vhost"`
	App           string `json:"app"`
	StreamID      string `json:"streamId"`
	State         string `json:"state"`
	RecordSource  string `json:"recordSource"`
	// SegmentSeconds overrides the engine's segment duration when set.
	SegmentSeconds int        `json:"segmentSeconds,omitempty"`
	RequestedBy    string     `json:"requestedBy"`
	StartedAt      time.Time  `json:"startedAt"`
	UpdatedAt      time.Time  `json:"updatedAt"`
	StoppedAt      *time.Time `json:"stoppedAt,omitempty"`
	// Files and Bytes count the files indexed for this session.
	Files     int64  `json:"files"`
	Bytes     int64  `json:"bytes"`
	LastError string `json:"lastError,omitempty"`
	// CommandID is the node command of the last start or stop.
	CommandID string `json:"commandId,omitempty"`
	Revision  int64  `json:"-"`
}

// Active reports whether the session wants the engine recording.
func (s *Session) Active() bool { return s.State == SessionRequested || s.State == SessionRecording }

// SessionIndex serves the session listing.
var SessionIndex = query.Index{Name: "recording_sessions", Prefix: SessionPrefix, Columns: []query.Column{
	{Name: "media_server_id", Type: "TEXT", Path: "$.mediaServerId", NoIndex: true},
	{Name: "node_id", Type: "TEXT", Path: "$.nodeId", NoIndex: true},
	{Name: "channel_id", Type: "TEXT", Path: "$.channelId", NoIndex: true},
	{Name: "app", Type: "TEXT", Path: "$.app", NoIndex: true},
	{Name: "stream_id", Type: "TEXT", Path: "$.streamId", NoIndex: true},
	{Name: "state", Type: "TEXT", Path: "$.state", NoIndex: true},
	{Name: "record_source", Type: "TEXT", Path: "$.recordSource", NoIndex: true},
}}

// Indexes are the package's typed index tables, for the server's store.
var Indexes = []query.Index{FileIndex, SessionIndex, TaskIndex}

// OwnedPrefixes are the prefixes of this package.
var OwnedPrefixes = []string{"/recording/"}

func sessionKey(mediaServerID, vhost, app, stream string) string {
	return SessionPrefix + mediaServerID + "/" + vhost + "/" + app + "/" + stream
}
