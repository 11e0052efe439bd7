package channels

import (
	"context"
	"fmt"

	"github.com/svcplatform/svc/controlplane/store"
)

// The operator's transitions of a channel. Each is one Txn that carries
// its runtime-log entries and, for start and stop, the stream command.
//
//	pool:    Pending --activate--> Active --return-to-pending--> Pending (stopped only)
//	desired: Stopped --start/retry--> Running --stop--> Stopped (+ auto-recovery paused)
//	pause:   auto-recovery paused until the next start or retry
//
// Start, retry and activation refuse pending and disabled channels.

// lastCommand reads the channel's last stream command, if any.
func (c *change) lastCommand(ch *Channel) (*StreamCommand, int64, error) {
	if ch.LastCommandID == "" {
		return nil, 0, nil
	}
	cmd, rev, err := c.s.getCommand(c.ctx, ch.LastCommandID)
	if err != nil {
		return nil, 0, fmt.Errorf("last command of channel %s: %w", ch.ChannelID, err)
	}
	return cmd, rev, nil
}

// command records a Pending stream command for ch. A Pending command of
// the other action, not yet dispatched, is canceled in the same Txn; an
// unfinished command of the same action is answered instead of a new one,
// so repeating a start or stop records nothing twice.
func (c *change) command(ch *Channel, action CommandAction) (*StreamCommand, bool, error) {
	last, rev, err := c.lastCommand(ch)
	if err != nil {
		return nil, false, err
	}
	if last != nil && last.Action == action && !last.State.Finished() {
		return last, false, nil
	}
	if last != nil && last.State == CommandPending {
		last.State, last.UpdatedAt, last.FinishedAt = CommandCanceled, c.now, &c.now
		last.Error = fmt.Sprintf("superseded by a %s request before it was dispatched", action)
		c.cmps = append(c.cmps, store.ModRevisionIs(commandKey(last.CommandID), rev))
		if err := c.add(putCommand(last)); err != nil {
			return nil, false, err
		}
		if err := c.log(ch.ChannelID, LogCommand, "command.canceled", string(CommandPending), string(CommandCanceled), last.Error, last.CommandID); err != nil {
			return nil, false, err
		}
	}
	cmd, err := newCommand(ch, action, c.actor, c.now)
	if err != nil {
		return nil, false, err
	}
	if action == ActionStart {
		cmd.GB = c.gb
	}
	if err := c.add(putCommand(cmd)); err != nil {
		return nil, false, err
	}
	ch.LastCommandID = cmd.CommandID
	return cmd, true, c.log(ch.ChannelID, LogCommand, "command.recorded", "", string(CommandPending), fmt.Sprintf("%s command recorded", action), cmd.CommandID)
}

func (c *change) setDesired(ch *Channel, d DesiredState, why string) error {
	if ch.DesiredState == d {
		return nil
	}
	from := ch.DesiredState
	ch.DesiredState = d
	return c.log(ch.ChannelID, LogState, "desired_state.changed", string(from), string(d), why, "")
}

func (c *change) setActual(ch *Channel, st ActualState, reason string) error {
	if ch.ActualState == st && ch.ActualStateReason == reason {
		return nil
	}
	from := ch.ActualState
	ch.ActualState, ch.ActualStateReason, ch.ActualStateAt = st, reason, c.now
	if from == st {
		return nil // same state, new reason: not worth a timeline entry
	}
	return c.log(ch.ChannelID, LogState, "actual_state.changed", string(from), string(st), reason, "")
}

func (c *change) setPaused(ch *Channel, paused bool, why string) error {
	if ch.AutoRecoveryPaused == paused {
		return nil
	}
	ch.AutoRecoveryPaused = paused
	if paused {
		ch.Retry.NextRetryAt = nil
		return c.log(ch.ChannelID, LogState, "auto_recovery.paused", "", "", why, "")
	}
	return c.log(ch.ChannelID, LogState, "auto_recovery.resumed", "", "", why, "")
}

