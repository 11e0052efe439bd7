package recording

import "github.com/svcplatform/svc/shared/engineapi"

// StateModel describes the recording state machines the contract leaves
// to the implementation, for GET /api/v2/recording/state-model.
type StateModel struct {
	Machines []Machine `json:"machines"`
}

// Machine is one state machine.
type Machine struct {
	Name        string       `json:"name"`
	Description string       `json:"description"`
	States      []State      `json:"states"`
	Initial     string       `json:"initial"`
	Transitions []Transition `json:"transitions"`
}

// State is one state of a machine.
type State struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Terminal    bool   `json:"terminal"`
}

// Transition is one allowed change of state and what causes it.
type Transition struct {
	From    string `json:"from"`
	To      string `json:"to"`
	Trigger string `json:"trigger"`
}

// Model is the recording state model this version implements.
var Model = StateModel{Machines: []Machine{
	{
		Name: "recording-session",
		Description: "A stream a media server is asked to record (one per media server and vhost/app/stream; " +
			"a start after a stop opens a new session id).",
		Initial: SessionRequested,
		States: []State{
			{SessionRequested, "the start was accepted; the engine has not confirmed it yet", false},
			{SessionRecording, "the engine records the stream, or waits for it to be published and then records it", false},
			{SessionStopped, "recording was stopped; the engine finished and reported its open file", true},
			{SessionFailed, "the engine refused or failed the start or stop (lastError says why); a new start retries", true},
		},
		Transitions: []Transition{
			{SessionRequested, SessionRecording, "the engine confirms the start (POST /api/v2/recording/start, auto-record, a plan)"},
			{SessionRequested, SessionFailed, "the engine refuses the start or its node command fails"},
			{SessionRecording, SessionStopped, "POST /api/v2/recording/stop, or auto-record/plan no longer asks for it"},
			{SessionRecording, SessionFailed, "the engine refuses the stop"},
			{SessionRequested, SessionStopped, "stopped before the engine confirmed"},
			{SessionStopped, SessionRequested, "a new start (new session id)"},
			{SessionFailed, SessionRequested, "a new start (new session id)"},
			{SessionRecording, SessionRecording, "an engine restarted: the leader's reconciler asks it to record again"},
		},
	},
	{
		Name: "recording-file",
		Description: "A recorded fragmented-MP4 file, indexed when its engine reports it (on_record_mp4), " +
			"also after the engine repaired it following a crash, or when a scan of its root finds it (indexSource scan). " +
			"Files are addressed by fileId only.",
		Initial: FileCompleted,
		States: []State{
			{FileCompleted, "finished and indexed; listed, playable and downloadable", false},
			{FileSoftDeleted, "hidden from playback and links (its leases stop working); the bytes stay and it can be restored", false},
			{FileDeleted, "the bytes are removed on their media server; a restore answers that they are gone", true},
			{FileMissing, "indexed, but the latest scan did not find it on its media server's disk (a swapped or unmounted disk, " +
				"a file removed by hand); not playable; a scan that finds it again makes it Completed", false},
		},
		Transitions: []Transition{
			{FileCompleted, FileSoftDeleted, "POST /api/v2/recording/files/soft-delete"},
			{FileSoftDeleted, FileCompleted, "POST /api/v2/recording/files/restore"},
			{FileCompleted, FileDeleted, "POST /api/v2/recording/files/delete (hard delete)"},
			{FileSoftDeleted, FileDeleted, "POST /api/v2/recording/files/delete (hard delete)"},
			{FileCompleted, FileDeleted, "retention on its media server's LowSpace volume pruned it (seen by GET /api/v2/recording/disk/states or the engine's recording-status)"},
			{FileSoftDeleted, FileDeleted, "retention on its media server's LowSpace volume pruned it"},
			{FileCompleted, FileMissing, "POST /api/v2/recording/files/scan did not find it on disk"},
			{FileSoftDeleted, FileMissing, "POST /api/v2/recording/files/scan did not find it on disk"},
			{FileMissing, FileCompleted, "POST /api/v2/recording/files/scan found it again"},
			{FileMissing, FileDeleted, "POST /api/v2/recording/files/delete (hard delete)"},
		},
	},
	{
		Name: "cut-merge-task",
		Description: "A time range of one stream's recordings joined into one MP4 (fragmented) on the media server that holds them, " +
			"without transcoding: from the keyframe at or before the start, gaps without recordings skipped. The output is played, " +
			"downloaded and leased (resource kind cut-merge-output) by the task id, only while the task is Succeeded.",
		Initial: TaskPending,
		States: []State{
			{TaskPending, "accepted; waiting for the leader's worker (or for its media server to answer again)", false},
			{TaskRunning, "the media server writes the output (processPercentage 10)", false},
			{TaskSucceeded, "the output is written: fileSize, actualDurationMs; links and leases work until the output is deleted", true},
			{TaskFailed, "the media server refused or failed (error says why), or could not be asked after several attempts", true},
		},
		Transitions: []Transition{
			{TaskPending, TaskRunning, "the leader's worker takes it"},
			{TaskRunning, TaskSucceeded, "the media server wrote the output"},
			{TaskRunning, TaskFailed, "the media server refused (other tracks in the range, files gone) or failed"},
			{TaskRunning, TaskPending, "the media server could not be asked; tried again on the next pass"},
			{TaskRunning, TaskRunning, "a new leader runs it again (the output is rewritten, never duplicated)"},
		},
	},
	{
		Name: "disk-volume",
		Description: "The filesystem a media server's recording root lies on, by the free-space watermarks of its engine's " +
			"recording configuration (lowSpaceBytes, fullBytes). Read from the engine at each GET /api/v2/recording/disk/states " +
			"and by the leader's disk sweep, which marks the files the engine's retention deleted (by the low watermark or by " +
			"recording.maxAge, whatever the state) Deleted.",
		Initial: VolumeNormal,
		States: []State{
			{VolumeNormal, "free space at or above the low watermark", false},
			{VolumeLowSpace, "free space below lowSpaceBytes; with retention the engine deletes the oldest finished recordings until it is not", false},
			{VolumeFull, "free space below fullBytes: no new file is started (the open one closes); recording resumes when space is freed", false},
			{VolumeMismatch, "the root holds another disk (its identity marker is absent or not the bound one): no new file, no retention", false},
			{VolumeMissing, "the recording root is gone (an unmounted disk): no new file", false},
			{VolumeReadOnly, "no file can be created in the root (a read-only mount): no new file", false},
			{VolumeUnknown, "the engine could not be asked (offline node, engine down); error says why", false},
		},
		Transitions: []Transition{
			{VolumeNormal, VolumeLowSpace, "free space fell below lowSpaceBytes"},
			{VolumeLowSpace, VolumeFull, "free space fell below fullBytes"},
			{VolumeFull, VolumeLowSpace, "space was freed (retention, deletes, another writer)"},
			{VolumeLowSpace, VolumeNormal, "space was freed above lowSpaceBytes"},
			{VolumeNormal, VolumeUnknown, "the engine stopped answering"},
			{VolumeUnknown, VolumeNormal, "the engine answers again (or LowSpace, Full)"},
			{VolumeNormal, VolumeMismatch, "another disk was mounted at the root"},
			{VolumeMismatch, VolumeNormal, "the bound disk is back (recording resumes by itself)"},
			{VolumeNormal, VolumeMissing, "the root disappeared"},
			{VolumeMissing, VolumeNormal, "the root is back"},
			{VolumeNormal, VolumeReadOnly, "the root became read-only"},
			{VolumeReadOnly, VolumeNormal, "the root can be written again"},
		},
	},
	{
		Name: "disk-identity",
		Description: "The disk identity binding of a media server's recording root (and of its fallback root), as identityState " +
			"and fallbackState report it. Only POST /api/v2/recording/disk/validate-root binds: on first success it writes the " +
			"identity marker (.svc-disk-identity, naming a new identity and the filesystem it was written on) and binds the " +
			"running engine's root to both; the engine reads the marker again when it starts. A root never validated records " +
			"but is Unbound: a swapped disk cannot be told there.",
		Initial: engineapi.IdentityUnbound,
		States: []State{
			{engineapi.IdentityUnbound, "never validated (no marker): the root records and retention runs, but a swap cannot be told", false},
			{engineapi.IdentityVerified, "the root holds the bound marker on the bound filesystem and can be written", false},
			{VolumeMismatch, "the root holds another disk: its marker is absent or another, or it lies on another filesystem than " +
				"the bound one (a copied marker); no new file there (the fallback root takes them), no retention, validation refused", false},
			{VolumeMissing, "the root is gone: no new file there", false},
			{VolumeReadOnly, "the root holds the bound disk but no file can be created there: no new file there", false},
		},
		Transitions: []Transition{
			{engineapi.IdentityUnbound, engineapi.IdentityVerified, "POST /api/v2/recording/disk/validate-root bound it"},
			{engineapi.IdentityVerified, VolumeMismatch, "another disk was mounted at the root"},
			{VolumeMismatch, engineapi.IdentityVerified, "the bound disk is back (recording resumes there by itself)"},
			{engineapi.IdentityVerified, VolumeMissing, "the root disappeared"},
			{VolumeMissing, engineapi.IdentityVerified, "the root is back"},
			{engineapi.IdentityVerified, VolumeReadOnly, "the root became read-only"},
			{VolumeReadOnly, engineapi.IdentityVerified, "the root can be written again"},
		},
	},
}}
