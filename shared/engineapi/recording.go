package engineapi

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// Recording on the engine: the control API starts and stops recording a
// stream, lists what is being recorded, and the engine reports each
// finished file with on_record_mp4 (ZLMediaKit's hook of that name).
const (
	// PathRecordings lists recordings (GET, RecordingList) and starts one
	// (POST StartRecordingRequest, RecordingInfo).
	PathRecordings = "/api/v1/recordings"
	// PathRecordingStop stops recording a stream (POST
	// StopRecordingRequest, RecordingInfo).
	PathRecordingStop = "/api/v1/recordings/stop"
	// PathRecordingFilesDelete removes finished files by id (POST
	// DeleteRecordFilesRequest, DeleteRecordFilesResult).
	PathRecordingFilesDelete = "/api/v1/recordings/files/delete"
	// PathRecordingFilesScan walks the recording root again and lists the
	// finished files on it (POST, RecordFileScanResult).
	PathRecordingFilesScan = "/api/v1/recordings/files/scan"
	// PathRecordingCutMerge writes a cut/merge output (POST
	// CutMergeRequest, CutMergeResult); repeating it rewrites the same
	// output. The output is played and deleted by its task id like a file.
	PathRecordingCutMerge = "/api/v1/recordings/cut-merge"

	// HookOnRecordMP4 reports a finished recording file (RecordMP4Hook).
	// The engine repeats it until a control node answers 2xx, also across
	// its own restarts, so the control plane must take it idempotently
	// (by FileID).
	HookOnRecordMP4 = "on_record_mp4"
)

// Recorded playback on the media port (GET /record/{fileId}.mp4) asks
// on_play for this reserved stream, the file's id as its stream name, with
// protocol http-fmp4: a recording lease's ticket is bound to it, so it
// never opens a live stream, nor a live ticket a file.
const (
	RecordPlaybackVhost = "__record__"
	RecordPlaybackApp   = "file"
	// RecordDownloadApp is the reserved app of a download of a file
	// (?download=1 on the same route: the file as an attachment, whole or
	// by Range): a playback ticket never downloads, nor a download ticket
	// plays.
	RecordDownloadApp = "download"
	// RecordDownloadParam asks the route for a download.
	RecordDownloadParam = "download"
	// RecordPlaybackPath prefixes a file's URL: <prefix><fileId>.mp4.
	RecordPlaybackPath = "/record/"
)

// Error codes of the recording routes.
const (
	CodeAlreadyRecording = "already_recording"
	CodeNotRecording     = "not_recording"
	CodeFileNotFound     = "file_not_found"
)

// DeleteRecordFilesRequest names finished files to remove (at most 1000).
type DeleteRecordFilesRequest struct {
	FileIDs []string `json:"fileIds"`
}

// DeleteRecordFilesResult says, per file, whether it was removed; Code
// file_not_found means the engine has no finished file of that id (gone
// already, or still being written).
type DeleteRecordFilesResult struct {
	Results []DeleteRecordFileResult `json:"results"`
}

