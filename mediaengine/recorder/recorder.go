package recorder

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/mediaengine/hub"
	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/shared/engineapi"
)

// Config shapes a Recorder.
type Config struct {
	// Root is the recording root; it is created when missing.
	Root            string
	SegmentDuration time.Duration
	SegmentMaxBytes int64
	PartDuration    time.Duration
	// Report delivers a finished file to the control plane
	// (on_record_mp4); an error makes the reporter try again later. Nil
	// leaves files unreported until a recorder with a Report runs.
	Report func(ctx context.Context, f FileInfo) error
	// Watermarks guard the root's volume: no new file below FullBytes,
	// retention of the oldest below LowSpaceBytes.
	Watermarks Watermarks
	// FallbackRoot, when set, takes new files while Root is paused
	// (fallback.go).
	FallbackRoot string
}

// Recorder records streams of a hub; one instance per recorded stream.
type Recorder struct {
	hub      *hub.Hub
	cfg      Config
	root     string
	log      *zap.Logger
	reporter *reporter

	mu        sync.Mutex
	instances map[media.Path]*instance
	closed    bool
	// files maps the id of every finished file under the root to its path
	// under the root: playback and deletion find files by id only.
	files map[string]string
	// fbFiles maps the id of every finished file on a fallback root to
	// where it lies (fallback.go).
	fbFiles map[string]fileLoc
	// indexes keeps parsed sidecars for Lookup (index_cache.go).
	indexes *indexCache
	// started is set once Repair walked the roots.
	started bool
	// writing holds the ids of the files being written (claimed before
	// they are created, released when finished).
	writing map[string]bool
	// pruned lists the files retention deleted, for the control plane;
	// refused counts files not started on a Full volume.
	pruned  []string
	refused int64

	// guardMu makes one volume check (and prune) run at a time.
	guardMu sync.Mutex
	// bound is what the primary root is bound to (identity.go); bindMu
	// makes one binding change (of either root) at a time.
	bound  atomic.Pointer[binding]
	bindMu sync.Mutex
	// wm are the watermarks in force (Config.Watermarks until set).
	wm atomic.Pointer[Watermarks]
	// fallback is the fallback root (nil: none); onFallback says the
	// latest new file went there; recoverMu makes one recovery run at a
	// time.
	fallback   atomic.Pointer[fallbackRoot]
	onFallback atomic.Bool
	recoverMu  sync.Mutex
	// The retention sweep (retention.go): woken by a change of the
	// watermarks, stopped by Close.
	wake      chan struct{}
	stopSweep chan struct{}
	sweepDone chan struct{}
}

// New makes a recorder and starts its reporter; Close ends both.
func New(h *hub.Hub, cfg Config, log *zap.Logger) (*Recorder, error) {
	if err := os.MkdirAll(cfg.Root, 0o750); err != nil {
		return nil, fmt.Errorf("recorder: root: %w", err)
	}
	r := &Recorder{hub: h, cfg: cfg, root: cfg.Root, log: log, instances: map[media.Path]*instance{}, files: map[string]string{},
		fbFiles: map[string]fileLoc{}, writing: map[string]bool{}, indexes: newIndexCache(indexCacheFiles),
		wake: make(chan struct{}, 1), stopSweep: make(chan struct{}), sweepDone: make(chan struct{})}
	b, err := loadBinding(cfg.Root)
	if err != nil {
		return nil, err
	}
	r.bound.Store(&b)
	wm := cfg.Watermarks
	r.wm.Store(&wm)
	// A fallback root the recorder cannot use (one nested with the
	// primary, say) must not keep the primary from recording: it is
	// left out, loudly. Configuring one is refused where it is set.
	if err := r.SetFallback(cfg.FallbackRoot); err != nil {
		log.Warn("the fallback recording root is ignored; the primary root records alone", zap.String("fallback", cfg.FallbackRoot), zap.Error(err))
	}
	r.reporter = newReporter(cfg.Root, cfg.Report, log)
	go r.sweepLoop()
	return r, nil
}

// nameRE is what an app, stream or vhost must look like to name a
// directory: no separators, no "..", nothing hidden.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$`)

