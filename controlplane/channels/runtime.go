package channels

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
	"unicode/utf8"

	"github.com/svcplatform/svc/controlplane/store"
)

// What the stream dispatcher, the reconciler and the engine hooks call to
// report progress. Each call is one Txn with its runtime-log entry.

// Backoff shapes auto-recovery: the n-th failed attempt in a row waits
// Base·2^(n-1), capped at Max, spread by ±Jitter so that many channels that
// failed together (a media server restart) do not retry in lockstep.
type Backoff struct {
	Base   time.Duration
	Max    time.Duration
	Jitter float64
}

// Default backoff values.
const (
	DefaultBackoffBase   = 2 * time.Second
	DefaultBackoffMax    = 5 * time.Minute
	DefaultBackoffJitter = 0.2
)

func (b Backoff) withDefaults() Backoff {
	if b.Base <= 0 {
		b.Base = DefaultBackoffBase
	}
	if b.Max <= 0 {
		b.Max = DefaultBackoffMax
	}
	if b.Jitter <= 0 || b.Jitter >= 1 {
		b.Jitter = DefaultBackoffJitter
	}
	return b
}

// Delay is the wait after the attempt-th failure in a row (attempt >= 1);
// r in [0,1) picks the point in the jitter band.
func (b Backoff) Delay(attempt int, r float64) time.Duration {
	b = b.withDefaults()
	d := b.Max
	if attempt < 1 {
		attempt = 1
	}
	if shift := attempt - 1; shift < 32 && b.Base<<shift < b.Max && b.Base<<shift > 0 {
		d = b.Base << shift
	}
	d = time.Duration(float64(d) * (1 - b.Jitter + 2*b.Jitter*r))
	return min(d, b.Max)
}

// maxReason bounds reasons and errors stored in records and logs.
const maxReason = 512

func clip(s string) string {
	if len(s) <= maxReason {
		return s
	}
	s = s[:maxReason]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s + "…"
}

// SetActualState records what the stream is doing, with the reason. Online
// ends the backoff: the next failure starts again from the base delay.
func (s *Service) SetActualState(ctx context.Context, a Actor, id ChannelID, st ActualState, reason string) (*Channel, error) {
	switch st {
	case ActualOffline, ActualStarting, ActualOnline, ActualRetrying, ActualPaused, ActualFailed:
	default:
		return nil, fmt.Errorf("%w: unknown actual state %q", ErrInvalid, st)
	}
	return s.write(ctx, a, id, false, func(ch *Channel, c *change) error {
		if ch.ActualState == st && ch.ActualStateReason == clip(reason) || !st.mayReplace(ch.ActualState) {
			return errUnchanged
		}
		if st == ActualOnline {
			ch.Retry.Attempts, ch.Retry.NextRetryAt = 0, nil
		}
		return c.setActual(ch, st, clip(reason))
	})
}

// mayReplace says whether a report of st may overwrite the state cur.
// Reports race: the dispatcher reports Starting when a start's node
// command has gone out, while the engine's hook reports Online as soon as
// media arrives, which can be first. Starting describes an earlier step
// than Online, so it never replaces it; a lost stream moves Online on
// through RecordFailedAttempt, and media is the only thing that sets Online.
func (st ActualState) mayReplace(cur ActualState) bool {
	return st != ActualStarting || cur != ActualOnline
}

// SetCommandState records the actual state a stream command's progress
// implies (Starting once a start's node command went out, Offline once a
// stop's succeeded), but only while cmd is still the channel's latest
// command: a late report of an earlier start or stop never overwrites
// what a later command or the engine has set since. It answers whether
// the report was recorded.
func (s *Service) SetCommandState(ctx context.Context, a Actor, id ChannelID, cmd CommandID, st ActualState, reason string) (bool, error) {
	switch st {
	case ActualStarting, ActualOffline:
	default:
		return false, fmt.Errorf("%w: a command reports Starting or Offline, not %q", ErrInvalid, st)
	}
	recorded := false
	_, err := s.write(ctx, a, id, false, func(ch *Channel, c *change) error {
		recorded = false
		if ch.LastCommandID != cmd || !st.mayReplace(ch.ActualState) || ch.ActualState == st && ch.ActualStateReason == clip(reason) {
			return errUnchanged
		}
		recorded = true
		return c.setActual(ch, st, clip(reason))
	})
	return recorded, err
}

// RecordFailedStart counts a failed start command as RecordFailedAttempt
// does, unless a later command superseded it or the stream is Online
// meanwhile (a repeated start whose node command failed while the first
// one's stream plays): then the failure is only the command's.
func (s *Service) RecordFailedStart(ctx context.Context, a Actor, id ChannelID, cmd CommandID, cause string) (bool, error) {
	_, recorded, err := s.recordFailure(ctx, a, id, cause, func(ch *Channel) bool { return ch.LastCommandID == cmd && ch.ActualState != ActualOnline })
	return recorded, err
}

// RecordFailedAttempt counts a failed start or a lost stream. A channel
// that should run and whose auto-recovery is not paused goes Retrying with
// its next retry time; otherwise it goes Failed (or Paused when paused).
func (s *Service) RecordFailedAttempt(ctx context.Context, a Actor, id ChannelID, cause string) (*Channel, error) {
	ch, _, err := s.recordFailure(ctx, a, id, cause, func(*Channel) bool { return true })
	return ch, err
}

