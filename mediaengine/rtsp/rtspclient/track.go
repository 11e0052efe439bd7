package rtspclient

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"

	"github.com/svcplatform/svc/mediaengine/media"
	"github.com/svcplatform/svc/mediaengine/rtpcodec"
	"github.com/svcplatform/svc/mediaengine/rtsp"
)

// clientTrack is one set-up track of a pulling client.
type clientTrack struct {
	media   rtsp.MediaDescription
	track   *media.Track
	control string // resolved URL used in SETUP
	channel int    // TCP: RTP channel; RTCP is channel+1
	udp     *udpPair
	server  [2]int // UDP: the server's RTP and RTCP ports

	// mu serialises the depacketiser between the RTP and RTCP readers
	// (over UDP they are two goroutines).
	mu      sync.Mutex
	depack  rtpcodec.Depacketizer
	reorder *rtpcodec.ReorderBuffer
	pkt     rtp.Packet
	stats   receiverStats
	deliver func([]byte, time.Time)
	// onPacket notes media arrival (the client's liveness watch).
	onPacket func(time.Time)
	// arrived is when the track's last packet came off the network (Unix
	// ns), before any lock: the frame watch's report tells a source that
	// stopped from packets that came but gave nothing.
	arrived atomic.Int64

	// The frame watch, owned by the client's housekeeping goroutine: the
	// depacketiser's frame and packet counts when frames last moved, and
	// when.
	framesSeen    uint64
	packetsAtMove uint64
	framesMoved   time.Time
}

// stalled reports whether the track is video that, having delivered frames
// in this session, has delivered none for limit: its packets stopped, or
// they still come and decode to nothing (every access unit broken or
// malformed). The session's packet watch sees neither while audio keeps
// flowing, and readers wait for a keyframe that never comes. Audio is not
// watched: a source with voice activity detection may stop sending it in
// silence.
func (t *clientTrack) stalled(now time.Time, limit time.Duration) bool {
	if t.depack == nil || t.track.Kind() != media.KindVideo {
		return false
	}
	n := t.depack.Stats().Frames.Load()
	if n != t.framesSeen || t.framesMoved.IsZero() {
		t.framesSeen, t.packetsAtMove, t.framesMoved = n, t.depack.Stats().Packets.Load(), now
		return false
	}
	return n > 0 && now.Sub(t.framesMoved) > limit
}

// stallReport says what a stalled track received since its last frame.
func (t *clientTrack) stallReport(now time.Time) string {
	s := t.depack.Stats().Snapshot()
	last := "never"
	if ns := t.arrived.Load(); ns != 0 {
		last = now.Sub(time.Unix(0, ns)).Round(time.Millisecond).String() + " ago"
	}
	report := fmt.Sprintf("%d packets decoded since its last frame, the last packet received %s; in the session: packets %d, lost %d, malformed %d, units dropped %d",
		s.Packets-t.packetsAtMove, last, s.Packets, s.Lost, s.Malformed, s.Dropped)
	switch {
	case t.reorder == nil:
	case t.mu.TryLock(): // a receiver stuck inside would hold it
		report += fmt.Sprintf(", given up by the reorder buffer %d, late or duplicate %d", t.reorder.Lost(), t.reorder.Late())
		t.mu.Unlock()
	default:
		report += ", the track's receiver busy"
	}
	return report
}

// rtpPacket decodes one RTP packet in sequence order.
func (t *clientTrack) rtpPacket(raw []byte, arrival time.Time) {
	if err := t.pkt.Unmarshal(raw); err != nil {
		t.depack.Stats().Malformed.Add(1)
		return
	}
	t.stats.packet(t.pkt.SSRC, t.pkt.SequenceNumber, t.pkt.Timestamp, arrival)
	t.depack.Decode(&t.pkt, arrival)
}

// received takes one RTP packet off the network: UDP goes through the
// reorder buffer, TCP is in order already.
func (t *clientTrack) received(raw []byte, arrival time.Time) {
	if t.depack == nil {
		return // before its SETUP was answered: a server that sends early
	}
	t.onPacket(arrival)
	t.arrived.Store(arrival.UnixNano())
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.reorder != nil {
		t.reorder.Push(raw, arrival, t.deliver)
		return
	}
	t.rtpPacket(raw, arrival)
}

// rtcpPacket takes the server's sender reports.
func (t *clientTrack) rtcpPacket(raw []byte, arrival time.Time) {
	if t.depack == nil {
		return
	}
	rtsp.ForSenderReports(raw, func(sr *rtcp.SenderReport) {
		t.stats.senderReport(sr.NTPTime, arrival)
		t.mu.Lock()
		t.depack.SenderReport(rtsp.NTPTime(sr.NTPTime), sr.RTPTime, arrival)
		t.mu.Unlock()
	})
}
