package channels

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/keyring"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/controlplane/store/query"
)

// Actor is who asks for a change; runtime-log entries and stream commands
// name it. Background workers use their own, e.g. {Type: "system", ID:
// "stream-dispatcher"}.
type Actor = audit.Actor

func who(a Actor) string {
	if a.Type == "" {
		return "system"
	}
	return a.Type + ":" + a.ID
}

// Service is the channel catalogue on the replicated store.
type Service struct {
	Store  store.Store
	Reader query.Reader
	Keys   *keyring.Keyring
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Backoff shapes auto-recovery retries; zero fields take defaults.
	Backoff Backoff
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now().UTC()
	}
	return time.Now().UTC()
}

// checkID refuses ids that cannot be a key segment, so a crafted id never
// reaches another record.
func checkID(id ChannelID) error {
	if id == "" || len(id) > 128 || strings.ContainsAny(string(id), "/\x00") {
		return fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	return nil
}

// Get reads one channel.
func (s *Service) Get(ctx context.Context, id ChannelID) (*Channel, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	kv, _, err := store.Get(ctx, s.Store, channelKey(id), store.Local)
	if err != nil {
		return nil, err
	}
	if kv == nil {
		return nil, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	return decodeChannel(kv)
}

func decodeChannel(kv *store.KeyValue) (*Channel, error) {
	c, err := store.Decode[Channel](kv)
	if err != nil {
		return nil, err
	}
	c.Revision = kv.ModRevision
	return &c, nil
}

// SourceURL returns the channel's source URL with its credentials, for the
// server-side code that starts a pull. It must never reach an API answer or
// a log line.
func (s *Service) SourceURL(ctx context.Context, id ChannelID) (string, error) {
	c, err := s.Get(ctx, id)
	if err != nil {
		return "", err
	}
	return fullURL(s.Keys, c)
}

// change collects the compares and operations of one write next to the
// channel record, and the checks that tell a lost race from a real conflict
// after a failed Txn.
type change struct {
	s      *Service
	ctx    context.Context
	actor  Actor
	now    time.Time
	cmps   []store.Compare
	ops    []store.Op
	checks []func() error
	// gb goes into a start command this change records.
	gb *GBStart
}

func (c *change) add(op store.Op, err error) error {
	if err != nil {
		return err
	}
	c.ops = append(c.ops, op)
	return nil
}

// log appends a runtime-log entry of channel ch.
func (c *change) log(ch ChannelID, kind LogKind, event, from, to, msg string, cmd CommandID) error {
	return c.add(LogOp(LogEntry{ChannelID: ch, Kind: kind, Event: event, From: from, To: to, Message: msg,
		CommandID: cmd, Actor: who(c.actor), TraceID: c.actor.TraceID, OccurredAt: c.now}))
}

// claimName takes vhost/app/stream for channel id: the claim key must be
// absent at commit.
func (c *change) claimName(id ChannelID, vhost, app, stream string) {
	k := streamNameKey(vhost, app, stream)
	c.cmps = append(c.cmps, store.Absent(k))
	c.ops = append(c.ops, store.Put(k, []byte(id)))
	c.checks = append(c.checks, func() error {
		kv, _, err := store.Get(c.ctx, c.s.Store, k, store.Local)
		if err != nil {
			return err
		}
		if kv != nil && string(kv.Value) != string(id) {
			return fmt.Errorf("%w: %s/%s/%s belongs to channel %s", ErrDuplicateStream, vhost, app, stream, kv.Value)
		}
		return nil
	})
}

func (c *change) releaseName(vhost, app, stream string) {
	c.ops = append(c.ops, store.Delete(streamNameKey(vhost, app, stream)))
}

// joinGroup guards that the channel's group exists and is not being
// deleted, by comparing the group's mod revision (see Group).
func (c *change) joinGroup(from, to GroupKey) error {
	if to == "" || to == from {
		return nil
	}
	g, rev, err := c.s.getGroup(c.ctx, to)
	if errors.Is(err, ErrGroupNotFound) || (err == nil && g.Deleting) {
		return fmt.Errorf("%w: groupKey %q names no channel group (or one being deleted); create it first", ErrInvalid, to)
	}
	if err != nil {
		return err
	}
	c.cmps = append(c.cmps, store.ModRevisionIs(groupKey(to), rev))
	return nil
}

// errUnchanged tells write that fn changed nothing, so nothing is written.
var errUnchanged = errors.New("unchanged")

// maxAttempts bounds optimistic retries of one write.
const maxAttempts = 8

// settle waits after a lost race until this node has the winner's state,
// plus a short random pause that grows with the attempt, so writers that
// collided do not collide again in lockstep.
func (s *Service) settle(ctx context.Context, rev int64, attempt int) error {
	if err := s.Store.WaitForRevision(ctx, rev); err != nil {
		return err
	}
	if attempt > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Duration(rand.Int64N(int64(attempt) * int64(time.Millisecond)))):
		}
	}
	return nil
}

