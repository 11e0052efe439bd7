package recording

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/google/uuid"

	"github.com/svcplatform/svc/controlplane/channels"
	"github.com/svcplatform/svc/controlplane/mediaserver"
	"github.com/svcplatform/svc/controlplane/playback"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/query"
	"github.com/svcplatform/svc/shared/agentapi"
	"github.com/svcplatform/svc/shared/engineapi"
)

// Cut/merge tasks turn a time range of one stream's recordings into one
// MP4 on the media server that holds them: the engine copies the chosen
// fragments without transcoding (mediaengine/recorder.CutMerge). The
// task is written Pending; the leader's worker runs it through a node
// command, records the outcome and delivers the callback. The output is
// played, downloaded and leased by the task id (resource kind
// cut-merge-output) only while the task is Succeeded.

// TaskPrefix holds one record per cut/merge task, keyed by task id.
const TaskPrefix = "/recording/cutmerge/"

// Cut/merge task states. Values are append-only; see StateModel.
const (
	TaskPending   = "Pending"
	TaskRunning   = "Running"
	TaskSucceeded = "Succeeded"
	TaskFailed    = "Failed"
)

// Callback delivery states.
const (
	CallbackPending   = "Pending"
	CallbackDelivered = "Delivered"
	CallbackFailed    = "Failed"
)

// Limits of a cut/merge request.
const (
	MaxCutMergeRange = 7 * 24 * time.Hour
	MaxCutMergeFiles = 2000
)

// CutMergeTask is one cut/merge task.
type CutMergeTask struct {
	TaskID        string    `json:"taskId"`
	TaskStatus    string    `json:"taskStatus"`
	Percentage    int       `json:"processPercentage"`
	ChannelID     string    `json:"channelId,omitempty"`
	MediaServerID string    `json:"mediaServerId"`
	Vhost         string    `json:"vhost"`
	App           string    `json:"app"`
	StreamID      string    `json:"streamId"`
	StartTime     time.Time `json:"startTime"`
	EndTime       time.Time `json:"endTime"`
	CallbackURL   string    `json:"callbackUrl,omitempty"`
	// Spans are the files and their parts the output is made of.
	Spans []engineapi.CutMergeSpan `json:"spans"`
	// The output, once Succeeded: its size, the media it covers (gaps
	// without recordings skipped), its frames and the gaps it closed.
	FileSize         int64      `json:"fileSize,omitempty"`
	ActualDurationMs int64      `json:"actualDurationMs,omitempty"`
	Frames           uint64     `json:"frames,omitempty"`
	Gaps             int        `json:"gaps,omitempty"`
	OutputStartTime  *time.Time `json:"outputStartTime,omitempty"`
	OutputDeleted    bool       `json:"outputDeleted,omitempty"`
	Error            string     `json:"error,omitempty"`
	Attempts         int        `json:"attempts"`
	CommandID        string     `json:"commandId,omitempty"`
	RequestedBy      string     `json:"requestedBy"`
	CreatedAt        time.Time  `json:"createdAt"`
	StartedAt        *time.Time `json:"startedAt,omitempty"`
	CompletedAt      *time.Time `json:"completedAt,omitempty"`
	CallbackState    string     `json:"callbackState,omitempty"`
	CallbackAttempts int        `json:"callbackAttempts,omitempty"`
	CallbackError    string     `json:"callbackError,omitempty"`
	CreatedAtMs      int64      `json:"createdAtMs"`
	Revision         int64      `json:"-"`
}

// Terminal reports whether the task has ended.
func (t *CutMergeTask) Terminal() bool {
	return t.TaskStatus == TaskSucceeded || t.TaskStatus == TaskFailed
}

// TaskIndex serves the task listing and the worker.
var TaskIndex = query.Index{Name: "recording_cutmerge_tasks", Prefix: TaskPrefix, Columns: []query.Column{
	{Name: "media_server_id", Type: "TEXT", Path: "$.mediaServerId"},
	{Name: "task_status", Type: "TEXT", Path: "$.taskStatus"},
	{Name: "channel_id", Type: "TEXT", Path: "$.channelId", NoIndex: true},
	{Name: "app", Type: "TEXT", Path: "$.app", NoIndex: true},
	{Name: "callback_state", Type: "TEXT", Path: "$.callbackState"},
	{Name: "created_at_ms", Type: "INTEGER", Path: "$.createdAtMs"},
}}

