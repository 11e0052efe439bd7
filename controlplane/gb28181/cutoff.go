package gb28181

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/svcplatform/svc/controlplane/parallel"
	"github.com/svcplatform/svc/controlplane/store"
)

// byeAtOnce bounds the BYEs a cut-off node sends together.
const byeAtOnce = 16

// cutOffDialog is a dialog this node ended while cut off from the
// cluster: its record and the session's owner are dealt with once the
// node is back in contact.
type cutOffDialog struct {
	m   *MediaSession
	why string
}

// EndDialogsCutOff ends every dialog this node holds because it is cut off
// from the cluster (it has not heard from a leader for the holder
// timeout): the leader takes a holder it cannot reach for dead and ends
// the dialogs' sessions without a BYE, so a holder that is alive must not
// keep them, nor the devices keep sending media for them. Each device
// still reachable gets its BYE (several at once); the dialogs are
// forgotten here, and their records and the sessions' owners are told when
// the node is back in contact (Rejoined). It returns how many it ended.
//
// The sessions' RTP servers and port leases stay for the leader to undo
// (its EndGB, once it takes this node for dead): they were opened by node
// commands, and a control node reaches a media host only through node
// commands in the replicated store, which a cut-off node cannot write (the
// agents poll their control node; no control node dials an agent or an
// engine, and an engine's control secret never leaves its host). Until
// then the server receives nothing, the device having had its BYE.
func (s *Service) EndDialogsCutOff(why string) int {
	s.mu.Lock()
	s.wasCutOff = true
	ms := make([]*MediaSession, 0, len(s.sessions))
	for id, m := range s.sessions {
		ms = append(ms, m)
		delete(s.sessions, id)
	}
	s.mu.Unlock()
	if len(ms) == 0 {
		return 0
	}
	// Each BYE's failure is logged with its call; nothing is joined.
	_ = parallel.Each(ms, byeAtOnce, func(m *MediaSession) error {
		m.once.Do(func() {
			ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
			defer cancel()
			if err := m.dialog.Bye(ctx); err != nil {
				s.log.Info("GB28181 BYE of a cut-off node not answered", zap.String("callId", m.CallID), zap.Error(err))
			}
			m.dialog.Close()
		})
		return nil
	})
	s.mu.Lock()
	for _, m := range ms {
		s.cutOff = append(s.cutOff, cutOffDialog{m: m, why: why})
	}
	s.mu.Unlock()
	s.log.Warn("GB28181 dialogs ended: this control node is cut off from the cluster", zap.Int("dialogs", len(ms)), zap.String("reason", why))
	return len(ms)
}

// Rejoined finishes what EndDialogsCutOff could not do while the node was
// cut off: the records of the dialogs it ended are removed (the leader
// may have removed them already) and each session's owner is told that
// its dialog ended, as when a device hangs up. A dialog is never taken
// back: the device had its BYE, or the session was ended meanwhile. The
// presence of the devices is then brought in line with the records at
// once (the leader marked them offline meanwhile), so their next
// keep-alive recovers them. What fails is tried again at the next call.
func (s *Service) Rejoined(ctx context.Context) error {
	s.mu.Lock()
	if !s.wasCutOff {
		s.mu.Unlock()
		return nil
	}
	pending := s.cutOff
	s.cutOff = nil
	s.mu.Unlock()
	for i, d := range pending {
		m := d.m
		if _, err := s.store.Txn(ctx, store.TxnRequest{Then: []store.Op{store.Delete(dialogKey(m.DeviceID, m.ChannelID, m.CallID))}}); err != nil {
			s.mu.Lock()
			s.cutOff = append(s.cutOff, pending[i:]...)
			s.mu.Unlock()
			return err
		}
		s.mediaEnded(m.CallID, "GB28181 dialog ended: "+d.why)
		s.mu.Lock()
		delete(s.origins, m.CallID)
		s.mu.Unlock()
	}
	if err := s.reconcile(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	s.wasCutOff = len(s.cutOff) > 0
	s.mu.Unlock()
	return nil
}

// HeldDialogs is how many INVITE dialogs this node holds in memory.
func (s *Service) HeldDialogs() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}
