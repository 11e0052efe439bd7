package recording

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/mediaserver"
	"github.com/svcplatform/svc/controlplane/playback"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/shared/agentapi"
	"github.com/svcplatform/svc/shared/engineapi"
)

// MaxBatch bounds the file ids of one batch request.
const MaxBatch = 100

// Per-item failure codes of batch requests.
const (
	CodeNotFound  = "not_found"
	CodeGone      = "recording_file_gone"
	CodeEngine    = "agent_unavailable"
	CodeEngineErr = "agent_command_failed"
)

// ItemResult is one file's outcome in a batch.
type ItemResult struct {
	FileID    string `json:"fileId"`
	Success   bool   `json:"success"`
	FileState string `json:"fileState,omitempty"`
	Code      string `json:"code,omitempty"`
	Message   string `json:"message,omitempty"`
}

// checkBatch refuses an empty, oversized or repeating list: each id is
// then processed on its own.
func checkBatch(ids []string) error {
	if len(ids) == 0 || len(ids) > MaxBatch {
		return fmt.Errorf("%w: fileIds must hold 1-%d ids, not %d", ErrInvalid, MaxBatch, len(ids))
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			return fmt.Errorf("%w: fileIds names %q twice", ErrInvalid, id)
		}
		seen[id] = true
	}
	return nil
}

// changeFile is a read-modify-write of one file's index entry; fn answers
// the next state or an item failure.
func (s *Service) changeFile(ctx context.Context, id string, fn func(f *File) (*ItemResult, error)) ItemResult {
	res := ItemResult{FileID: id}
	if _, err := uuid.Parse(id); err != nil {
		res.Code, res.Message = CodeNotFound, "no such recording file"
		return res
	}
	_, err := store.Update(ctx, s.Store, fileKey(id), func(kv *store.KeyValue) ([]byte, []store.Op, []store.Compare, error) {
		if kv == nil {
			return nil, nil, nil, errNoFile
		}
		f, err := store.Decode[File](kv)
		if err != nil {
			return nil, nil, nil, err
		}
		fail, err := fn(&f)
		if err != nil || fail != nil {
			if fail != nil {
				res = *fail
			}
			return nil, nil, nil, errItem
		}
		res.Success, res.FileState = true, f.FileState
		b, err := json.Marshal(&f)
		return b, nil, nil, err
	})
	switch {
	case errors.Is(err, errNoFile):
		res.Code, res.Message = CodeNotFound, "no such recording file"
	case errors.Is(err, errItem):
	case err != nil:
		res.Success, res.Code, res.Message = false, "internal", err.Error()
	}
	return res
}

var (
	errNoFile = errors.New("recording: no such file")
	errItem   = errors.New("recording: item refused")
)

// SoftDelete hides files: they leave playback (their leases stop
// admitting players) but keep their bytes and can be restored.
func (s *Service) SoftDelete(ctx context.Context, actor audit.Actor, ids []string) ([]ItemResult, error) {
	if err := checkBatch(ids); err != nil {
		return nil, err
	}
	now := s.now()
	out := make([]ItemResult, 0, len(ids))
	for _, id := range ids {
		out = append(out, s.changeFile(ctx, id, func(f *File) (*ItemResult, error) {
			switch f.FileState {
			case FileDeleted:
				return &ItemResult{FileID: id, FileState: f.FileState, Code: CodeGone, Message: "the file was hard-deleted; its bytes are gone"}, nil
			case FileCompleted:
				f.FileState, f.DeletedAt = FileSoftDeleted, &now
			}
			return nil, nil
		}))
	}
	return out, nil
}

// Restore brings soft-deleted files back; a hard-deleted file cannot be
// restored, its bytes are gone.
func (s *Service) Restore(ctx context.Context, actor audit.Actor, ids []string) ([]ItemResult, error) {
	if err := checkBatch(ids); err != nil {
		return nil, err
	}
	out := make([]ItemResult, 0, len(ids))
	for _, id := range ids {
		out = append(out, s.changeFile(ctx, id, func(f *File) (*ItemResult, error) {
			switch f.FileState {
			case FileDeleted:
				return &ItemResult{FileID: id, FileState: f.FileState, Code: CodeGone,
					Message: "cannot restore: the file was hard-deleted and its bytes were cleaned up"}, nil
			case FileSoftDeleted:
				f.FileState, f.DeletedAt = FileCompleted, nil
			case FileMissing:
				return &ItemResult{FileID: id, FileState: f.FileState, Code: CodeGone,
					Message: "cannot restore: the file is missing from its media server's disk (a scan makes it Completed once it is back)"}, nil
			}
			return nil, nil
		}))
	}
	return out, nil
}