// recordFailure counts a failure when applies, read inside the write,
// still holds.
func (s *Service) recordFailure(ctx context.Context, a Actor, id ChannelID, cause string, applies func(*Channel) bool) (*Channel, bool, error) {
	cause = clip(cause)
	recorded := false
	ch, err := s.write(ctx, a, id, false, func(ch *Channel, c *change) error {
		recorded = false
		if !applies(ch) {
			return errUnchanged
		}
		recorded = true
		ch.Retry.Attempts++
		ch.Retry.LastError, ch.Retry.LastErrorAt = cause, &c.now
		recoverable := ch.DesiredState == DesiredRunning && !ch.AutoRecoveryPaused && ch.Enabled && ch.Activation == ActivationActive
		msg := fmt.Sprintf("attempt %d failed: %s", ch.Retry.Attempts, cause)
		next := ActualFailed
		switch {
		case recoverable:
			at := c.now.Add(s.Backoff.Delay(ch.Retry.Attempts, rand.Float64()))
			ch.Retry.NextRetryAt = &at
			msg += "; next retry at " + at.Format(time.RFC3339)
			next = ActualRetrying
		case ch.DesiredState == DesiredRunning && ch.AutoRecoveryPaused:
			ch.Retry.NextRetryAt = nil
			msg += "; auto-recovery is paused"
			next = ActualPaused
		default:
			ch.Retry.NextRetryAt = nil
		}
		if err := c.log(id, LogState, "attempt.failed", "", "", msg, ""); err != nil {
			return err
		}
		return c.setActual(ch, next, cause)
	})
	return ch, recorded, err
}

// AssignMediaServer places the channel on a media server (and its node).
func (s *Service) AssignMediaServer(ctx context.Context, a Actor, id ChannelID, mediaServerID, nodeID string) (*Channel, error) {
	if err := checkRef("mediaServerId", mediaServerID, false); err != nil {
		return nil, err
	}
	if err := checkRef("nodeId", nodeID, true); err != nil {
		return nil, err
	}
	return s.write(ctx, a, id, false, func(ch *Channel, c *change) error {
		if ch.MediaServerID == mediaServerID && ch.NodeID == nodeID {
			return errUnchanged
		}
		from := ch.MediaServerID
		ch.MediaServerID, ch.NodeID = mediaServerID, nodeID
		return c.log(id, LogMediaServer, "media_server.assigned", from, mediaServerID, fmt.Sprintf("assigned to media server %s on node %s", mediaServerID, nodeID), "")
	})
}

// MarkCommand moves a stream command forward (Pending → Dispatched →
// Running → Succeeded | Failed | TimedOut | Canceled) and records the node
// command that carries it and any error. A finished command stays as it
// is; repeating the same report changes nothing.
func (s *Service) MarkCommand(ctx context.Context, a Actor, id CommandID, st CommandState, nodeCommandID, cause string) (*StreamCommand, error) {
	if !st.Valid() {
		return nil, fmt.Errorf("%w: unknown command state %q", ErrInvalid, st)
	}
	if nodeCommandID != "" {
		if err := checkRef("nodeCommandId", nodeCommandID, false); err != nil {
			return nil, err
		}
	}
	if err := checkID(ChannelID(id)); err != nil {
		return nil, fmt.Errorf("%w: %q", ErrCommandNotFound, id)
	}
	cause = clip(cause)
	var cmd StreamCommand
	unchanged := false
	_, err := store.Update(ctx, s.Store, commandKey(id), func(kv *store.KeyValue) ([]byte, []store.Op, []store.Compare, error) {
		if kv == nil {
			return nil, nil, nil, fmt.Errorf("%w: %q", ErrCommandNotFound, id)
		}
		cur, err := store.Decode[StreamCommand](kv)
		if err != nil {
			return nil, nil, nil, err
		}
		cmd = cur
		if cmd.State == st && (nodeCommandID == "" || nodeCommandID == cmd.NodeCommandID) {
			unchanged = true
			return nil, nil, nil, errUnchanged
		}
		if cmd.State.Finished() {
			return nil, nil, nil, fmt.Errorf("%w: %s is already %s", ErrCommandFinished, id, cmd.State)
		}
		if st.rank() < cmd.State.rank() {
			return nil, nil, nil, fmt.Errorf("%w: stream command %s cannot go from %s back to %s", ErrBadTransition, id, cmd.State, st)
		}
		now := s.now()
		from := cmd.State
		cmd.State, cmd.UpdatedAt = st, now
		if nodeCommandID != "" {
			cmd.NodeCommandID = nodeCommandID
		}
		if cause != "" {
			cmd.Error = cause
		}
		if st.Finished() {
			cmd.FinishedAt = &now
		}
		val, err := json.Marshal(cmd)
		if err != nil {
			return nil, nil, nil, err
		}
		msg := fmt.Sprintf("%s command %s", cmd.Action, st)
		if cause != "" {
			msg += ": " + cause
		}
		logOp, err := LogOp(LogEntry{ChannelID: cmd.ChannelID, Kind: LogCommand, Event: "command.state", From: string(from), To: string(st),
			Message: msg, CommandID: id, Actor: who(a), TraceID: a.TraceID, OccurredAt: now})
		return val, []store.Op{logOp}, nil, err
	})
	if unchanged && errors.Is(err, errUnchanged) {
		return &cmd, nil
	}
	if errors.Is(err, store.ErrContended) {
		return nil, fmt.Errorf("%w: %w", ErrContended, err)
	}
	if err != nil {
		return nil, err
	}
	return &cmd, nil
}