func startable(ch *Channel) error {
	if ch.Activation == ActivationPending {
		return fmt.Errorf("%w: activate it first (POST /api/v2/channels/%s/activate)", ErrPending, ch.ChannelID)
	}
	if !ch.Enabled {
		return fmt.Errorf("%w: enable it first (PUT /api/v2/channels/%s with enabled true)", ErrDisabled, ch.ChannelID)
	}
	return nil
}

// start makes ch desired Running with a start command; shared by Start,
// Retry and the automatic start of auto-pull channels. A start command
// still in flight is answered instead of a new one, but the pause and the
// schedule are cleared either way.
func (c *change) start(ch *Channel, why string) (*StreamCommand, error) {
	before := len(c.ops)
	cmd, _, err := c.command(ch, ActionStart)
	if err != nil {
		return nil, err
	}
	if err := c.setDesired(ch, DesiredRunning, why); err != nil {
		return nil, err
	}
	if err := c.setPaused(ch, false, why); err != nil {
		return nil, err
	}
	ch.Retry.NextRetryAt = nil
	if ch.ActualState != ActualOnline {
		if err := c.setActual(ch, ActualStarting, why); err != nil {
			return nil, err
		}
	}
	if len(c.ops) > before {
		ch.UpdatedAt, ch.UpdatedBy = c.now, who(c.actor)
	}
	return cmd, nil
}

// autoStart starts an auto-pull (autoVideo) channel as soon as it is
// active and enabled, unless an operator paused or stopped it.
func (s *Service) autoStart(ch *Channel, c *change) error {
	if ch.Activation != ActivationActive || !ch.Enabled || !ch.AutoVideo || ch.DesiredState == DesiredRunning || ch.AutoRecoveryPaused {
		return nil
	}
	_, err := c.start(ch, "auto-pull channel (autoVideo) started automatically")
	return err
}

// Start asks for the channel's stream: desired Running, auto-recovery
// resumed, a Pending start command. Repeating it while that command is
// unfinished answers the same command.
func (s *Service) Start(ctx context.Context, a Actor, id ChannelID) (*Channel, *StreamCommand, error) {
	return s.StartGB(ctx, a, id, nil)
}

// StartGB is Start with how a GB28181 channel's device is INVITEd (nil:
// over UDP, waiting 10 s); a non-GB28181 channel refuses options.
func (s *Service) StartGB(ctx context.Context, a Actor, id ChannelID, gb *GBStart) (*Channel, *StreamCommand, error) {
	var cmd *StreamCommand
	ch, err := s.write(ctx, a, id, false, func(ch *Channel, c *change) error {
		if err := startable(ch); err != nil {
			return err
		}
		if gb != nil && ch.Protocol != ProtocolGB28181 {
			return fmt.Errorf("%w: channel %s is not a GB28181 channel", ErrInvalid, ch.ChannelID)
		}
		c.gb = gb
		var err error
		cmd, err = c.start(ch, "start requested")
		if err == nil && len(c.ops) == 0 {
			return errUnchanged
		}
		return err
	})
	return ch, cmd, err
}

// Stop ends the channel's stream and pauses auto-recovery (contract B,
// third-party rule 5), so an auto-pull channel is not pulled again.
func (s *Service) Stop(ctx context.Context, a Actor, id ChannelID) (*Channel, *StreamCommand, error) {
	var cmd *StreamCommand
	ch, err := s.write(ctx, a, id, false, func(ch *Channel, c *change) error {
		var err error
		var created bool
		if cmd, created, err = c.command(ch, ActionStop); err != nil {
			return err
		}
		if !created && ch.DesiredState == DesiredStopped && ch.AutoRecoveryPaused {
			return errUnchanged
		}
		if err := c.setDesired(ch, DesiredStopped, "stop requested"); err != nil {
			return err
		}
		if err := c.setPaused(ch, true, "stopped by request; auto-recovery stays paused until the next start"); err != nil {
			return err
		}
		ch.Retry.NextRetryAt = nil
		switch ch.ActualState {
		case ActualRetrying, ActualPaused, ActualFailed:
			// Nothing is pulling between attempts.
			if err := c.setActual(ch, ActualOffline, "stopped by request"); err != nil {
				return err
			}
		}
		ch.UpdatedAt, ch.UpdatedBy = c.now, who(a)
		return nil
	})
	return ch, cmd, err
}