// write runs fn on the current channel (nil when absent and create is
// set) and commits the result with everything fn added, guarded by the
// channel's mod revision; a lost race reruns fn on the newer state.
func (s *Service) write(ctx context.Context, a Actor, id ChannelID, create bool, fn func(ch *Channel, c *change) error) (*Channel, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	key := channelKey(id)
	for attempt := 0; attempt < maxAttempts; attempt++ {
		kv, _, err := store.Get(ctx, s.Store, key, store.Local)
		if err != nil {
			return nil, err
		}
		var ch *Channel
		var rev int64
		switch {
		case kv == nil && !create:
			return nil, fmt.Errorf("%w: %q", ErrNotFound, id)
		case kv != nil && create:
			return nil, fmt.Errorf("%w: channel id %q is taken", ErrInvalid, id)
		case kv != nil:
			if ch, err = decodeChannel(kv); err != nil {
				return nil, err
			}
			rev = kv.ModRevision
		}
		c := &change{s: s, ctx: ctx, actor: a, now: s.now(), cmps: []store.Compare{store.ModRevisionIs(key, rev)}}
		if ch == nil {
			ch = &Channel{ChannelID: id}
		}
		if err := fn(ch, c); errors.Is(err, errUnchanged) {
			return ch, nil
		} else if err != nil {
			return nil, err
		}
		then := c.ops
		if ch.ChannelID != "" { // a delete clears the id
			val, err := json.Marshal(ch)
			if err != nil {
				return nil, err
			}
			then = append([]store.Op{store.Put(key, val)}, then...)
		}
		resp, err := s.Store.Txn(ctx, store.TxnRequest{Compares: c.cmps, Then: then})
		if err != nil {
			return nil, err
		}
		if resp.Succeeded {
			ch.Revision = resp.Header.Revision
			return ch, nil
		}
		for _, check := range c.checks {
			if err := check(); err != nil {
				return nil, err
			}
		}
		if err := s.settle(ctx, resp.Header.Revision, attempt); err != nil {
			return nil, err
		}
	}
	return nil, fmt.Errorf("%w: %s", ErrContended, id)
}

// Create stores a new channel and answers it with its id.
func (s *Service) Create(ctx context.Context, a Actor, in Input) (*Channel, error) {
	uid, err := uuid.NewV7()
	if err != nil {
		return nil, err
	}
	id := ChannelID(uid.String())
	return s.write(ctx, a, id, true, func(ch *Channel, c *change) error {
		*ch = Channel{ChannelID: id, Config: defaultConfig(),
			Activation: ActivationActive, DesiredState: DesiredStopped, ActualState: ActualOffline, ActualStateAt: c.now,
			CreatedAt: c.now, CreatedBy: who(a), UpdatedAt: c.now, UpdatedBy: who(a)}
		if _, err := s.apply(ch, in, true); err != nil {
			return err
		}
		c.claimName(id, ch.Vhost, ch.App, ch.Stream)
		if err := c.joinGroup("", ch.GroupKey); err != nil {
			return err
		}
		if err := c.log(id, LogConfig, "channel.created", "", "", fmt.Sprintf("created %s channel %q as %s/%s/%s (%s)",
			ch.Protocol, ch.Name, ch.Vhost, ch.App, ch.Stream, ch.Activation), ""); err != nil {
			return err
		}
		return s.autoStart(ch, c)
	})
}

