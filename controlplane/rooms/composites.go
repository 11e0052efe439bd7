package rooms

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/svcplatform/svc/controlplane/fault"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/query"
)

// Composites are made after the meeting, on the media server that holds
// its track files: one member copy per participant (their audio and
// video in one MP4) and the full-meeting MP4 (every participant's picture
// in a grid, their sound mixed), each file placed at its offset from the
// recording's origin so muted and disconnected periods stay as real gaps.
// The recording's stop plans them (Pending) in the Txn that marks it
// planned; the leader's worker renders them (Running, then Available or
// Failed); a retry puts a Failed one back to Pending while the original
// tracks still exist. They are read as files of the recording (by their
// id) and come with the package.

// Composite states (contract B).
const (
	CompositePending   = "Pending"
	CompositeRunning   = "Running"
	CompositeFailed    = "Failed"
	CompositeAvailable = "Available"
)

// Composite kinds.
const (
	CompositeMember  = "member"
	CompositeMeeting = "meeting"
)

const compositesPrefix = "/rtc/composites/"

func compositeKey(room RoomID, recordingID, id string) string {
	return compositesPrefix + string(room) + "/" + recordingID + "/" + id
}

// CompositeIndex lets the worker find the composites to render.
var CompositeIndex = query.Index{Name: "rtc_composites", Prefix: compositesPrefix, Columns: []query.Column{
	{Name: "state", Type: query.Text, Path: "$.state"},
	{Name: "composite_id", Type: query.Text, Path: "$.compositeId"},
	{Name: "created_ms", Type: query.Integer, Path: "$.createdMs", NoIndex: true},
}}

// Errors of composites.
var (
	// ErrCompositeNotFound is an unknown composite of the recording (404).
	ErrCompositeNotFound = fault.New(fault.NotFound, "not_found", "rooms: no such composite")
	// ErrCompositeNotFailed is a retry of a composite that has not
	// Failed (409).
	ErrCompositeNotFailed = fault.New(fault.Conflict, "composite_not_failed", "rooms: only a Failed composite is retried")
	// ErrComposeRefused is what a Composer answers when the media server
	// cannot make the composite from these files (it then Fails).
	ErrComposeRefused = fault.New(fault.Conflict, "composite_refused", "rooms: the media server cannot make the composite")
)

// maxCompositeAttempts bounds the tries of a composite whose media server
// cannot be asked; a refusal fails it at once.
const maxCompositeAttempts = 5

// ComposeFile is one track file placed in a lane.
type ComposeFile struct {
	FileID   string
	OffsetMs int64
	Video    bool
	Audio    bool
}

// ComposeRequest is one composite to render: its lanes (one per
// participant) over DurationMs.
type ComposeRequest struct {
	CompositeID string
	DurationMs  int64
	Lanes       [][]ComposeFile
}

// Composer renders composites on a media server and answers where one is
// read from for an action (play or download).
type Composer interface {
	// Compose answers done false while the media server still renders
	// (asking again joins the render), an error wrapping
	// ErrComposeRefused when it cannot make it.
	Compose(ctx context.Context, mediaServerID string, req ComposeRequest) (done bool, size int64, err error)
	CompositeURL(ctx context.Context, mediaServerID, compositeID, action string) (string, error)
}

// Composite is one member copy or the full-meeting MP4 of a recording.
type Composite struct {
	CompositeID string `json:"compositeId"`
	RoomID      RoomID `json:"roomId"`
	RecordingID string `json:"recordingId"`
	Kind        string `json:"kind"`
	// ParticipantID is a member copy's participant.
	ParticipantID ParticipantID `json:"participantId,omitempty"`
	State         string        `json:"state"`
	Attempts      int           `json:"attempts"`
	LastError     string        `json:"lastError,omitempty"`
	FileSize      int64         `json:"fileSize,omitempty"`
	DurationMs    int64         `json:"durationMs"`
	CreatedAt     time.Time     `json:"createdAtUtc"`
	CreatedMs     int64         `json:"createdMs"`
	CompletedAt   *time.Time    `json:"completedAtUtc,omitempty"`
}

