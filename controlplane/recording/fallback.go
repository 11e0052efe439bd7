package recording

import (
	"context"
	"fmt"

	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/mediaserver"
	"github.com/svcplatform/svc/controlplane/store/query"
	"github.com/svcplatform/svc/shared/agentapi"
	"github.com/svcplatform/svc/shared/engineapi"
)

// FallbackFiles lists the indexed files that lie on a fallback root and
// await recovery (Deleted tombstones aside), oldest media first, at most
// limit (default 100, at most MaxPageSize), and how many there are.
func (s *Service) FallbackFiles(ctx context.Context, mediaServerID string, limit int) ([]File, int64, error) {
	if limit < 0 || limit > MaxPageSize {
		return nil, 0, fmt.Errorf("%w: limit must be within [1, %d]", ErrInvalidQuery, MaxPageSize)
	}
	if limit == 0 {
		limit = 100
	}
	var where query.Where
	where.Add(query.Eq("fallback", true), query.Ne("file_state", FileDeleted))
	where.EqIfSet("media_server_id", mediaServerID)
	return query.Page(ctx, s.Reader, query.Query{Index: FileIndex.Name, Where: where, Order: []query.Order{query.Asc("start_ms")}},
		1, limit, query.JSON[File])
}

// FallbackRecovery is a preview or run of fallback recovery on one media
// server: the engine's answer per file, with the host named.
type FallbackRecovery struct {
	MediaServerID string `json:"mediaServerId"`
	NodeID        string `json:"nodeId"`
	DryRun        bool   `json:"dryRun"`
	// PrimaryState is the primary root's identity state (Verified, or
	// why it cannot take files back now).
	PrimaryState string                           `json:"primaryState"`
	Moved        int                              `json:"moved"`
	Items        []engineapi.FallbackRecoveryItem `json:"items"`
}

// RecoverFallback previews (dryRun) or moves files from a media server's
// fallback root back to its primary root through its agent (node command
// engine.record.fallback-recover): the named files, or every file on the
// fallback when ids is empty. Each moved file (or one found already on
// the primary, moved by an earlier run whose answer was lost) is then
// indexed on the primary; its fileId does not change. ids must be files
// of that media server.
func (s *Service) RecoverFallback(ctx context.Context, actor audit.Actor, mediaServerID string, ids []string, dryRun bool) (*FallbackRecovery, error) {
	if mediaServerID == "" {
		return nil, fmt.Errorf("%w: mediaServerId is required", ErrInvalid)
	}
	if len(ids) > 0 {
		if err := checkBatch(ids); err != nil {
			return nil, err
		}
		for _, id := range ids {
			f, err := s.File(ctx, id)
			if err != nil {
				return nil, err
			}
			if f.MediaServerID != mediaServerID {
				return nil, fmt.Errorf("%w: file %s is not on media server %s", ErrInvalid, id, mediaServerID)
			}
		}
	}
	reason := "recover fallback recording files"
	if dryRun {
		reason = "preview fallback recording recovery"
	}
	var res engineapi.FallbackRecoveryResult
	o, err := s.Engines.Do(ctx, mediaserver.Call{Target: mediaserver.Target{MediaServerID: mediaServerID}, Type: agentapi.TypeEngineRecordFallbackRecover,
		Payload: engineapi.FallbackRecoveryRequest{FileIDs: ids, DryRun: dryRun}, Reason: reason, Actor: actor, Read: dryRun, Wait: s.engineWait()}, &res)
	if err != nil {
		return nil, err
	}
	if !o.Done {
		return nil, fmt.Errorf("%w: media server %s did not answer in time; see node command %s", ErrEngine, mediaServerID, o.Command.CommandID)
	}
	out := &FallbackRecovery{MediaServerID: mediaServerID, NodeID: o.Node.NodeID, DryRun: dryRun, PrimaryState: res.PrimaryState,
		Items: res.Items}
	if out.Items == nil {
		out.Items = []engineapi.FallbackRecoveryItem{}
	}
	for _, it := range res.Items {
		if it.Result == engineapi.RecoveryMoved {
			out.Moved++
		}
		if dryRun || it.Result != engineapi.RecoveryMoved && it.Result != engineapi.RecoveryOnPrimary {
			continue
		}
		if f, err := s.File(ctx, it.FileID); err != nil || !f.Fallback {
			continue // not indexed (yet: its report will say where it lies), or indexed on the primary already
		}
		if r := s.changeFile(ctx, it.FileID, func(f *File) (*ItemResult, error) {
			f.Fallback = false
			return nil, nil
		}); !r.Success && r.Code != CodeNotFound {
			return nil, fmt.Errorf("recording: indexing %s on the primary root: %s", it.FileID, r.Message)
		}
	}
	return out, nil
}
