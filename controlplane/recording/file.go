package recording

import (
	"time"

	"github.com/svcplatform/svc/controlplane/store/query"
)

// FilePrefix holds one record per recorded file, keyed by file id.
const FilePrefix = "/recording/files/"

// File states. Values are append-only; see StateModel.
const (
	FileCompleted   = "Completed"
	FileSoftDeleted = "SoftDeleted"
	FileDeleted     = "Deleted"
)

// Sources of a file's index entry.
const (
	SourceHookRecordMP4 = "on_record_mp4"
	IndexFromHook       = "hook"
	IndexFromRepair     = "repair"
)

// File is one recorded file as the index keeps it. RelPath is where the
// file lies under its engine's recording root; it is never returned to
// callers (recording listings never expose physical paths).
type File struct {
	FileID        string `json:"fileId"`
	MediaServerID string `json:"mediaServerId"`
	NodeID        string `json:"nodeId"`
	ChannelID     string `json:"channelId,omitempty"`
	Vhost         string `json:"vhost"`
	App           string `json:"app"`
	StreamID      string `json:"streamId"`
	FileName      string `json:"fileName"`
	RelPath       string `json:"relPath"`
	FileSize      int64  `json:"fileSize"`
	// StartTime and EndTime (UTC) bound the media; StartMs and EndMs are
	// the same in Unix milliseconds, for the index.
	StartTime  time.Time `json:"startTime"`
	EndTime    time.Time `json:"endTime"`
	StartMs    int64     `json:"startMs"`
	EndMs      int64     `json:"endMs"`
	DurationMs int64     `json:"durationMs"`
	Frames     uint64    `json:"frames"`
	Codecs     []string  `json:"codecs,omitempty"`
	FileState  string    `json:"fileState"`
	// RecordDate is the UTC date of StartTime (YYYY-MM-DD).
	RecordDate  string `json:"recordDate"`
	SourceHook  string `json:"sourceHook"`
	IndexSource string `json:"indexSource"`
	CloseReason string `json:"closeReason,omitempty"`
	SessionID   string `json:"sessionId,omitempty"`
	// Fallback says the file lies on its engine's fallback root (written
	// while the primary root was paused) until fallback recovery moves it
	// back; its fileId stays the same wherever it lies.
	Fallback  bool       `json:"fallback,omitempty"`
	IndexedAt time.Time  `json:"indexedAt"`
	DeletedAt *time.Time `json:"deletedAt,omitempty"`
}

// FileIndex serves the file listing: the filters and the time
// intersection (start_ms, end_ms, and span_ms, each file's length, which
// bounds how far back before a range a file that meets it can start).
// stream_id and channel_id are searched through the composite trees they
// lead, so they need no tree of their own.
var FileIndex = query.Index{Name: "recording_files", Prefix: FilePrefix, Columns: []query.Column{
	{Name: "media_server_id", Type: "TEXT", Path: "$.mediaServerId"},
	{Name: "node_id", Type: "TEXT", Path: "$.nodeId", NoIndex: true},
	{Name: "channel_id", Type: "TEXT", Path: "$.channelId", NoIndex: true},
	{Name: "app", Type: "TEXT", Path: "$.app", NoIndex: true},
	{Name: "stream_id", Type: "TEXT", Path: "$.streamId", NoIndex: true},
	{Name: "file_state", Type: "TEXT", Path: "$.fileState", NoIndex: true},
	{Name: "record_date", Type: "TEXT", Path: "$.recordDate", NoIndex: true},
	{Name: "source_hook", Type: "TEXT", Path: "$.sourceHook", NoIndex: true},
	{Name: "index_source", Type: "TEXT", Path: "$.indexSource", NoIndex: true},
	{Name: "start_ms", Type: "INTEGER", Path: "$.startMs"},
	{Name: "end_ms", Type: "INTEGER", Path: "$.endMs", NoIndex: true},
	{Name: "span_ms", Type: "INTEGER", Path: "$.endMs", MinusPath: "$.startMs"},
	{Name: "fallback", Type: "INTEGER", Path: "$.fallback", NoIndex: true},
}, Composite: [][]string{
	{"stream_id", "start_ms", "end_ms", "file_state"}, {"channel_id", "start_ms", "end_ms", "file_state"},
	{"stream_id", "span_ms"}, {"channel_id", "span_ms"},
}}

func fileKey(id string) string { return FilePrefix + id }