// HardDelete removes files' bytes on their media servers and keeps their
// index entries as Deleted tombstones (so a restore can say the bytes are
// gone). A media server that cannot be asked leaves its files as they
// were, reported per file.
func (s *Service) HardDelete(ctx context.Context, actor audit.Actor, ids []string) ([]ItemResult, error) {
	if err := checkBatch(ids); err != nil {
		return nil, err
	}
	out := make([]ItemResult, len(ids))
	byServer := map[string][]int{}
	for i, id := range ids {
		out[i] = ItemResult{FileID: id}
		f, err := s.File(ctx, id)
		switch {
		case errors.Is(err, ErrNotFound):
			out[i].Code, out[i].Message = CodeNotFound, "no such recording file"
		case err != nil:
			return nil, err
		case f.FileState == FileDeleted:
			out[i].Success, out[i].FileState = true, FileDeleted
		default:
			byServer[f.MediaServerID] = append(byServer[f.MediaServerID], i)
		}
	}
	now := s.now()
	for server, idx := range byServer {
		req := engineapi.DeleteRecordFilesRequest{}
		for _, i := range idx {
			req.FileIDs = append(req.FileIDs, ids[i])
		}
		var res engineapi.DeleteRecordFilesResult
		o, err := s.Engines.Do(ctx, mediaserver.Call{Target: mediaserver.Target{MediaServerID: server}, Type: agentapi.TypeEngineRecordDelete,
			Payload: req, Reason: fmt.Sprintf("hard-delete %d recording files", len(req.FileIDs)), Actor: actor, Wait: s.engineWait()}, &res)
		if err == nil && !o.Done {
			err = fmt.Errorf("media server %s did not answer in time; see node command %s", server, o.Command.CommandID)
		}
		gone := map[string]bool{}
		for _, r := range res.Results {
			gone[r.FileID] = r.Deleted || r.Code == engineapi.CodeFileNotFound
		}
		for _, i := range idx {
			id := ids[i]
			if err != nil || !gone[id] {
				out[i].Code, out[i].Message = CodeEngine, fmt.Sprintf("media server %s could not delete it: %v", server, err)
				if err == nil {
					out[i].Code, out[i].Message = CodeEngineErr, "the media server could not delete it"
				}
				continue
			}
			out[i] = s.changeFile(ctx, id, func(f *File) (*ItemResult, error) {
				f.FileState, f.DeletedAt = FileDeleted, &now
				return nil, nil
			})
		}
	}
	return out, nil
}

// Playable is the playback package's ResourceCheck: a recording-file
// lease plays while its file is Completed, a cut-merge-output lease while
// its task is Succeeded and its output kept.
func (s *Service) Playable(ctx context.Context, kind playback.ResourceKind, id string) (bool, string, error) {
	switch kind {
	case playback.KindCutMergeOutput:
		_, err := s.succeededTask(ctx, id)
		switch {
		case errors.Is(err, ErrTaskNotFound):
			return false, "the cut/merge task does not exist", nil
		case errors.Is(err, ErrOutputUnavailable):
			return false, err.Error(), nil
		case err != nil:
			return false, "", err
		}
		return true, "", nil
	case playback.KindRecordingFile:
	default:
		return false, "this version cannot play " + string(kind) + " resources", nil
	}
	f, err := s.File(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return false, "the recording file does not exist", nil
	}
	if err != nil {
		return false, "", err
	}
	if f.FileState != FileCompleted {
		return false, "the recording file is " + f.FileState, nil
	}
	return true, "", nil
}

// LeaseFile leases a Completed file to the calling token for playback.
func (s *Service) LeaseFile(ctx context.Context, c playback.Caller, fileID string, req playback.LeaseRequest) (*playback.Lease, []playback.Source, error) {
	f, err := s.playableFile(ctx, fileID)
	if err != nil {
		return nil, nil, err
	}
	return s.Playback.CreateRecordingLease(ctx, c, playback.RecordingLease{FileID: f.FileID, MediaServerID: f.MediaServerID}, req)
}

// playableFile reads a file that may be played or downloaded now.
func (s *Service) playableFile(ctx context.Context, fileID string) (*File, error) {
	f, err := s.File(ctx, fileID)
	if err != nil {
		return nil, err
	}
	if f.FileState != FileCompleted {
		return nil, fmt.Errorf("%w: the file is %s", ErrFileUnavailable, f.FileState)
	}
	return f, nil
}

// FileLink issues a single-use playback or download link (action
// playback.ActionPlay or ActionDownload) to a Completed file.
func (s *Service) FileLink(ctx context.Context, c playback.Caller, fileID, action string, lifetimeSeconds *int) (*playback.IssuedLink, error) {
	f, err := s.playableFile(ctx, fileID)
	if err != nil {
		return nil, err
	}
	return s.Playback.CreateMediaLink(ctx, c, playback.MediaLinkRequest{Kind: playback.KindRecordingFile, ResourceID: f.FileID,
		MediaServerID: f.MediaServerID, Action: action, LifetimeSeconds: lifetimeSeconds})
}

// FileURL is the URL this control node reads a Completed file through from
// the engine that owns it, for a caller the HTTP boundary authenticated
// and found holding the action's permission.
func (s *Service) FileURL(ctx context.Context, fileID, action string) (*File, string, error) {
	f, err := s.playableFile(ctx, fileID)
	if err != nil {
		return nil, "", err
	}
	u, err := s.Playback.SystemRecordedURL(ctx, playback.KindRecordingFile, f.FileID, f.MediaServerID, action)
	return f, u, err
}
