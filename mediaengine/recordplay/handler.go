// Package recordplay serves recorded files on the engine's media port,
// behind the same on_play check as live streams: a recording lease's
// ticket is bound to the reserved vhost RecordVhost, app RecordApp and the
// file's id as stream, so a live ticket never opens a file nor a file
// ticket a live stream.
//
// GET /record/{fileId}.mp4 answers the file as it is, with HTTP Range
// (206, 416) and conditional requests, for <video> elements, downloads and
// ffmpeg's own seeking. With ?start=S (seconds from the file's start) and
// optionally &duration=D it answers a time-addressed fragmented MP4: the
// initialisation segment and the parts from the last keyframe at or
// before S, found in the sidecar index without reading the media.
//
// GET /record/{fileId}.m3u8 is the same file as HLS VOD: an fMP4 playlist
// whose init segment and media segments (a keyframe's part and the parts
// up to the next keyframe) are byte ranges of <fileId>.mp4 with the same
// ticket, so an HLS player reads the file itself, seeking by segment.
//
// With ?download=1 it answers the file as an attachment (whole, or by
// Range to resume), asking on_play for the reserved app RecordDownloadApp
// instead: a ticket is bound to one of the two purposes.
package recordplay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"go.uber.org/zap"

	"github.com/svcplatform/svc/mediaengine/recorder"
	"github.com/svcplatform/svc/shared/engineapi"
)

// The reserved stream names of recorded playback in on_play.
const (
	RecordVhost = engineapi.RecordPlaybackVhost
	RecordApp   = engineapi.RecordPlaybackApp
	// DownloadApp is the on_play app of a download.
	DownloadApp = engineapi.RecordDownloadApp
	// Protocol is the on_play protocol of every recorded-playback request.
	Protocol = "http-fmp4"
)

// Files finds finished files by id (recorder.Recorder).
type Files interface {
	Lookup(fileID string) (string, *recorder.Index, error)
}

// Gate is the on_play hook.
type Gate interface {
	AllowPlay(ctx context.Context, req engineapi.PlayHook) (engineapi.HookAnswer, error)
}

// Handler serves /record/{file}.
type Handler struct {
	Files Files
	Gate  Gate
	Log   *zap.Logger
	// Unpaced sends time-addressed answers as fast as the connection
	// takes them, as before pacing (benchmarks compare the two).
	Unpaced bool
	// Burst and Factor, when set, replace PaceBurst and PaceFactor
	// (recseekbench compares settings).
	Burst  time.Duration
	Factor int
}

// A time-addressed answer is a stream to play: its first PaceBurst of
// media goes at once, the rest at PaceFactor times real time. Sent as
// fast as loopback or a LAN takes it, the rest of a 10-minute file
// (about 150 MB at 2 Mbit/s) floods a browser's MSE player while it
// starts: in Chromium the first frame came about 900 ms later (p50) than
// with 2 s of media, and it overruns the SourceBuffer's quota. Downloads
// and Range requests of the file are not paced.
const (
	PaceBurst  = 3 * time.Second
	PaceFactor = 8
)

// maxSeconds bounds start and duration (a day).
const maxSeconds = 86400