func taskKey(id string) string { return TaskPrefix + id }

// CutMergeRequest is contract B's CutMergeRequest: a valid interval with
// zones, the stream (a channel, or app and streamId), the media server
// only as a fallback, and an optional callback URL.
type CutMergeRequest struct {
	StreamRef
	Start, End  time.Time
	CallbackURL string
}

// CreateCutMerge checks a request, finds the Completed files that
// intersect its range and writes a Pending task; the leader's worker runs
// it.
func (s *Service) CreateCutMerge(ctx context.Context, actor Actor, req CutMergeRequest) (*CutMergeTask, error) {
	if !req.Start.Before(req.End) {
		return nil, fmt.Errorf("%w: startTime must be before endTime", ErrInvalid)
	}
	if req.End.Sub(req.Start) > MaxCutMergeRange {
		return nil, fmt.Errorf("%w: the range is longer than %s", ErrInvalid, MaxCutMergeRange)
	}
	if req.CallbackURL != "" {
		if err := s.checkCallback(ctx, req.CallbackURL); err != nil {
			return nil, err
		}
	}
	ref := req.StreamRef
	filter := FileFilter{FileState: FileCompleted, MediaServerID: ref.MediaServerID, Start: &req.Start, End: &req.End, PageSize: MaxPageSize}
	switch {
	case ref.ChannelID != "":
		ch, err := s.Channels.Get(ctx, channels.ChannelID(ref.ChannelID))
		if errors.Is(err, channels.ErrNotFound) {
			return nil, fmt.Errorf("%w: %q", ErrNoChannel, ref.ChannelID)
		}
		if err != nil {
			return nil, err
		}
		filter.ChannelID = ref.ChannelID
		ref.Vhost, ref.App, ref.StreamID = ch.Vhost, ch.App, ch.Stream
	case ref.App != "" && ref.StreamID != "":
		filter.App, filter.StreamID = ref.App, ref.StreamID
		if ref.Vhost == "" {
			ref.Vhost = channels.DefaultVhost
		}
	default:
		return nil, fmt.Errorf("%w: name a channelId, or app and streamId", ErrInvalid)
	}
	var files []File
	for page := 1; ; page++ {
		filter.Page = page
		rows, total, err := s.Files(ctx, filter)
		if err != nil {
			return nil, err
		}
		files = append(files, rows...)
		if total > MaxCutMergeFiles {
			return nil, fmt.Errorf("%w: the range holds %d files, more than %d; cut it shorter", ErrInvalid, total, MaxCutMergeFiles)
		}
		if int64(len(files)) >= total || len(rows) == 0 {
			break
		}
	}
	servers := map[string]bool{}
	for _, f := range files {
		if f.Vhost == ref.Vhost {
			servers[f.MediaServerID] = true
		}
	}
	if len(servers) > 1 {
		return nil, fmt.Errorf("%w: the range's files lie on %d media servers; name mediaServerId to cut those of one", ErrInvalid, len(servers))
	}
	t := &CutMergeTask{TaskStatus: TaskPending, ChannelID: ref.ChannelID, MediaServerID: ref.MediaServerID, Vhost: ref.Vhost, App: ref.App,
		StreamID: ref.StreamID, StartTime: req.Start.UTC(), EndTime: req.End.UTC(), CallbackURL: req.CallbackURL, RequestedBy: who(actor)}
	for _, f := range files {
		if f.Vhost != ref.Vhost {
			continue
		}
		t.MediaServerID = f.MediaServerID
		sp := engineapi.CutMergeSpan{FileID: f.FileID, FromMs: max(req.Start.UnixMilli()-f.StartMs, 0)}
		if end := req.End.UnixMilli(); end < f.EndMs {
			sp.ToMs = end - f.StartMs
		}
		t.Spans = append(t.Spans, sp)
	}
	if len(t.Spans) == 0 {
		return nil, fmt.Errorf("%w: no Completed recording of %s/%s intersects the range", ErrNoRecordings, ref.App, ref.StreamID)
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, err
	}
	now := s.now()
	t.TaskID, t.CreatedAt, t.CreatedAtMs = id.String(), now, now.UnixMilli()
	b, err := json.Marshal(t)
	if err != nil {
		return nil, err
	}
	if _, err := s.Store.Txn(ctx, store.TxnRequest{Compares: []store.Compare{store.Absent(taskKey(t.TaskID))},
		Then: []store.Op{store.Put(taskKey(t.TaskID), b)}}); err != nil {
		return nil, err
	}
	s.wakeWorker()
	return t, nil
}