// Pause pauses auto-recovery: no retry is scheduled until the next start
// or retry. A running stream keeps running.
func (s *Service) Pause(ctx context.Context, a Actor, id ChannelID) (*Channel, error) {
	return s.write(ctx, a, id, false, func(ch *Channel, c *change) error {
		if ch.AutoRecoveryPaused {
			return errUnchanged
		}
		if err := c.setPaused(ch, true, "auto-recovery paused by request"); err != nil {
			return err
		}
		if ch.ActualState == ActualRetrying {
			if err := c.setActual(ch, ActualPaused, "auto-recovery paused by request"); err != nil {
				return err
			}
		}
		ch.UpdatedAt, ch.UpdatedBy = c.now, who(a)
		return nil
	})
}

// Retry clears the backoff and the pause and starts the channel now.
func (s *Service) Retry(ctx context.Context, a Actor, id ChannelID) (*Channel, *StreamCommand, error) {
	var cmd *StreamCommand
	ch, err := s.write(ctx, a, id, false, func(ch *Channel, c *change) error {
		if err := startable(ch); err != nil {
			return err
		}
		if ch.Retry.Attempts > 0 || ch.Retry.NextRetryAt != nil {
			msg := fmt.Sprintf("backoff cleared after %d failed attempt(s)", ch.Retry.Attempts)
			ch.Retry = RetryState{LastError: ch.Retry.LastError, LastErrorAt: ch.Retry.LastErrorAt}
			if err := c.log(ch.ChannelID, LogState, "backoff.cleared", "", "", msg, ""); err != nil {
				return err
			}
		}
		var err error
		cmd, err = c.start(ch, "retry requested")
		if err == nil && len(c.ops) == 0 {
			return errUnchanged
		}
		return err
	})
	return ch, cmd, err
}

// Activate takes a channel out of the pending-activation pool; an
// auto-pull channel starts.
func (s *Service) Activate(ctx context.Context, a Actor, id ChannelID) (*Channel, error) {
	return s.write(ctx, a, id, false, func(ch *Channel, c *change) error {
		if ch.Activation != ActivationPending {
			return fmt.Errorf("%w: it is already active", ErrNotPending)
		}
		ch.Activation, ch.UpdatedAt, ch.UpdatedBy = ActivationActive, c.now, who(a)
		if err := c.log(ch.ChannelID, LogActivation, "channel.activated", string(ActivationPending), string(ActivationActive), "activated", ""); err != nil {
			return err
		}
		return s.autoStart(ch, c)
	})
}

// ReturnToPending puts a stopped channel back into the pending pool.
func (s *Service) ReturnToPending(ctx context.Context, a Actor, id ChannelID) (*Channel, error) {
	return s.write(ctx, a, id, false, func(ch *Channel, c *change) error {
		if ch.Activation == ActivationPending {
			return fmt.Errorf("%w: it is already there", ErrPending)
		}
		if ch.Running() {
			return fmt.Errorf("%w: a channel that is %s/%s cannot return to the pending pool; stop it first (POST /api/v2/channels/%s/stop)",
				ErrRunning, ch.DesiredState, ch.ActualState, ch.ChannelID)
		}
		ch.Activation, ch.UpdatedAt, ch.UpdatedBy = ActivationPending, c.now, who(a)
		ch.Retry = RetryState{}
		return c.log(ch.ChannelID, LogActivation, "channel.returned_to_pending", string(ActivationActive), string(ActivationPending), "returned to the pending-activation pool", "")
	})
}
