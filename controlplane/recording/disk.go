package recording

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/controlplane/mediaserver"
	"github.com/svcplatform/svc/controlplane/nodes"
	"github.com/svcplatform/svc/shared/agentapi"
	"github.com/svcplatform/svc/shared/engineapi"
)

// Volume states (the engine's, and Unknown when it cannot be asked).
const (
	VolumeNormal   = engineapi.VolumeNormal
	VolumeLowSpace = engineapi.VolumeLowSpace
	VolumeFull     = engineapi.VolumeFull
	VolumeUnknown  = "Unknown"
	VolumeMismatch = engineapi.VolumeMismatch
	VolumeMissing  = engineapi.VolumeMissing
	VolumeReadOnly = engineapi.VolumeReadOnly
)

// nodeLister lists the media hosts whose disks are reported.
type nodeLister interface {
	List(ctx context.Context) ([]*nodes.Record, error)
}

// DiskState is one media server's recording volume as its engine reads it
// now. Without an answer State is Unknown and Error says why.
type DiskState struct {
	NodeID        string `json:"nodeId"`
	MediaServerID string `json:"mediaServerId"`
	State         string `json:"state"`
	// Path is the recording root directory on the media host.
	Path         string `json:"path,omitempty"`
	FilesystemID string `json:"filesystemId,omitempty"`
	// IdentityID is the disk identity the engine's root is bound to (by
	// validate-root; empty while Unbound), BoundFilesystemID the
	// filesystem it was bound on, FoundIdentityID the marker the root
	// holds now when another, and IdentityState Verified, Unbound or why
	// not (Mismatch, Missing, ReadOnly).
	IdentityID        string     `json:"identityId,omitempty"`
	BoundFilesystemID string     `json:"boundFilesystemId,omitempty"`
	FoundIdentityID   string     `json:"foundIdentityId,omitempty"`
	IdentityState     string     `json:"identityState,omitempty"`
	TotalBytes        int64      `json:"totalBytes"`
	FreeBytes         int64      `json:"freeBytes"`
	LowSpaceBytes     int64      `json:"lowSpaceBytes"`
	FullBytes         int64      `json:"fullBytes"`
	Retention         bool       `json:"retention"`
	MaxAgeSeconds     int64      `json:"maxAgeSeconds"`
	RefusedFiles      int64      `json:"refusedFiles"`
	PrunedFiles       int        `json:"prunedFiles"`
	CheckedAt         *time.Time `json:"checkedAt,omitempty"`
	Error             string     `json:"error,omitempty"`
	// FallbackRoot is the engine's fallback root when configured,
	// FallbackState its identity state and FallbackFiles the files on it.
	FallbackRoot  string `json:"fallbackRoot,omitempty"`
	FallbackState string `json:"fallbackState,omitempty"`
	FallbackFiles int    `json:"fallbackFiles,omitempty"`
}

func diskStateOf(rec *nodes.Record, v *engineapi.RecordingVolume) DiskState {
	d := DiskState{NodeID: rec.NodeID, MediaServerID: rec.MediaServerID, State: VolumeUnknown}
	if v == nil {
		d.Error = "the engine did not report its recording volume"
		return d
	}
	at := v.CheckedAt
	d.State, d.FilesystemID, d.TotalBytes, d.FreeBytes = v.State, v.FilesystemID, v.TotalBytes, v.FreeBytes
	d.LowSpaceBytes, d.FullBytes, d.Retention, d.RefusedFiles, d.PrunedFiles = v.LowSpaceBytes, v.FullBytes, v.Retention, v.Refused, len(v.PrunedFileIDs)
	d.MaxAgeSeconds, d.Path = v.MaxAgeSeconds, v.Root
	d.IdentityID, d.FoundIdentityID, d.IdentityState, d.BoundFilesystemID = v.IdentityID, v.FoundIdentityID, v.IdentityState, v.BoundFilesystemID
	d.FallbackRoot, d.FallbackState, d.FallbackFiles = v.FallbackRoot, v.FallbackState, v.FallbackFiles
	d.CheckedAt = &at
	return d
}

// RunDiskSweep reads every media host's recording volume each interval
// until ctx ends (the leader's loop), so that the files the engines'
// retention deleted (by age or by the low watermark) become Deleted in
// the index without anyone asking for the disk states.
func (s *Service) RunDiskSweep(ctx context.Context, interval time.Duration, log *zap.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := s.DiskStates(ctx); err != nil && ctx.Err() == nil {
			log.Warn("recording disk sweep", zap.Error(err))
		}
	}
}

// DiskStates asks every enrolled, unretired media host's engine for its
// recording volume (one at a time, each bounded by the engine wait); a
// host that cannot be asked is listed Unknown with the reason. Files the
// engines' retention pruned are marked Deleted on the way.
func (s *Service) DiskStates(ctx context.Context) ([]DiskState, error) {
	if s.Nodes == nil {
		return nil, errors.New("recording: no node registry")
	}
	all, err := s.Nodes.List(ctx)
	if err != nil {
		return nil, err
	}
	out := []DiskState{}
	for _, rec := range all {
		if rec.Status == nodes.StatusRetired || rec.Status == nodes.StatusPending {
			continue
		}
		var list engineapi.RecordingList
		_, err := s.Engines.Do(ctx, mediaserver.Call{Target: mediaserver.Target{NodeID: rec.NodeID}, Type: agentapi.TypeEngineRecordList,
			Reason: "recording disk states", Actor: autoActor, Read: true}, &list)
		if err != nil {
			out = append(out, DiskState{NodeID: rec.NodeID, MediaServerID: rec.MediaServerID, State: VolumeUnknown, Error: err.Error()})
			continue
		}
		if err := s.markPruned(ctx, list.Volume); err != nil {
			return nil, err
		}
		out = append(out, diskStateOf(rec, list.Volume))
	}
	return out, nil
}

// markPruned turns the files an engine's retention deleted into Deleted
// tombstones (a restore then answers that the bytes are gone), so the
// index never lists a file its disk no longer has. Files already Deleted,
// and ids the index never had, are left alone.
func (s *Service) markPruned(ctx context.Context, v *engineapi.RecordingVolume) error {
	if v == nil {
		return nil
	}
	now := s.now()
	for _, id := range v.PrunedFileIDs {
		f, err := s.File(ctx, id)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if f.FileState == FileDeleted {
			continue
		}
		res := s.changeFile(ctx, id, func(f *File) (*ItemResult, error) {
			f.FileState, f.DeletedAt = FileDeleted, &now
			return nil, nil
		})
		if !res.Success && res.Code != CodeNotFound {
			return errors.New("recording: marking a pruned file: " + res.Message)
		}
	}
	return nil
}
