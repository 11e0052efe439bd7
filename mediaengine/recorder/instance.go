package recorder

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/mediaengine/hub"
	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/shared/engineapi"
)

// instance records one stream until stopped: it reads the hub's raw
// frames through a draining reader, and after a publisher goes it waits
// for the next one. One goroutine owns the writer; the stats are read
// under mu.
type instance struct {
	rec    *Recorder
	path   media.Path
	segDur time.Duration
	cancel context.CancelFunc
	done   chan struct{}
	// stopReason is the reason of the file open when the instance stops.
	stopReason string

	mu      sync.Mutex
	info    engineapi.RecordingInfo
	dropped uint64 // frames dropped by readers of earlier publishers
	// doneBytes and doneFrames add up the finished files.
	doneBytes  int64
	doneFrames uint64
}

func (in *instance) run(ctx context.Context) {
	defer close(in.done)
	log := in.rec.log.With(zap.String("stream", in.path.String()))
	full := false // warn once per streak of a Full volume, not every second
	for ctx.Err() == nil {
		rd, err := in.rec.hub.SubscribeDrain(ctx, in.path, "recorder")
		if err != nil {
			if errors.Is(err, hub.ErrHubClosed) {
				return
			}
			continue // the context ended, or the stream went while subscribing
		}
		in.setState("recording", "")
		err = in.record(ctx, rd, log)
		paused := errors.Is(err, ErrVolumeFull) || errors.Is(err, ErrRootUnusable)
		if !paused {
			full = false
		}
		in.mu.Lock()
		in.dropped += rd.Dropped()
		in.info.Dropped = in.dropped
		in.mu.Unlock()
		rd.Close()
		in.setState("waiting", "")
		if err != nil && !errors.Is(err, hub.ErrStreamClosed) && ctx.Err() == nil {
			switch {
			case paused && full:
			case paused:
				full = true
				log.Warn("the recording volume is full or its root unusable; no new file until that changes", zap.Error(err))
			default:
				log.Warn("recording stopped on an error; waiting to resume", zap.Error(err))
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

// keyframeAskInterval spaces a recording's keyframe requests while its
// file waits for a keyframe to end at.
const keyframeAskInterval = time.Second

// The reader wakes the recording for a batch of frames rather than for
// each (hub.Reader.SetBatch): at a keyframe, where a part usually closes,
// or after 16 frames or 200 ms, so a part that closes on its duration is
// written at most that late.
const (
	batchFrames = 16
	batchSpan   = 200 * time.Millisecond
)

// record writes one publisher's frames until its stream ends, the
// instance stops or a file cannot be written.
func (in *instance) record(ctx context.Context, rd *hub.Reader, log *zap.Logger) error {
	w := newStreamWriter(in.rec.root, in.path, rd.Tracks(), in.segDur, in.rec.cfg.SegmentMaxBytes, in.rec.cfg.PartDuration, in.fileDone)
	w.admit = in.rec.admit
	w.claim = in.rec.claim
	if !w.carries() {
		log.Warn("the stream has no track a recording can carry")
		<-rd.Stream().Done()
		return hub.ErrStreamClosed
	}
	// Stopping closes the reader: Next then waits on a plain receive,
	// which costs a fraction of a select with the context, once per
	// frame of every recorded stream.
	stop := context.AfterFunc(ctx, rd.Close)
	defer stop()
	rd.SetBatch(batchFrames, batchSpan)
	var pkts []*hub.Packet
	var asked time.Time
	for {
		var err error
		pkts, err = rd.Next(context.Background(), pkts[:0])
		if err != nil {
			reason := ReasonStreamEnded
			if ctx.Err() != nil {
				reason = in.stopReason
			}
			if cerr := w.closeSegment(0, false, reason); cerr != nil {
				return cerr
			}
			return err
		}
		for _, p := range pkts {
			if p.Frame == nil {
				continue
			}
			if err := w.frame(p.Frame); err != nil {
				// The file is cut short where it failed; it is reported
				// with what it holds and the next keyframe starts anew.
				w.closeSegment(0, false, ReasonStopped)
				clear(pkts)
				return err
			}
		}
		clear(pkts)
		if w.keyDue && time.Since(asked) >= keyframeAskInterval {
			rd.Stream().RequestKeyframe()
			asked = time.Now()
		}
		id, size, frames := w.written()
		in.mu.Lock()
		in.info.FileID = id
		in.info.Bytes = in.doneBytes + size
		in.info.Frames = in.doneFrames + frames
		in.info.Dropped = in.dropped + rd.Dropped()
		in.mu.Unlock()
	}
}

// fileDone counts a finished file and hands it to the reporter.
func (in *instance) fileDone(f FileInfo, err error) {
	if err != nil {
		in.rec.log.Warn("recording file finished with an error", zap.String("file", f.Rel), zap.Error(err))
	}
	in.rec.addFileAtRoot(f.FileID, f.root, f.Rel, f.Fallback)
	in.mu.Lock()
	in.info.Files++
	if in.info.FileID == f.FileID {
		// Until the next frame opens a file, none is open: the snapshot
		// must not show a finished file as the one being written.
		in.info.FileID = ""
	}
	in.doneBytes += f.Size
	in.doneFrames += f.Frames
	in.mu.Unlock()
	in.rec.reporter.add(f)
}

func (in *instance) setState(state, fileID string) {
	in.mu.Lock()
	in.info.State, in.info.FileID = state, fileID
	in.mu.Unlock()
}

func (in *instance) snapshot() engineapi.RecordingInfo {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.info
}