// DeleteRecordFileResult is one file's outcome.
type DeleteRecordFileResult struct {
	FileID  string `json:"fileId"`
	Deleted bool   `json:"deleted"`
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`
}

// CutMergeRequest joins spans of finished files, in order, into one
// output named by the task id (at most 10000 spans).
type CutMergeRequest struct {
	TaskID string         `json:"taskId"`
	Spans  []CutMergeSpan `json:"spans"`
}

// CutMergeSpan is the media of one file from FromMs to ToMs after its
// first frame; ToMs zero means to its end.
type CutMergeSpan struct {
	FileID string `json:"fileId"`
	FromMs int64  `json:"fromMs"`
	ToMs   int64  `json:"toMs,omitempty"`
}

// CutMergeResult describes a written output: its size, the media it
// covers (gaps between the spans closed), frames, fragments copied, gaps
// closed and the wall-clock time of its first frame.
type CutMergeResult struct {
	TaskID     string    `json:"taskId"`
	FileSize   int64     `json:"fileSize"`
	DurationMs int64     `json:"durationMs"`
	Frames     uint64    `json:"frames"`
	Parts      int       `json:"parts"`
	Gaps       int       `json:"gaps"`
	StartTime  time.Time `json:"startTime"`
}

// CodeCutMergeRefused: the spans cannot be joined (other tracks, no
// media, a file that is not there).
const CodeCutMergeRefused = "cut_merge_refused"

// RecordingConfig shapes the engine's recorder.
type RecordingConfig struct {
	// Root is the directory recordings are written under; empty means
	// <dataDir>/record.
	Root string `yaml:"root,omitempty" json:"root,omitempty"`
	// SegmentDuration closes a file at the first keyframe after this long.
	SegmentDuration Duration `yaml:"segmentDuration" json:"segmentDuration"`
	// SegmentMaxBytes closes a file at the first keyframe after it grew
	// this large.
	SegmentMaxBytes int64 `yaml:"segmentMaxBytes" json:"segmentMaxBytes"`
	// PartDuration is how much media each fragment (part) holds at most
	// before it is written: a crash loses at most the open part. A
	// keyframe always starts a new part, so every keyframe is a seek point.
	PartDuration Duration `yaml:"partDuration" json:"partDuration"`
	// LowSpaceBytes: with less free space than this on the root's volume
	// it is LowSpace, and with Retention the oldest finished recordings
	// are deleted until it is not. Zero means no low watermark.
	LowSpaceBytes int64 `yaml:"lowSpaceBytes,omitempty" json:"lowSpaceBytes,omitempty"`
	// FullBytes: with less free space than this the volume is Full and no
	// new file is started on it (the open one still closes). Zero means
	// no full watermark.
	FullBytes int64 `yaml:"fullBytes,omitempty" json:"fullBytes,omitempty"`
	// Retention deletes the oldest finished recordings while the volume is
	// below LowSpaceBytes; without it a low volume only reports so.
	Retention bool `yaml:"retention,omitempty" json:"retention,omitempty"`
	// MaxAge deletes finished recordings older than this (by the time
	// they were finished), whatever the free space; zero keeps them. A
	// sweep runs every minute, or every quarter of MaxAge when shorter.
	MaxAge Duration `yaml:"maxAge,omitempty" json:"maxAge,omitempty"`
	// FallbackRoot, when set, is where new files go while Root is paused
	// (its disk swapped, missing, read-only or Full); recording returns to
	// Root once it is usable again, and fallback recovery moves the files
	// back. An absolute, clean path apart from Root; it applies without a
	// restart.
	FallbackRoot string `yaml:"fallbackRoot,omitempty" json:"fallbackRoot,omitempty"`
}

// Validate says which recording field is wrong.
func (c RecordingConfig) Validate() error {
	if c.SegmentDuration.D() < time.Second || c.SegmentDuration.D() > 24*time.Hour {
		return fmt.Errorf("recording.segmentDuration: %s is not within [1s, 24h]", c.SegmentDuration.D())
	}
	if c.SegmentMaxBytes < 1<<20 {
		return fmt.Errorf("recording.segmentMaxBytes: %d is less than 1 MiB", c.SegmentMaxBytes)
	}
	if c.PartDuration.D() < 100*time.Millisecond || c.PartDuration.D() > 10*time.Second {
		return fmt.Errorf("recording.partDuration: %s is not within [100ms, 10s]", c.PartDuration.D())
	}
	if c.LowSpaceBytes < 0 || c.FullBytes < 0 {
		return errors.New("recording.lowSpaceBytes, fullBytes: negative")
	}
	if c.LowSpaceBytes > 0 && c.FullBytes > c.LowSpaceBytes {
		return fmt.Errorf("recording.fullBytes: %d is above lowSpaceBytes %d", c.FullBytes, c.LowSpaceBytes)
	}
	if c.MaxAge < 0 || c.MaxAge > 0 && c.MaxAge.D() < time.Second {
		return fmt.Errorf("recording.maxAge: %s is not 0 or at least 1s", c.MaxAge.D())
	}
	if c.Retention && c.LowSpaceBytes == 0 {
		return errors.New("recording.retention: needs lowSpaceBytes")
	}
	if c.PartDuration.D() > c.SegmentDuration.D() {
		return errors.New("recording.partDuration: longer than segmentDuration")
	}
	if f := c.FallbackRoot; f != "" && (!filepath.IsAbs(f) || filepath.Clean(f) != f) {
		return fmt.Errorf("recording.fallbackRoot: %q is not an absolute, clean path", f)
	}
	return nil
}

// ErrFallbackOverlap: recording.fallbackRoot is the recording root, lies
// inside it or holds it.
var ErrFallbackOverlap = errors.New("recording.fallbackRoot overlaps the recording root")

// RecordingRoot is the directory recordings go to: recording.root, or
// <dataDir>/record.
func (c Config) RecordingRoot() string {
	if c.Recording.Root != "" {
		return c.Recording.Root
	}
	return filepath.Join(c.DataDir, "record")
}

// CheckFallbackRoot says whether recording.fallbackRoot can stand beside
// the recording root: nested with it (either inside the other, or the
// same), a scan, retention or recovery of one root would walk the other's
// files, so it is ErrFallbackOverlap. Validate leaves this out on purpose:
// an engine that starts with such a file records on its root alone (the
// recorder ignores the fallback root with a warning) rather than not at
// all; the node agent refuses to write one.
func (c Config) CheckFallbackRoot() error {
	fb := c.Recording.FallbackRoot
	if fb == "" {
		return nil
	}
	root := filepath.Clean(c.RecordingRoot())
	if nested(root, fb) || nested(fb, root) {
		return fmt.Errorf("%w: %q and the recording root %q lie inside one another", ErrFallbackOverlap, fb, root)
	}
	return nil
}

// nested says whether p is dir or lies under it.
func nested(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// RecordingDefaults are the recorder's settings unless configured.
func RecordingDefaults() RecordingConfig {
	return RecordingConfig{SegmentDuration: Duration(10 * time.Minute), SegmentMaxBytes: 1 << 30, PartDuration: Duration(time.Second)}
}

// fillDefaults sets the zero fields from RecordingDefaults, so a
// configuration file written before recording existed stays valid.
func (c *RecordingConfig) fillDefaults() {
	d := RecordingDefaults()
	if c.SegmentDuration == 0 {
		c.SegmentDuration = d.SegmentDuration
	}
	if c.SegmentMaxBytes == 0 {
		c.SegmentMaxBytes = d.SegmentMaxBytes
	}
	if c.PartDuration == 0 {
		c.PartDuration = d.PartDuration
	}
}

// StartRecordingRequest starts recording a stream. The stream need not be
// live yet: the recorder waits for it, and after its publisher goes, for
// the next one, until stopped.
type StartRecordingRequest struct {
	Vhost  string `json:"vhost,omitempty"`
	App    string `json:"app"`
	Stream string `json:"stream"`
	// SegmentSeconds, when positive, overrides recording.segmentDuration
	// for this stream.
	SegmentSeconds int `json:"segmentSeconds,omitempty"`
}

// StopRecordingRequest stops recording a stream; the open file is closed
// and reported.
type StopRecordingRequest struct {
	Vhost  string `json:"vhost,omitempty"`
	App    string `json:"app"`
	Stream string `json:"stream"`
}

// RecordingInfo describes one stream being recorded.
type RecordingInfo struct {
	Vhost  string `json:"vhost"`
	App    string `json:"app"`
	Stream string `json:"stream"`
	// State is "waiting" (no live stream yet) or "recording".
	State string `json:"state"`
	// FileID is the open file's id, empty while waiting.
	FileID    string    `json:"fileId,omitempty"`
	StartedAt time.Time `json:"startedAt"`
	// Files counts the files finished so far; Bytes and Frames all written.
	Files  int    `json:"files"`
	Bytes  int64  `json:"bytes"`
	Frames uint64 `json:"frames"`
	// Dropped counts frames the recorder lost by falling behind the hub.
	Dropped uint64 `json:"dropped"`
}

// RecordingList answers GET PathRecordings.
type RecordingList struct {
	Recordings []RecordingInfo `json:"recordings"`
	// Volume is the state of the recording root's filesystem; absent when
	// it could not be read.
	Volume *RecordingVolume `json:"volume,omitempty"`
}

// Volume states of a recording root, by the free-space watermarks of
// RecordingConfig.
const (
	VolumeNormal   = "Normal"
	VolumeLowSpace = "LowSpace"
	VolumeFull     = "Full"
	// The root's disk is not the one bound to it (its identity marker is
	// absent or another), the root is gone, or it cannot be written: no
	// new file starts there and retention deletes nothing.
	VolumeMismatch = "Mismatch"
	VolumeMissing  = "Missing"
	VolumeReadOnly = "ReadOnly"
)

// Identity states of a recording root (RecordingVolume.IdentityState):
// Verified when its marker is the bound one on the bound filesystem and
// the root can be written; Unbound when the root was never validated (it
// holds no marker, so it records but a swapped disk cannot be told);
// else the volume state that says why not.
const (
	IdentityVerified = "Verified"
	IdentityUnbound  = "Unbound"
)

// RecordingVolume is the filesystem a recording root lies on.
type RecordingVolume struct {
	// Root is the recording root directory on the media host (absolute):
	// the operator's name for it in GET /api/v2/recording/disk/roots.
	Root string `json:"root,omitempty"`
	// FilesystemID is the filesystem's identity (statfs f_fsid with the
	// device number of the root): another disk mounted there changes it.
	FilesystemID string `json:"filesystemId"`
	// IdentityID is the disk identity bound to the root (the marker
	// validation wrote, read when the engine started or when it validated
	// the root; empty while Unbound) and BoundFilesystemID the filesystem
	// the marker was written on; FoundIdentityID what the root holds now
	// when that differs; IdentityState Verified, Unbound or Mismatch,
	// Missing, ReadOnly.
	IdentityID        string `json:"identityId"`
	BoundFilesystemID string `json:"boundFilesystemId,omitempty"`
	FoundIdentityID   string `json:"foundIdentityId,omitempty"`
	IdentityState     string `json:"identityState"`
	TotalBytes        int64  `json:"totalBytes"`
	FreeBytes         int64  `json:"freeBytes"`
	State             string `json:"state"`
	LowSpaceBytes     int64  `json:"lowSpaceBytes"`
	FullBytes         int64  `json:"fullBytes"`
	Retention         bool   `json:"retention"`
	// MaxAgeSeconds is recording.maxAge (0: files are kept whatever their
	// age).
	MaxAgeSeconds int64     `json:"maxAgeSeconds"`
	CheckedAt     time.Time `json:"checkedAt"`
	// PrunedFileIDs are the latest finished files retention deleted
	// (newest last, at most MaxPrunedReported): the control plane marks
	// them Deleted when it reads them.
	PrunedFileIDs []string `json:"prunedFileIds,omitempty"`
	// Refused counts new files not started because the volume was Full.
	Refused int64 `json:"refused"`
	// FallbackRoot is the fallback root when one is configured,
	// FallbackState its identity state (Verified, or why it cannot take
	// files) and FallbackFiles how many files on it await recovery.
	FallbackRoot  string `json:"fallbackRoot,omitempty"`
	FallbackState string `json:"fallbackState,omitempty"`
	FallbackFiles int    `json:"fallbackFiles,omitempty"`
}

// MaxPrunedReported bounds RecordingVolume.PrunedFileIDs.
const MaxPrunedReported = 1000

// RecordMP4Hook reports a finished file (on_record_mp4). Field names
// follow ZLMediaKit's where it has them; the path is relative to the
// recording root, never absolute.
type RecordMP4Hook struct {
	HookHeader
	StreamRef
	// FileID is the file's stable id (UUID), chosen when it was opened.
	FileID string `json:"fileId"`
	// FileName is the base name; FilePath the path under the recording
	// root.
	FileName string `json:"fileName"`
	FilePath string `json:"filePath"`
	FileSize int64  `json:"fileSize"`
	// StartTime is the wall-clock time of the first frame, TimeLen the
	// media duration in seconds.
	StartTime time.Time `json:"startTime"`
	TimeLen   float64   `json:"timeLen"`
	Frames    uint64    `json:"frames"`
	// Codecs lists the tracks ("H264", "AAC").
	Codecs []string `json:"codecs"`
	// Fallback says the file lies on the engine's fallback root (written
	// while the primary root was paused); fallback recovery moves it back.
	Fallback bool `json:"fallback,omitempty"`
	// Reason is why the file closed: duration, size, tracks, parameters
	// (new video parameter sets), clock-jump, no-keyframe, stopped,
	// stream-ended or repaired (after a crash of the engine).
	Reason string `json:"reason"`
}

// RecordFileScanResult answers POST PathRecordingFilesScan: every finished
// recording on the root (described as on_record_mp4 describes it; cut/merge
// outputs are not listed), the files a crash had left open that the scan
// repaired, those it could not read, and the files the engine knew that
// are no longer on disk.
type RecordFileScanResult struct {
	Files      []RecordMP4Hook `json:"files"`
	Repaired   int             `json:"repaired"`
	Unreadable int             `json:"unreadable"`
	Forgotten  int             `json:"forgotten"`
}

// PathRecordingRootProbe checks a candidate recording root directory on
// the media host (POST RootProbeRequest, RootProbe): it exists, is a
// directory the engine can write, its filesystem, free space and identity
// marker. With Bind it also writes the identity marker when the directory
// has none (validation binds the disk identity on first success).
const PathRecordingRootProbe = "/api/v1/recordings/roots/probe"

// RootProbeRequest names the candidate directory (absolute, clean).
type RootProbeRequest struct {
	Path string `json:"path"`
	Bind bool   `json:"bind,omitempty"`
}

// RootProbe is what the engine found at a candidate root. Valid says it
// can be a recording root; Problem says why not.
type RootProbe struct {
	Path           string `json:"path"`
	Exists         bool   `json:"exists"`
	Directory      bool   `json:"directory"`
	Writable       bool   `json:"writable"`
	FilesystemID   string `json:"filesystemId,omitempty"`
	FilesystemType string `json:"filesystemType,omitempty"`
	TotalBytes     int64  `json:"totalBytes"`
	FreeBytes      int64  `json:"freeBytes"`
	// IdentityID is the marker the directory holds (after binding, when
	// Bind wrote it); Bound says this request wrote it or bound the
	// engine's root to it.
	IdentityID string `json:"identityId,omitempty"`
	Bound      bool   `json:"bound"`
	// Current says it is the engine's recording root now.
	Current   bool      `json:"current"`
	Valid     bool      `json:"valid"`
	Problem   string    `json:"problem,omitempty"`
	CheckedAt time.Time `json:"checkedAt"`
}

// PathRecordingFallbackRecover moves recording files from the fallback
// root back to the primary (POST FallbackRecoveryRequest,
// FallbackRecoveryResult).
const PathRecordingFallbackRecover = "/api/v1/recordings/fallback/recover"

// FallbackRecoveryRequest names the files to move (every file on a
// fallback root when empty); DryRun only says what would happen.
type FallbackRecoveryRequest struct {
	FileIDs []string `json:"fileIds,omitempty"`
	DryRun  bool     `json:"dryRun,omitempty"`
}

// Results of one file's fallback recovery.
const (
	RecoveryWouldMove = "WouldMove"
	RecoveryMoved     = "Moved"
	// RecoveryOnPrimary: the file already lies on the primary root (moved
	// by an earlier run, or never on the fallback).
	RecoveryOnPrimary = "OnPrimary"
	RecoveryNotFound  = "NotFound"
	// RecoveryBlocked: the primary cannot take it now (paused, or it
	// would fall below its full watermark).
	RecoveryBlocked = "Blocked"
	RecoveryFailed  = "Failed"
)

// FallbackRecoveryItem is one file's outcome. FilePath is relative to
// the root, never absolute.
type FallbackRecoveryItem struct {
	FileID   string `json:"fileId"`
	FilePath string `json:"filePath,omitempty"`
	FileSize int64  `json:"fileSize"`
	Result   string `json:"result"`
	Detail   string `json:"detail,omitempty"`
}

// FallbackRecoveryResult answers PathRecordingFallbackRecover: the
// primary root's identity state and one item per file.
type FallbackRecoveryResult struct {
	PrimaryState string                 `json:"primaryState"`
	FallbackRoot string                 `json:"fallbackRoot,omitempty"`
	Items        []FallbackRecoveryItem `json:"items"`
}

// PathRecordingBrowse lists a directory under a recording root, or makes
// one (POST BrowseRequest, BrowseResult): the console's directory browser,
// confined to the roots.
const PathRecordingBrowse = "/api/v1/recordings/browse"

// Browser root names.
const (
	BrowseRootPrimary  = "primary"
	BrowseRootFallback = "fallback"
)

// BrowseRequest names a directory by root and a path relative to it ("":
// the root itself); Create makes it (its parent must exist).
type BrowseRequest struct {
	Root   string `json:"root,omitempty"`
	Path   string `json:"path"`
	Create bool   `json:"create,omitempty"`
}

// Entry types of a listing.
const (
	BrowseDirectory = "directory"
	BrowseFile      = "file"
	BrowseSymlink   = "symlink"
)

// BrowseEntry is one name in a listed directory.
type BrowseEntry struct {
	Name       string    `json:"name"`
	Type       string    `json:"type"`
	Size       int64     `json:"size"`
	ModifiedAt time.Time `json:"modifiedAt"`
}

// Why a browser path was refused (BrowseResult.Problem).
const (
	BrowseOutsideRoot  = "outside_root"
	BrowseBadPath      = "bad_path"
	BrowseNotFound     = "not_found"
	BrowseNotDirectory = "not_directory"
	BrowseFailed       = "failed"
)

// MaxBrowsePath bounds a browser path (PATH_MAX).
const MaxBrowsePath = 4096

// BrowsePathProblem checks a client's browser path relative to a root
// without reading the disk, and answers why it is refused ("" when it is
// not): NUL, a backslash (a client writing one meant a separator) or too
// long is BrowseBadPath; absolute, or a ".." component (refused rather
// than cleaned away: a traversal string is never what a client meant) is
// BrowseOutsideRoot. Symlinks are the engine's to resolve.
func BrowsePathProblem(rel string) string {
	if len(rel) > MaxBrowsePath || strings.ContainsAny(rel, "\x00\\") {
		return BrowseBadPath
	}
	if strings.HasPrefix(rel, "/") {
		return BrowseOutsideRoot
	}
	for _, c := range strings.Split(rel, "/") {
		if c == ".." {
			return BrowseOutsideRoot
		}
	}
	return ""
}

// BrowseResult answers PathRecordingBrowse: the entries, or for Create
// whether it was made and can be written; Problem (with Detail) when the
// path was refused.
type BrowseResult struct {
	Root      string        `json:"root"`
	Path      string        `json:"path"`
	Entries   []BrowseEntry `json:"entries"`
	Truncated bool          `json:"truncated,omitempty"`
	Created   bool          `json:"created,omitempty"`
	Writable  bool          `json:"writable,omitempty"`
	Problem   string        `json:"problem,omitempty"`
	Detail    string        `json:"detail,omitempty"`
}
