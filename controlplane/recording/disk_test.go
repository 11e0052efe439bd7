package recording

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/mediaserver"
	"github.com/svcplatform/svc/controlplane/nodes"
	"github.com/svcplatform/svc/shared/agentapi"
	"github.com/svcplatform/svc/shared/engineapi"
)

type nodeList []*nodes.Record

func (l nodeList) List(context.Context) ([]*nodes.Record, error) { return l, nil }

// volumeEngine answers the recording list of media-1 with a volume and
// fails media-2 as an offline agent does. The engine's side (statfs,
// watermarks, retention on a real tmpfs) is under test in the recorder.
type volumeEngine struct{ vol engineapi.RecordingVolume }

func (e *volumeEngine) Do(_ context.Context, c mediaserver.Call, out any) (mediaserver.Outcome, error) {
	if c.Type != agentapi.TypeEngineRecordList || !c.Read {
		return mediaserver.Outcome{}, errors.New("unexpected " + c.Type)
	}
	if c.NodeID != "media-1" {
		return mediaserver.Outcome{}, errors.New("the agent of " + c.NodeID + " is offline")
	}
	v := e.vol
	out.(*engineapi.RecordingList).Volume = &v
	return mediaserver.Outcome{Node: &nodes.Record{NodeID: "media-1", MediaServerID: "media-1"}, Done: true}, nil
}

// TestDiskStatesMarkPruned: the disk states list every enrolled,
// unretired host (one that cannot be asked as Unknown with the reason);
// the files the engine's retention pruned become Deleted tombstones
// (a restore then says the bytes are gone), a soft-deleted one too, ids
// the index never had are ignored, and a second read changes nothing.
func TestDiskStatesMarkPruned(t *testing.T) {
	s := newService(t)
	ctx := context.Background()
	base := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	var ids []string
	for i := range 3 {
		f, _, err := s.FileCompleted(ctx, "media-1", "media-1", report(base.Add(time.Duration(i)*10*time.Second), 10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, f.FileID)
	}
	if res, err := s.SoftDelete(ctx, Actor{}, ids[1:2]); err != nil || !res[0].Success {
		t.Fatalf("soft delete: %+v %v", res, err)
	}
	checked := time.Now().UTC()
	s.Engines = &volumeEngine{vol: engineapi.RecordingVolume{Root: "/var/lib/svc/recordings",
		FilesystemID: "fs-1", TotalBytes: 8 << 20, FreeBytes: 3 << 20, State: engineapi.VolumeLowSpace,
		LowSpaceBytes: 4 << 20, FullBytes: 1 << 20, Retention: true, CheckedAt: checked,
		PrunedFileIDs: []string{ids[0], ids[1], "01a20000-0000-7000-8000-000000000000"}}}
	s.Nodes = nodeList{{NodeID: "media-1", MediaServerID: "media-1", Status: nodes.StatusOnline},
		{NodeID: "media-2", MediaServerID: "media-2", Status: nodes.StatusOffline},
		{NodeID: "media-3", MediaServerID: "media-3", Status: nodes.StatusRetired}}
	for range 2 {
		states, err := s.DiskStates(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(states) != 2 {
			t.Fatalf("states of %d hosts, want media-1 and media-2: %+v", len(states), states)
		}
		if d := states[0]; d.NodeID != "media-1" || d.State != VolumeLowSpace || d.FilesystemID != "fs-1" || d.Path != "/var/lib/svc/recordings" || d.FreeBytes != 3<<20 ||
			d.PrunedFiles != 3 || !d.Retention || d.CheckedAt == nil || !d.CheckedAt.Equal(checked) || d.Error != "" {
			t.Fatalf("media-1: %+v", d)
		}
		if d := states[1]; d.NodeID != "media-2" || d.State != VolumeUnknown || d.Error == "" || d.TotalBytes != 0 {
			t.Fatalf("media-2: %+v", d)
		}
		for i, want := range []string{FileDeleted, FileDeleted, FileCompleted} {
			f, err := s.File(ctx, ids[i])
			if err != nil || f.FileState != want || (want == FileDeleted) != (f.DeletedAt != nil) {
				t.Fatalf("file %d: %+v %v, want %s", i, f, err, want)
			}
		}
	}
	res, err := s.Restore(ctx, Actor{}, ids[:1])
	if err != nil || res[0].Success {
		t.Fatalf("restore of a pruned file: %+v %v", res, err)
	}
}