// ServeHTTP answers GET /record/{file}, {file} being <fileId>.mp4, or
// <fileId>.m3u8 for its HLS playlist.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if id, ok := strings.CutSuffix(r.PathValue("file"), ".m3u8"); ok {
		h.playlist(w, r, id)
		return
	}
	id, ok := strings.CutSuffix(r.PathValue("file"), ".mp4")
	if _, err := uuid.Parse(id); !ok || err != nil {
		http.Error(w, "no such recording file", http.StatusNotFound)
		return
	}
	q := r.URL.Query()
	start, okS := seconds(q.Get("start"))
	dur, okD := seconds(q.Get("duration"))
	if !okS || !okD {
		http.Error(w, "start and duration are seconds within 0-86400", http.StatusBadRequest)
		return
	}
	app, download := RecordApp, false
	switch q.Get(engineapi.RecordDownloadParam) {
	case "", "0", "false":
	case "1", "true":
		app, download = DownloadApp, true
	default:
		http.Error(w, "download is 1 or absent", http.StatusBadRequest)
		return
	}
	if download && (q.Get("start") != "" || q.Get("duration") != "") {
		http.Error(w, "a download is the whole file (or a byte Range of it), not a time span", http.StatusBadRequest)
		return
	}
	if !h.admit(w, r, app, id) {
		return
	}
	path, x, err := h.Files.Lookup(id)
	if errors.Is(err, recorder.ErrFileNotFound) {
		http.Error(w, "no such recording file on this media server", http.StatusNotFound)
		return
	}
	if err != nil {
		h.Log.Warn("recorded file unreadable", zap.String("fileId", id), zap.Error(err))
		http.Error(w, "the recording file cannot be read", http.StatusInternalServerError)
		return
	}
	f, err := os.Open(path)
	if err != nil {
		http.Error(w, "the recording file cannot be read", http.StatusNotFound)
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", "video/mp4")
	w.Header().Set("Cache-Control", "private, no-store")
	if download {
		w.Header().Set("Content-Disposition", `attachment; filename="`+filepath.Base(path)+`"`)
	}
	if q.Get("start") == "" && q.Get("duration") == "" {
		st, err := f.Stat()
		if err != nil {
			http.Error(w, "the recording file cannot be read", http.StatusInternalServerError)
			return
		}
		http.ServeContent(w, r, id+".mp4", st.ModTime(), f)
		return
	}
	from, to, ok := x.Span(start, dur)
	if !ok || (x.Duration() > 0 && start >= x.Duration()) {
		http.Error(w, "the file has no media at that time", http.StatusRequestedRangeNotSatisfiable)
		return
	}
	w.Header().Set("Content-Length", strconv.FormatInt(x.InitSize()+to-from, 10))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	if _, err := io.Copy(w, io.NewSectionReader(f, 0, x.InitSize())); err != nil {
		return
	}
	if h.Unpaced {
		io.Copy(w, io.NewSectionReader(f, from, to-from))
		return
	}
	burst, factor := PaceBurst, PaceFactor
	if h.Burst > 0 {
		burst = h.Burst
	}
	if h.Factor > 0 {
		factor = h.Factor
	}
	sendPacedAt(r.Context(), w, f, x.Parts, from, to, burst, factor)
}

// sendPaced writes the bytes [from, to) of f, part by part: a part
// beginning more than PaceBurst of media after the first is held until
// PaceFactor times real time reaches it.
func sendPaced(ctx context.Context, w http.ResponseWriter, f io.ReaderAt, parts []recorder.Part, from, to int64) {
	sendPacedAt(ctx, w, f, parts, from, to, PaceBurst, PaceFactor)
}

// sendPacedAt is sendPaced with burst and factor for PaceBurst and
// PaceFactor.
func sendPacedAt(ctx context.Context, w http.ResponseWriter, f io.ReaderAt, parts []recorder.Part, from, to int64, burst time.Duration, factor int) {
	rc := http.NewResponseController(w)
	t0, first, cursor := time.Now(), time.Duration(-1), from
	for _, p := range parts {
		if p.Offset < from || p.Offset >= to {
			continue
		}
		if first < 0 {
			first = p.At
		}
		if ahead := p.At - first - burst; ahead > 0 {
			if wait := time.Until(t0.Add(ahead / time.Duration(factor))); wait > 0 {
				if err := rc.Flush(); err != nil {
					return
				}
				t := time.NewTimer(wait)
				select {
				case <-ctx.Done():
					t.Stop()
					return
				case <-t.C:
				}
			}
		}
		// Up to the part's end, with whatever lies between parts.
		end := min(p.Offset+p.Size, to)
		if _, err := io.Copy(w, io.NewSectionReader(f, cursor, end-cursor)); err != nil {
			return
		}
		cursor = end
	}
	io.Copy(w, io.NewSectionReader(f, cursor, to-cursor))
}

