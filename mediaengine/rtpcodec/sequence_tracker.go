package rtpcodec

// sequenceTracker notices gaps in the RTP sequence numbers a depacketiser
// receives, so it can discard a fragmented NAL unit or AU that lost a piece.
type sequenceTracker struct {
	next    uint16
	started bool
	lower   lowerRestart
}

// restartRun is how many packets in a row, each following the one before,
// may come behind the expected number before the source is taken to have
// restarted its numbering lower (a payloader reset mid-session). Late
// packets come one at a time; without this, a restart fewer than seqReset
// numbers back would make every packet late until the numbers caught up,
// which at 50 packets a second is up to 20 s without video.
const restartRun = 8

// lowerRestart follows the packets that come behind the expected number,
// to tell a source that restarted its numbering lower from late packets.
type lowerRestart struct {
	run  int
	last uint16
}

// behind records seq, which came behind the expected number, and reports
// whether it completes a run of restartRun, each following the one before.
func (r *lowerRestart) behind(seq uint16) bool {
	if r.run > 0 && seq == r.last+1 {
		r.run++
	} else {
		r.run = 1
	}
	r.last = seq
	return r.run >= restartRun
}

// advance records seq. It returns how many packets were missing before it,
// and ok false for a duplicate or a packet older than one already seen,
// which the depacketiser ignores. A jump of more than seqReset, or
// restartRun packets in a row behind, each following the one before, are
// taken as the source restarting its numbering, not as a loss.
func (s *sequenceTracker) advance(seq uint16) (lost int, ok bool) {
	if !s.started {
		s.started, s.next = true, seq+1
		return 0, true
	}
	gap := int16(seq - s.next)
	if gap < 0 && gap >= -seqReset {
		if !s.lower.behind(seq) {
			return 0, false
		}
		gap = -seqReset - 1 // a run: the source restarted lower
	}
	s.lower.run = 0
	s.next = seq + 1
	if gap < 0 || gap > seqReset {
		return 1, true
	}
	return int(gap), true
}
