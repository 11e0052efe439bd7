package recording

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/mediaserver"
	"github.com/svcplatform/svc/controlplane/store/query"
	"github.com/svcplatform/svc/shared/agentapi"
	"github.com/svcplatform/svc/shared/engineapi"
)

// FileMissing is the state of an indexed file a scan did not find on its
// media server's disk (the disk was swapped or unmounted, or the file was
// removed by hand). Unlike Deleted it is not final: a scan that finds the
// file again makes it Completed.
const FileMissing = "Missing"

// IndexFromScan is the indexSource of a file a scan found on disk before
// (or instead of) its on_record_mp4.
const IndexFromScan = "scan"

// MaxScanListed bounds each id list of a ScanResult; the counts are whole.
const MaxScanListed = 1000

// ScanRequest asks for one media server's recording root to be scanned;
// App and StreamID narrow the reconciliation to one app or stream.
type ScanRequest struct {
	MediaServerID string `json:"mediaServerId"`
	App           string `json:"app,omitempty"`
	StreamID      string `json:"streamId,omitempty"`
}

// ScanResult is what a scan found and changed in the index.
type ScanResult struct {
	MediaServerID string    `json:"mediaServerId"`
	NodeID        string    `json:"nodeId"`
	ScannedAt     time.Time `json:"scannedAt"`
	// FilesOnDisk counts the finished recordings on the root (in scope).
	FilesOnDisk int `json:"filesOnDisk"`
	// Indexed: on disk but unknown to the index, now Completed;
	// Recovered: Missing in the index and on disk again, now Completed;
	// Missing: indexed (Completed or SoftDeleted) but not on disk, now
	// Missing. Each lists at most MaxScanListed ids; the counts are whole.
	Indexed        []string `json:"indexed"`
	IndexedCount   int      `json:"indexedCount"`
	Recovered      []string `json:"recovered"`
	RecoveredCount int      `json:"recoveredCount"`
	Missing        []string `json:"missing"`
	MissingCount   int      `json:"missingCount"`
	// Relocated: indexed files found on the other root (primary or
	// fallback) than the index said; their fallback flag now follows the
	// disk.
	Relocated      []string `json:"relocated"`
	RelocatedCount int      `json:"relocatedCount"`
	Unchanged      int      `json:"unchanged"`
	// Repaired counts files a crash had left open that the engine
	// repaired during the scan; Unreadable files it could not read.
	Repaired   int `json:"repaired"`
	Unreadable int `json:"unreadable"`
}

func (r *ScanResult) note(list *[]string, count *int, id string) {
	*count++
	if len(*list) < MaxScanListed {
		*list = append(*list, id)
	}
}

// Scan has a media server's engine walk its recording roots again (the
// primary and the fallback root) and reconciles the index with what is
// there: files on disk the index lacks are indexed (and announced with
// recording.file.completed, once, like any file), Missing files found
// again become Completed, Completed or SoftDeleted files the disk no
// longer holds become Missing, and a file's fallback flag follows the
// root it was found on. Files indexed after the scan began are left alone
// (the engine may have finished them after it listed the disk).
func (s *Service) Scan(ctx context.Context, actor audit.Actor, req ScanRequest) (*ScanResult, error) {
	if req.MediaServerID == "" {
		return nil, fmt.Errorf("%w: mediaServerId is required", ErrInvalid)
	}
	if req.App != "" && !nameOK(req.App) || req.StreamID != "" && !nameOK(req.StreamID) {
		return nil, fmt.Errorf("%w: app and streamId must be plain names", ErrInvalid)
	}
	began := s.now()
	var disk engineapi.RecordFileScanResult
	o, err := s.Engines.Do(ctx, mediaserver.Call{Target: mediaserver.Target{MediaServerID: req.MediaServerID}, Type: agentapi.TypeEngineRecordScan,
		Reason: "scan the recording root", Actor: actor, Wait: s.engineWait()}, &disk)
	if err != nil {
		return nil, err
	}
	if !o.Done {
		return nil, fmt.Errorf("%w: media server %s did not finish the scan in time; see node command %s", ErrEngine, req.MediaServerID, o.Command.CommandID)
	}
	res := &ScanResult{MediaServerID: req.MediaServerID, NodeID: o.Node.NodeID, ScannedAt: began, Indexed: []string{}, Recovered: []string{},
		Missing: []string{}, Relocated: []string{}, Repaired: disk.Repaired, Unreadable: disk.Unreadable}
	inScope := func(app, stream string) bool {
		return (req.App == "" || app == req.App) && (req.StreamID == "" || stream == req.StreamID)
	}
	onDisk := map[string]bool{}
	for _, h := range disk.Files {
		if !inScope(h.App, h.Stream) {
			continue
		}
		res.FilesOnDisk++
		onDisk[h.FileID] = true
		f, err := s.File(ctx, h.FileID)
		switch {
		case errors.Is(err, ErrNotFound):
			if _, created, err := s.indexFile(ctx, req.MediaServerID, o.Node.NodeID, h, IndexFromScan); err != nil {
				return nil, err
			} else if created {
				res.note(&res.Indexed, &res.IndexedCount, h.FileID)
			} else {
				res.Unchanged++
			}
		case err != nil:
			return nil, err
		case f.FileState == FileMissing:
			r := s.changeFile(ctx, h.FileID, func(f *File) (*ItemResult, error) {
				if f.FileState == FileMissing {
					f.FileState = FileCompleted
				}
				f.Fallback = h.Fallback
				return nil, nil
			})
			if !r.Success {
				return nil, errors.New("recording: scan: " + r.Message)
			}
			res.note(&res.Recovered, &res.RecoveredCount, h.FileID)
		case f.Fallback != h.Fallback:
			// Found on the other root than the index says (moved by hand,
			// or a recovery whose report was lost): the index follows the
			// disk.
			r := s.changeFile(ctx, h.FileID, func(f *File) (*ItemResult, error) {
				f.Fallback = h.Fallback
				return nil, nil
			})
			if !r.Success {
				return nil, errors.New("recording: scan: " + r.Message)
			}
			res.note(&res.Relocated, &res.RelocatedCount, h.FileID)
		default:
			res.Unchanged++
		}
	}
	var where query.Where
	where.Add(query.Eq("media_server_id", req.MediaServerID), query.In("file_state", FileCompleted, FileSoftDeleted))
	where.EqIfSet("app", req.App)
	where.EqIfSet("stream_id", req.StreamID)
	indexed, err := query.All(ctx, s.Reader, query.Query{Index: FileIndex.Name, Where: where}, query.JSON[File])
	if err != nil {
		return nil, err
	}
	for _, f := range indexed {
		if onDisk[f.FileID] || !f.IndexedAt.Before(began) {
			continue
		}
		r := s.changeFile(ctx, f.FileID, func(f *File) (*ItemResult, error) {
			if f.FileState == FileCompleted || f.FileState == FileSoftDeleted {
				f.FileState = FileMissing
			}
			return nil, nil
		})
		if !r.Success {
			return nil, errors.New("recording: scan: " + r.Message)
		}
		res.note(&res.Missing, &res.MissingCount, f.FileID)
	}
	return res, nil
}