func seconds(v string) (time.Duration, bool) {
	if v == "" {
		return 0, true
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || f > maxSeconds || f != f {
		return 0, false
	}
	return time.Duration(f * float64(time.Second)), true
}

// admit asks on_play (a stand-alone engine without hooks admits every
// request, as it does live players); a refusal answers 403 with the control plane's
// reason, no decision (an unreachable control plane) 503.
func (h *Handler) admit(w http.ResponseWriter, r *http.Request, app, fileID string) bool {
	params := map[string]string{}
	for k, v := range r.URL.Query() {
		if len(v) > 0 {
			params[k] = v[0]
		}
	}
	ans, err := h.Gate.AllowPlay(r.Context(), engineapi.PlayHook{StreamRef: engineapi.StreamRef{Vhost: RecordVhost, App: app, Stream: fileID},
		Protocol: Protocol, RemoteAddr: r.RemoteAddr, Params: params})
	if err != nil {
		http.Error(w, "the playback ticket could not be checked; try again", http.StatusServiceUnavailable)
		return false
	}
	if !ans.Allow {
		http.Error(w, "not allowed: "+ans.Reason, http.StatusForbidden)
		return false
	}
	return true
}

// playlist answers the HLS VOD playlist of a file.
func (h *Handler) playlist(w http.ResponseWriter, r *http.Request, id string) {
	q := r.URL.Query()
	if _, err := uuid.Parse(id); err != nil {
		http.Error(w, "no such recording file", http.StatusNotFound)
		return
	}
	if q.Get("start") != "" || q.Get("duration") != "" || q.Get(engineapi.RecordDownloadParam) != "" {
		http.Error(w, "a playlist is the whole file", http.StatusBadRequest)
		return
	}
	if !h.admit(w, r, RecordApp, id) {
		return
	}
	_, x, err := h.Files.Lookup(id)
	if errors.Is(err, recorder.ErrFileNotFound) {
		http.Error(w, "no such recording file on this media server", http.StatusNotFound)
		return
	}
	if err != nil {
		h.Log.Warn("recorded file unreadable", zap.String("fileId", id), zap.Error(err))
		http.Error(w, "the recording file cannot be read", http.StatusInternalServerError)
		return
	}
	body := Playlist(x, id+".mp4?"+q.Encode())
	w.Header().Set("Content-Type", "application/vnd.apple.mpegurl")
	w.Header().Set("Cache-Control", "private, no-store")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}

// Playlist is the HLS VOD playlist (version 7, fMP4) of a file whose bytes
// are at uri: each segment runs from a part that starts with a keyframe
// to the next such part.
func Playlist(x *recorder.Index, uri string) []byte {
	type seg struct {
		off, size int64
		dur       time.Duration
	}
	var segs []seg
	for _, p := range x.Parts {
		if p.Key || len(segs) == 0 {
			segs = append(segs, seg{off: p.Offset})
		}
		s := &segs[len(segs)-1]
		s.size = p.Offset + p.Size - s.off
		s.dur += p.Duration
	}
	target := 1
	for _, s := range segs {
		target = max(target, int(math.Ceil(s.dur.Seconds())))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "#EXTM3U\n#EXT-X-VERSION:7\n#EXT-X-TARGETDURATION:%d\n#EXT-X-PLAYLIST-TYPE:VOD\n#EXT-X-INDEPENDENT-SEGMENTS\n", target)
	fmt.Fprintf(&b, "#EXT-X-MAP:URI=\"%s\",BYTERANGE=\"%d@0\"\n", uri, x.InitSize())
	for _, s := range segs {
		fmt.Fprintf(&b, "#EXTINF:%.3f,\n#EXT-X-BYTERANGE:%d@%d\n%s\n", s.dur.Seconds(), s.size, s.off, uri)
	}
	b.WriteString("#EXT-X-ENDLIST\n")
	return []byte(b.String())
}