// checkCallback accepts an http(s) URL whose host may be a delivery
// target (the webhooks' guard against SSRF).
func (s *Service) checkCallback(ctx context.Context, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || len(raw) > 2048 {
		return fmt.Errorf("%w: callbackUrl must be an http or https URL without credentials", ErrInvalid)
	}
	if s.Callbacks != nil {
		if err := s.Callbacks.CheckHost(ctx, u.Hostname()); err != nil {
			return fmt.Errorf("%w: callbackUrl: %w", ErrInvalid, err)
		}
	}
	return nil
}

// CutMergeTaskByID reads a task.
func (s *Service) CutMergeTaskByID(ctx context.Context, id string) (*CutMergeTask, error) {
	if _, err := uuid.Parse(id); err != nil {
		return nil, fmt.Errorf("%w: %q", ErrTaskNotFound, id)
	}
	kv, _, err := store.Get(ctx, s.Store, taskKey(id), store.Local)
	if err != nil {
		return nil, err
	}
	if kv == nil {
		return nil, fmt.Errorf("%w: %q", ErrTaskNotFound, id)
	}
	return decodeTask(kv)
}

func decodeTask(kv *store.KeyValue) (*CutMergeTask, error) {
	t, err := store.Decode[CutMergeTask](kv)
	if err != nil {
		return nil, fmt.Errorf("stored cut/merge task %s: %w", kv.Key, err)
	}
	t.Revision = kv.ModRevision
	return &t, nil
}

// TaskFilter selects tasks; MainID is the channel (contract B's mainId).
type TaskFilter struct {
	MediaServerID, TaskStatus, MainID, App string
	Page, PageSize                         int
}

// CutMergeTasks lists one page of tasks, newest first, and the total.
func (s *Service) CutMergeTasks(ctx context.Context, f TaskFilter) ([]CutMergeTask, int64, error) {
	var where query.Where
	where.EqIfSet("media_server_id", f.MediaServerID)
	where.EqIfSet("task_status", f.TaskStatus)
	where.EqIfSet("channel_id", f.MainID)
	where.EqIfSet("app", f.App)
	return query.Page(ctx, s.Reader, query.Query{Index: TaskIndex.Name, Where: where, Order: []query.Order{query.Desc("created_at_ms")}},
		max(f.Page, 1), pageSize(f.PageSize), query.JSON[CutMergeTask])
}

// updateTask is a read-modify-write of a task; fn answers false to write
// nothing.
func (s *Service) updateTask(ctx context.Context, id string, fn func(t *CutMergeTask) (bool, error)) (*CutMergeTask, error) {
	var out *CutMergeTask
	_, err := store.Update(ctx, s.Store, taskKey(id), func(kv *store.KeyValue) ([]byte, []store.Op, []store.Compare, error) {
		if kv == nil {
			return nil, nil, nil, fmt.Errorf("%w: %q", ErrTaskNotFound, id)
		}
		t, err := decodeTask(kv)
		if err != nil {
			return nil, nil, nil, err
		}
		ok, err := fn(t)
		if err != nil {
			return nil, nil, nil, err
		}
		out = t
		if !ok {
			return nil, nil, nil, errNoChange
		}
		b, err := json.Marshal(t)
		return b, nil, nil, err
	})
	if errors.Is(err, errNoChange) {
		return out, nil
	}
	if errors.Is(err, store.ErrContended) {
		return nil, fmt.Errorf("%w: %w", ErrContended, err)
	}
	return out, err
}