// planComposites plans a Stopped recording's composites once: a member
// copy per recorded participant and, with any participant, the full
// meeting. It is idempotent (the plan and the recording's mark are one
// Txn, compared on the recording's revision), so the stop, a repeated
// stop and the composite worker may all call it.
func (s *Service) planComposites(ctx context.Context, id RoomID, recordingID string) error {
	for attempt := 0; attempt < 5; attempt++ {
		kv, _, err := store.Get(ctx, s.Store, recordingKey(id, recordingID), store.Local)
		if err != nil || kv == nil {
			return err
		}
		rec, err := store.Decode[Recording](kv)
		if err != nil {
			return err
		}
		if rec.State != RecordingStopped || rec.CompositesPlanned || rec.StoppedAt == nil {
			return nil
		}
		rec.CompositesPlanned = true
		val, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		ops := []store.Op{store.Put(kv.Key, val)}
		now := s.now()
		dur := rec.StoppedAt.Sub(rec.OriginAt).Milliseconds()
		plan := func(kind string, p ParticipantID) error {
			cid, err := uuid.NewV7()
			if err != nil {
				return err
			}
			op, err := store.PutRecord(compositeKey(id, recordingID, cid.String()), Composite{CompositeID: cid.String(), RoomID: id,
				RecordingID: recordingID, Kind: kind, ParticipantID: p, State: CompositePending, DurationMs: dur, CreatedAt: now,
				CreatedMs: now.UnixMilli()})
			ops = append(ops, op)
			return err
		}
		if len(rec.Participants) > 0 && dur > 0 {
			for _, p := range rec.Participants {
				if err := plan(CompositeMember, p); err != nil {
					return err
				}
			}
			if err := plan(CompositeMeeting, ""); err != nil {
				return err
			}
		}
		resp, err := s.Store.Txn(ctx, store.TxnRequest{Compares: []store.Compare{store.ModRevisionIs(kv.Key, kv.ModRevision)}, Then: ops})
		if err != nil {
			return err
		}
		if resp.Succeeded {
			s.wakeComposites()
			return nil
		}
		if err := s.Store.WaitForRevision(ctx, resp.Header.Revision); err != nil {
			return err
		}
	}
	return fmt.Errorf("%w: recording %s", store.ErrContended, recordingID)
}

// planLeftovers plans the Stopped recordings whose plan failed after
// they stopped (the store refused the write, the node lost leadership):
// without it their composites would never be made.
func (s *Service) planLeftovers(ctx context.Context) error {
	recs, err := query.All(ctx, s.Reader, query.Query{Index: RecordingIndex.Name, Limit: 32,
		Where: []query.Cond{query.IsNull("composites_planned"), query.Eq("state", RecordingStopped)}}, query.JSON[Recording])
	if err != nil {
		return err
	}
	var errs []error
	for _, rec := range recs {
		errs = append(errs, s.planComposites(ctx, rec.RoomID, rec.RecordingID))
	}
	return errors.Join(errs...)
}