// apply copies the given fields of in onto ch, splitting and sealing the
// source credentials, validates the result and lists what changed.
func (s *Service) apply(ch *Channel, in Input, create bool) ([]string, error) {
	var changed []string
	set := func(name string, dst *string, v *string) {
		if v != nil && *v != *dst {
			*dst, changed = *v, append(changed, name)
		}
	}
	setBool := func(name string, dst *bool, v *bool) {
		if v != nil && *v != *dst {
			*dst, changed = *v, append(changed, name)
		}
	}
	set("name", &ch.Name, in.Name)
	set("description", &ch.Description, in.Description)
	if in.Protocol != nil && *in.Protocol != ch.Protocol {
		ch.Protocol, changed = *in.Protocol, append(changed, "protocol")
	}
	if in.RTSPTransport != nil && *in.RTSPTransport != ch.RTSPTransport {
		ch.RTSPTransport, changed = *in.RTSPTransport, append(changed, "rtspTransport")
	}
	if in.Vhost != nil && *in.Vhost == "" {
		v := DefaultVhost
		in.Vhost = &v
	}
	set("vhost", &ch.Vhost, in.Vhost)
	set("app", &ch.App, in.App)
	set("stream", &ch.Stream, in.Stream)
	set("mediaServerId", &ch.MediaServerID, in.MediaServerID)
	set("deviceId", &ch.DeviceID, in.DeviceID)
	set("deviceChannelId", &ch.DeviceChannelID, in.DeviceChannelID)
	if in.GroupKey != nil && *in.GroupKey != ch.GroupKey {
		ch.GroupKey, changed = *in.GroupKey, append(changed, "groupKey")
	}
	setBool("enabled", &ch.Enabled, in.Enabled)
	setBool("autoVideo", &ch.AutoVideo, in.AutoVideo)
	setBool("autoRecord", &ch.AutoRecord, in.AutoRecord)
	setBool("hasAudio", &ch.HasAudio, in.HasAudio)
	setBool("noPlayerBreak", &ch.NoPlayerBreak, in.NoPlayerBreak)
	setBool("hasPtz", &ch.HasPTZ, in.HasPTZ)
	setBool("isShareChannel", &ch.IsShareChannel, in.IsShareChannel)
	allowedBasic := ch.AllowBasicAuthOverPlainRTSP
	setBool("allowBasicAuthOverPlainRtsp", &ch.AllowBasicAuthOverPlainRTSP, in.AllowBasicAuthOverPlainRTSP)
	if create && in.Activation != nil {
		ch.Activation = *in.Activation
	}
	sent := false
	if in.SourceURL != nil {
		c, sentNow, err := s.setSource(ch, *in.SourceURL)
		if err != nil {
			return nil, err
		}
		changed, sent = append(changed, c...), sentNow
	}
	if ch.AllowBasicAuthOverPlainRTSP && !allowedBasic && ch.HasCredentials() && !sent {
		// Opting in exposes the stored password on the network; whoever
		// does it must know it.
		return nil, fmt.Errorf("%w: turning allowBasicAuthOverPlainRtsp on needs the source credentials sent again in sourceUrl", ErrInvalid)
	}
	return changed, ch.validate()
}

// Update changes the given fields. While a channel runs, its media
// identity (protocol, source, vhost/app/stream) and its enabled switch stay
// as they are: stop it first. Turning auto-pull on starts an active,
// enabled channel that no one stopped.
func (s *Service) Update(ctx context.Context, a Actor, id ChannelID, in Input) (*Channel, error) {
	return s.write(ctx, a, id, false, func(ch *Channel, c *change) error {
		old := *ch
		changed, err := s.apply(ch, in, false)
		if err != nil {
			return err
		}
		if len(changed) == 0 {
			return errUnchanged
		}
		if old.Running() {
			for _, f := range changed {
				switch f {
				case "protocol", "sourceUrl", "sourceCredentials", "allowBasicAuthOverPlainRtsp", "vhost", "app", "stream", "enabled":
					return fmt.Errorf("%w: %s cannot change while the channel is %s/%s; stop it first (POST /api/v2/channels/%s/stop)",
						ErrRunning, f, old.DesiredState, old.ActualState, id)
				}
			}
		}
		if old.Vhost != ch.Vhost || old.App != ch.App || old.Stream != ch.Stream {
			c.releaseName(old.Vhost, old.App, old.Stream)
			c.claimName(id, ch.Vhost, ch.App, ch.Stream)
		}
		if err := c.joinGroup(old.GroupKey, ch.GroupKey); err != nil {
			return err
		}
		ch.UpdatedAt, ch.UpdatedBy = c.now, who(a)
		if err := c.log(id, LogConfig, "channel.updated", "", "", "changed "+strings.Join(changed, ", "), ""); err != nil {
			return err
		}
		return s.autoStart(ch, c)
	})
}

// Delete removes a stopped channel with its stream-name claim; its runtime
// log and stream commands stay for the audit.
func (s *Service) Delete(ctx context.Context, a Actor, id ChannelID) error {
	_, err := s.write(ctx, a, id, false, func(ch *Channel, c *change) error {
		if ch.Running() {
			return fmt.Errorf("%w: a channel that is %s/%s cannot be deleted; stop it first (POST /api/v2/channels/%s/stop)",
				ErrRunning, ch.DesiredState, ch.ActualState, id)
		}
		c.ops = append(c.ops, store.Delete(channelKey(id)))
		c.releaseName(ch.Vhost, ch.App, ch.Stream)
		if err := c.log(id, LogConfig, "channel.deleted", "", "", fmt.Sprintf("deleted channel %q (%s/%s/%s)", ch.Name, ch.Vhost, ch.App, ch.Stream), ""); err != nil {
			return err
		}
		ch.ChannelID = "" // tells write not to put the record back
		return nil
	})
	return err
}

// ByStream finds the channel that owns vhost/app/stream; ErrNotFound when
// no channel claims it (a stream pushed without a channel, say).
func (s *Service) ByStream(ctx context.Context, vhost, app, stream string) (*Channel, error) {
	if vhost == "" {
		vhost = DefaultVhost
	}
	kv, _, err := store.Get(ctx, s.Store, streamNameKey(vhost, app, stream), store.Local)
	if err != nil {
		return nil, err
	}
	if kv == nil {
		return nil, fmt.Errorf("%w: no channel streams as %s/%s/%s", ErrNotFound, vhost, app, stream)
	}
	return s.Get(ctx, ChannelID(kv.Value))
}
