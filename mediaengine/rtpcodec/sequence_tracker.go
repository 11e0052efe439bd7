package rtpcodec

// sequenceTracker notices gaps in the RTP sequence numbers a depacketiser
// receives, so it can discard a fragmented NAL unit or AU that lost a piece.
type sequenceTracker struct {
	next    uint16
	started bool
	// behind and lastOld follow a run of packets behind next, as in
	// ReorderBuffer.
	behind  int
	lastOld uint16
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
		if s.behind > 0 && seq == s.lastOld+1 {
			s.behind++
		} else {
			s.behind = 1
		}
		s.lastOld = seq
		if s.behind < restartRun {
			return 0, false
		}
		gap = -seqReset - 1 // a run: the source restarted lower
	}
	s.behind = 0
	s.next = seq + 1
	if gap < 0 || gap > seqReset {
		return 1, true
	}
	return int(gap), true
}