// Composites lists a recording's composites, oldest first.
func (s *Service) composites(ctx context.Context, id RoomID, recordingID string) ([]Composite, error) {
	all, err := store.Records[Composite](ctx, s.Store, compositeKey(id, recordingID, ""), store.Local)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(all, func(a, b Composite) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return all, nil
}

func (s *Service) composite(ctx context.Context, id RoomID, recordingID, compositeID string) (*Composite, *store.KeyValue, error) {
	if _, err := uuid.Parse(compositeID); err != nil {
		return nil, nil, ErrCompositeNotFound
	}
	c, kv, err := store.GetRecord[Composite](ctx, s.Store, compositeKey(id, recordingID, compositeID), store.Local)
	if err != nil {
		return nil, nil, err
	}
	if kv == nil {
		return nil, nil, ErrCompositeNotFound
	}
	return &c, kv, nil
}

// RetryComposite puts a Failed composite back to Pending, for the room's
// owner; the worker renders it again from the original tracks.
func (s *Service) RetryComposite(ctx context.Context, c Caller, id RoomID, recordingID, compositeID string) (*Composite, error) {
	if _, err := s.Room(ctx, c, id); err != nil {
		return nil, err
	}
	if _, err := s.recording(ctx, id, recordingID); err != nil {
		return nil, err
	}
	out, err := s.updateComposite(ctx, id, recordingID, compositeID, func(x *Composite) (bool, error) {
		if x.State != CompositeFailed {
			return false, fmt.Errorf("%w: it is %s", ErrCompositeNotFailed, x.State)
		}
		x.State, x.LastError, x.CompletedAt, x.Attempts = CompositePending, "", nil, 0
		return true, nil
	})
	if err == nil {
		s.wakeComposites()
	}
	return out, err
}

func (s *Service) updateComposite(ctx context.Context, id RoomID, recordingID, compositeID string, change func(*Composite) (bool, error)) (*Composite, error) {
	for attempt := 0; attempt < 5; attempt++ {
		x, kv, err := s.composite(ctx, id, recordingID, compositeID)
		if err != nil {
			return nil, err
		}
		ok, err := change(x)
		if err != nil || !ok {
			return x, err
		}
		op, err := store.PutRecord(kv.Key, x)
		if err != nil {
			return nil, err
		}
		resp, err := s.Store.Txn(ctx, store.TxnRequest{Compares: []store.Compare{store.ModRevisionIs(kv.Key, kv.ModRevision)}, Then: []store.Op{op}})
		if err != nil {
			return nil, err
		}
		if resp.Succeeded {
			return x, nil
		}
		if err := s.Store.WaitForRevision(ctx, resp.Header.Revision); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("%w: composite %s", store.ErrContended, compositeID)
}

// wakeChannel lets a plan or a retry start the worker's next pass.
func (s *Service) wakeChannel() chan struct{} {
	s.wakeOnce.Do(func() { s.wake = make(chan struct{}, 1) })
	return s.wake
}

func (s *Service) wakeComposites() {
	select {
	case s.wakeChannel() <- struct{}{}:
	default:
	}
}

// RunComposites is the leader's composite worker: every interval (or
// when woken) it renders the Pending composites, and those Running that
// a previous leader left, a few at once (the media server's pool bounds
// its ffmpeg processes).
func (s *Service) RunComposites(ctx context.Context, interval time.Duration, report func(error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := s.composeOnce(ctx); err != nil && ctx.Err() == nil {
			report(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-s.wakeChannel():
		}
	}
}

// composeWorkers is how many composites one pass asks for at once.
const composeWorkers = 4

func (s *Service) composeOnce(ctx context.Context) error {
	if err := s.planLeftovers(ctx); err != nil {
		return err
	}
	if s.Composer == nil {
		return nil
	}
	todo, err := query.All(ctx, s.Reader, query.Query{Index: CompositeIndex.Name, Limit: 32, Order: []query.Order{query.Asc("created_ms")},
		Where: []query.Cond{query.In("state", CompositePending, CompositeRunning)}}, query.JSON[Composite])
	if err != nil {
		return err
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		sem  = make(chan struct{}, composeWorkers)
	)
	for _, c := range todo {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := s.compose(ctx, c); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// compose takes one composite a step: claims it, asks its media server,
// and records what came of it.
func (s *Service) compose(ctx context.Context, c Composite) error {
	x, err := s.updateComposite(ctx, c.RoomID, c.RecordingID, c.CompositeID, func(x *Composite) (bool, error) {
		if x.State != CompositePending && x.State != CompositeRunning {
			return false, nil
		}
		if x.State == CompositePending {
			x.State = CompositeRunning
			x.Attempts++
		}
		return true, nil
	})
	if err != nil || x.State != CompositeRunning {
		return err
	}
	r, _, err := s.room(ctx, c.RoomID)
	if err != nil {
		return err
	}
	req, err := s.composeRequest(ctx, r, x)
	var done bool
	var size int64
	if err == nil {
		done, size, err = s.Composer.Compose(ctx, r.MediaServerID, *req)
	}
	if err == nil && !done {
		return nil // still rendering; the next pass asks again
	}
	now := s.now()
	_, uerr := s.updateComposite(ctx, c.RoomID, c.RecordingID, c.CompositeID, func(x *Composite) (bool, error) {
		if x.State != CompositeRunning {
			return false, nil
		}
		switch {
		case err == nil:
			x.State, x.FileSize, x.LastError, x.CompletedAt = CompositeAvailable, size, "", &now
		case errors.Is(err, ErrComposeRefused) || errors.Is(err, ErrNoCutMedia) || x.Attempts >= maxCompositeAttempts:
			x.State, x.LastError, x.CompletedAt = CompositeFailed, truncate(err.Error(), 300), &now
		default:
			x.State, x.LastError = CompositePending, truncate(err.Error(), 300) // the media server could not be asked
		}
		return true, nil
	})
	return uerr
}

// composeRequest lays out a composite's lanes from the recording's files:
// a member copy is its participant's lane, the meeting every
// participant's, in the order they were first recorded.
func (s *Service) composeRequest(ctx context.Context, r *Room, c *Composite) (*ComposeRequest, error) {
	rec, err := s.recording(ctx, r.RoomID, c.RecordingID)
	if err != nil {
		return nil, err
	}
	files, err := s.recordingFiles(ctx, r, rec)
	if err != nil {
		return nil, err
	}
	lanes := map[ParticipantID][]ComposeFile{}
	for _, pubID := range rec.Publications {
		pub, _, err := s.publication(ctx, r.RoomID, pubID)
		if err != nil {
			return nil, err
		}
		for _, f := range files[pubID] {
			cf := ComposeFile{FileID: f.FileID, OffsetMs: f.Start.Sub(rec.OriginAt).Milliseconds()}
			for _, codec := range f.Codecs {
				if isVideoCodec(codec) {
					cf.Video = true
				} else {
					cf.Audio = true
				}
			}
			if cf.Video || cf.Audio {
				lanes[pub.ParticipantID] = append(lanes[pub.ParticipantID], cf)
			}
		}
	}
	req := &ComposeRequest{CompositeID: c.CompositeID, DurationMs: c.DurationMs}
	for _, p := range rec.Participants {
		if c.Kind == CompositeMember && p != c.ParticipantID {
			continue
		}
		if l := lanes[p]; len(l) > 0 {
			req.Lanes = append(req.Lanes, l)
		}
	}
	if len(req.Lanes) == 0 {
		return nil, fmt.Errorf("%w: no track files of the recording remain", ErrNoCutMedia)
	}
	return req, nil
}

func isVideoCodec(codec string) bool { return codec == "H264" || codec == "H265" || codec == "VP8" }

// compositeURL is where an Available composite of the recording is read
// from; found is false when fileID names none of its composites.
func (s *Service) compositeURL(ctx context.Context, r *Room, rec *Recording, fileID, action string) (string, bool, error) {
	if _, err := uuid.Parse(fileID); err != nil {
		return "", false, nil
	}
	x, kv, err := store.GetRecord[Composite](ctx, s.Store, compositeKey(r.RoomID, rec.RecordingID, fileID), store.Local)
	if err != nil || kv == nil {
		return "", false, err
	}
	if x.State != CompositeAvailable || s.Composer == nil {
		return "", true, fmt.Errorf("%w: the composite is %s", ErrRecordingNotFound, x.State)
	}
	u, err := s.Composer.CompositeURL(ctx, r.MediaServerID, x.CompositeID, action)
	return u, true, err
}

// CompositeAvailable reports whether id is an Available composite (the
// engine's recorded playback asks before serving one).
func (s *Service) CompositeAvailable(ctx context.Context, id string) (bool, error) {
	if _, err := uuid.Parse(id); err != nil {
		return false, nil
	}
	x, ok, err := query.First(ctx, s.Reader, query.Query{Index: CompositeIndex.Name, Where: []query.Cond{query.Eq("composite_id", id)}},
		query.JSON[Composite])
	return ok && x.State == CompositeAvailable, err
}