// Start begins recording the stream at p (which need not be live yet);
// segment, when positive, overrides the segment duration.
func (r *Recorder) Start(p media.Path, segment time.Duration) (engineapi.RecordingInfo, error) {
	p = hub.Key(p)
	for _, n := range []string{p.Vhost, p.App, p.Stream} {
		if !nameRE.MatchString(n) {
			return engineapi.RecordingInfo{}, fmt.Errorf("%w: %q", ErrBadName, n)
		}
	}
	if segment <= 0 {
		segment = r.cfg.SegmentDuration
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return engineapi.RecordingInfo{}, ErrClosed
	}
	if _, ok := r.instances[p]; ok {
		return engineapi.RecordingInfo{}, fmt.Errorf("%w: %s", ErrAlreadyRecording, p)
	}
	ctx, cancel := context.WithCancel(context.Background())
	in := &instance{rec: r, path: p, segDur: segment, cancel: cancel, done: make(chan struct{}), stopReason: ReasonStopped,
		info: engineapi.RecordingInfo{Vhost: p.Vhost, App: p.App, Stream: p.Stream, State: "waiting", StartedAt: time.Now().UTC()}}
	r.instances[p] = in
	go in.run(ctx)
	r.log.Info("recording started", zap.String("stream", p.String()), zap.Duration("segment", segment))
	return in.snapshot(), nil
}

// Stop ends recording the stream at p; it returns once the open file is
// finished and handed to the reporter.
func (r *Recorder) Stop(p media.Path) (engineapi.RecordingInfo, error) {
	p = hub.Key(p)
	r.mu.Lock()
	in, ok := r.instances[p]
	delete(r.instances, p)
	r.mu.Unlock()
	if !ok {
		return engineapi.RecordingInfo{}, fmt.Errorf("%w: %s", ErrNotRecording, p)
	}
	in.cancel()
	<-in.done
	r.log.Info("recording stopped", zap.String("stream", p.String()))
	info := in.snapshot()
	info.State = "stopped"
	return info, nil
}

// List describes the streams being recorded, by path.
func (r *Recorder) List() []engineapi.RecordingInfo {
	r.mu.Lock()
	ins := make([]*instance, 0, len(r.instances))
	for _, in := range r.instances {
		ins = append(ins, in)
	}
	r.mu.Unlock()
	out := make([]engineapi.RecordingInfo, 0, len(ins))
	for _, in := range ins {
		out = append(out, in.snapshot())
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		return a.Vhost+"/"+a.App+"/"+a.Stream < b.Vhost+"/"+b.App+"/"+b.Stream
	})
	return out
}

// addFile makes a finished file findable by its id.
func (r *Recorder) addFile(id, rel string) {
	r.mu.Lock()
	r.files[id] = rel
	delete(r.writing, id)
	r.mu.Unlock()
}

// claim notes a file about to be written.
func (r *Recorder) claim(id string) {
	r.mu.Lock()
	r.writing[id] = true
	r.mu.Unlock()
}

// Lookup finds a finished file by id: its absolute path and its sidecar
// index. A file still being written is not found. The index is shared
// with other callers (it comes from the recorder's cache of parsed
// sidecars, so a seek costs a stat, not a read and parse of the sidecar):
// it must not be modified.
func (r *Recorder) Lookup(fileID string) (string, *Index, error) {
	r.mu.Lock()
	root, rel, _, ok := r.locate(fileID)
	r.mu.Unlock()
	if !ok {
		return "", nil, fmt.Errorf("%w: %q", ErrFileNotFound, fileID)
	}
	abs := filepath.Join(root, rel)
	sidecar := abs + ".idx"
	st, err := os.Stat(sidecar)
	if err != nil {
		r.indexes.drop(fileID)
		return "", nil, err
	}
	if x, ok := r.indexes.get(fileID, sidecar, st); ok {
		return abs, x, nil
	}
	x, err := readIndex(sidecar)
	if err != nil {
		return "", nil, err
	}
	r.indexes.put(fileID, sidecar, st, x)
	return abs, x, nil
}

// Delete removes a finished file and its sidecar; a file being written
// (or unknown) gives ErrFileNotFound.
func (r *Recorder) Delete(fileID string) error {
	r.mu.Lock()
	root, rel, _, ok := r.locate(fileID)
	delete(r.files, fileID)
	delete(r.fbFiles, fileID)
	r.mu.Unlock()
	r.indexes.drop(fileID)
	if !ok {
		return fmt.Errorf("%w: %q", ErrFileNotFound, fileID)
	}
	abs := filepath.Join(root, rel)
	err := os.Remove(abs)
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	if rerr := os.Remove(abs + ".idx"); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) && err == nil {
		err = rerr
	}
	return err
}

// Root is the recording root.
func (r *Recorder) Root() string { return r.root }

// Close stops every recording (their files are finished) and the
// reporter; reports not yet delivered are sent by the next recorder on
// the same root.
func (r *Recorder) Close() {
	r.mu.Lock()
	if !r.closed {
		close(r.stopSweep)
	}
	r.closed = true
	ins := r.instances
	r.instances = map[media.Path]*instance{}
	r.mu.Unlock()
	for _, in := range ins {
		in.cancel()
	}
	for _, in := range ins {
		<-in.done
	}
	<-r.sweepDone
	r.reporter.close()
}