// DeleteCutMerge removes a task that is not running; with deleteOutput
// its output file goes too (a media server that cannot be asked keeps the
// task, so the output is not orphaned).
func (s *Service) DeleteCutMerge(ctx context.Context, actor Actor, id string, deleteOutput bool) (*CutMergeTask, error) {
	t, err := s.CutMergeTaskByID(ctx, id)
	if err != nil {
		return nil, err
	}
	if !t.Terminal() {
		return nil, fmt.Errorf("%w: the task is %s; delete it once it ended", ErrTaskBusy, t.TaskStatus)
	}
	if deleteOutput && t.TaskStatus == TaskSucceeded && !t.OutputDeleted {
		var res engineapi.DeleteRecordFilesResult
		o, err := s.Engines.Do(ctx, mediaserver.Call{Target: mediaserver.Target{MediaServerID: t.MediaServerID}, Type: agentapi.TypeEngineRecordDelete,
			Payload: engineapi.DeleteRecordFilesRequest{FileIDs: []string{t.TaskID}}, Reason: "delete cut/merge output " + t.TaskID, Actor: actor,
			Wait: s.engineWait()}, &res)
		if err == nil && !o.Done {
			err = fmt.Errorf("media server %s did not answer in time; see node command %s", t.MediaServerID, o.Command.CommandID)
		}
		if err == nil && (len(res.Results) != 1 || (!res.Results[0].Deleted && res.Results[0].Code != engineapi.CodeFileNotFound)) {
			err = fmt.Errorf("media server %s could not delete the output", t.MediaServerID)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrEngine, err)
		}
		t.OutputDeleted = true
	}
	resp, err := s.Store.Txn(ctx, store.TxnRequest{Compares: []store.Compare{store.ModRevisionIs(taskKey(id), t.Revision)},
		Then: []store.Op{store.Delete(taskKey(id))}})
	if err != nil {
		return nil, err
	}
	if !resp.Succeeded {
		return nil, fmt.Errorf("%w: the task changed meanwhile", ErrContended)
	}
	return t, nil
}

// succeededTask reads a task whose output may be played now.
func (s *Service) succeededTask(ctx context.Context, id string) (*CutMergeTask, error) {
	t, err := s.CutMergeTaskByID(ctx, id)
	if err != nil {
		return nil, err
	}
	if t.TaskStatus != TaskSucceeded || t.OutputDeleted {
		why := "the task is " + t.TaskStatus
		if t.OutputDeleted {
			why = "the output was deleted"
		}
		return nil, fmt.Errorf("%w: %s", ErrOutputUnavailable, why)
	}
	return t, nil
}

// OutputLink issues a single-use playback or download link of a
// Succeeded task's output.
func (s *Service) OutputLink(ctx context.Context, c playback.Caller, taskID, action string, lifetimeSeconds *int) (*playback.IssuedLink, error) {
	t, err := s.succeededTask(ctx, taskID)
	if err != nil {
		return nil, err
	}
	return s.Playback.CreateMediaLink(ctx, c, playback.MediaLinkRequest{Kind: playback.KindCutMergeOutput, ResourceID: t.TaskID,
		MediaServerID: t.MediaServerID, Action: action, LifetimeSeconds: lifetimeSeconds})
}

// LeaseOutput leases a Succeeded task's output for playback.
func (s *Service) LeaseOutput(ctx context.Context, c playback.Caller, taskID string, req playback.LeaseRequest) (*playback.Lease, []playback.Source, error) {
	t, err := s.succeededTask(ctx, taskID)
	if err != nil {
		return nil, nil, err
	}
	return s.Playback.CreateRecordingLease(ctx, c, playback.RecordingLease{Kind: playback.KindCutMergeOutput, FileID: t.TaskID,
		MediaServerID: t.MediaServerID}, req)
}

// OutputURL is the URL this control node reads a Succeeded task's output
// through from its engine.
func (s *Service) OutputURL(ctx context.Context, taskID, action string) (string, error) {
	t, err := s.succeededTask(ctx, taskID)
	if err != nil {
		return "", err
	}
	return s.Playback.SystemRecordedURL(ctx, playback.KindCutMergeOutput, t.TaskID, t.MediaServerID, action)
}
