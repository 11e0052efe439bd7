package rtpcodec

// sequenceTracker notices gaps in the RTP sequence numbers a depacketiser
// receives, so it can discard a fragmented NAL unit or AU that lost a piece.
type sequenceTracker struct {
	next    uint16
	started bool
}

// advance records seq. It returns how many packets were missing before it,
// and ok false for a duplicate or a packet older than one already seen,
// which the depacketiser ignores. A jump of more than seqReset is taken as
// the source restarting its numbering, not as a loss.
func (s *sequenceTracker) advance(seq uint16) (lost int, ok bool) {
	if !s.started {
		s.started, s.next = true, seq+1
		return 0, true
	}
	gap := int16(seq - s.next)
	if gap < 0 && gap >= -seqReset {
		return 0, false
	}
	s.next = seq + 1
	if gap < 0 || gap > seqReset {
		return 1, true
	}
	return int(gap), true
}
