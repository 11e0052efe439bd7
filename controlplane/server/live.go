package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/svcplatform/svc/controlplane/account"
	"github.com/svcplatform/svc/controlplane/apitoken"
	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/config"
	"github.com/svcplatform/svc/controlplane/enginehooks"
	"github.com/svcplatform/svc/controlplane/gb28181"
	"github.com/svcplatform/svc/controlplane/keyring"
	"github.com/svcplatform/svc/controlplane/mediaserver"
	"github.com/svcplatform/svc/controlplane/permission"
	"github.com/svcplatform/svc/controlplane/playback"
	"github.com/svcplatform/svc/controlplane/rtspauth"
	"github.com/svcplatform/svc/controlplane/session"
	"github.com/svcplatform/svc/controlplane/snapshots"
	"github.com/svcplatform/svc/controlplane/store/revcache"
	"github.com/svcplatform/svc/controlplane/store/sqlitefsm"
	"github.com/svcplatform/svc/controlplane/streams"
	"github.com/svcplatform/svc/controlplane/talk"
	"github.com/svcplatform/svc/shared/agentapi"
	"github.com/svcplatform/svc/shared/engineapi"
	"go.uber.org/zap"
)

// ownerFunc is what a token's owner may do now (see Start).
type ownerFunc = apitoken.OwnerFunc

// startLive assembles the live path: stream sessions from the engines'
// reports, playback grants and their tickets, the answers to the engines'
// hooks and the leader's stream dispatcher.
func (s *Server) startLive(cfg config.Config, keys *keyring.Keyring, tokens *apitoken.Service, owner ownerFunc, rtspCreds *rtspauth.Service) {
	node := s.Node
	// The caches of the hooks' answers follow the areas their values come
	// from, not every write: the hook inbox's own writes leave them warm.
	st := node.State()
	tokensRev := areaRevision(st, append(tokenAreas, session.SessionsPrefix)...)
	s.RTSPAuth = rtspCreds
	s.Streams = &streams.Service{Store: node, Reader: node.State(), Channels: s.Channels, NodeID: cfg.NodeID}
	s.Playback = &playback.Service{Store: node, Reader: node.State(), MACKeys: keys.SubKeys("playback-ticket"),
		Streams: s.Streams, Media: streams.MediaURLs{Nodes: s.agents.nodes}, Grants: permission.Grants,
		Tokens: grantState(
			tokenState(tokens, owner, tokensRev),
			s.Sessions,
		), TokensRevision: tokensRev, Cutter: leaseCutter{servers: s.agents.servers}, MaxLinkSeconds: cfg.PlaybackMaxLinkSeconds,
		Revision: areaRevision(st, playback.LeasesPrefix), Catchup: node.LinearizableBarrier, Codecs: s.Streams.Codecs}
	s.Snapshots = &snapshots.Service{Store: node, Channels: s.Channels, Playback: s.Playback, MACKeys: keys.SubKeys("snapshot-ticket"),
		Log: s.Log.Named("snapshots")}
	s.startRecording(cfg)
	s.startRooms(cfg, keys)
	s.Hooks = enginehooks.New(enginehooks.Deps{Events: s.Events, Streams: s.Streams, Playback: s.Playback, Channels: s.Channels, RTSPAuth: rtspCreds,
		Recording: s.Recording, Rooms: s.Rooms, Store: node, Log: s.Log.Named("hooks"), RTPServerTimeout: s.rtpServerTimeout})
	s.streamDispatcher = &streams.Dispatcher{Channels: s.Channels, Nodes: s.agents.nodes, Presence: s.agents.presence,
		Commands: s.agents.commands, Log: s.Log.Named("streams")}
	if s.GB28181 != nil {
		s.streamDispatcher.GB, s.streamDispatcher.GBRTPTimeout, s.streamDispatcher.Store = s.GB28181, cfg.GB28181RTPTimeout, node
		s.gbPlayback = &streams.GBPlayback{Store: node, Nodes: s.agents.nodes, Presence: s.agents.presence, Commands: s.agents.commands,
			GB: s.GB28181, NodeID: cfg.NodeID, Log: s.Log.Named("gb28181"), RTPTimeout: cfg.GB28181RTPTimeout,
			EndLeases: func(ctx context.Context, sessionID, mediaServerID, reason string) error {
				return s.Playback.EndResourceLeases(ctx, playback.KindGBPlayback, sessionID, mediaServerID, reason)
			}}
		// Talk senders send from the SIP server's address, the one devices
		// already reach.
		host, _, _ := net.SplitHostPort(s.GB28181.UDPAddr().String())
		s.talk = &talk.Service{Log: s.Log.Named("talk"), BindIP: host, NodeID: cfg.NodeID, Record: s.recordTalk}
		// A device's BYE or end of file ends its playback session or
		// releases its talk session's media, whichever the Call-ID names.
		playback, talks := s.gbPlayback, s.talk
		s.GB28181.OnMediaEnd(func(callID, why string) {
			playback.MediaEnded(callID, why)
			talks.ReleaseByRef(callID, why)
		})
		s.GB28181.OnDeviceOffline(func(id gb28181.DeviceID, why string) { talks.ReleaseDevice("gb28181", string(id), why) })
	}
	s.streamReconciler = &streams.Reconciler{Store: node, Sessions: s.Streams, Channels: s.Channels, Nodes: s.agents.nodes,
		Presence: s.agents.presence, Servers: s.agents.servers, Log: s.Log.Named("streams")}
}

// tokenAreas hold what an API token's state depends on: the token, its
// owner and the owner's roles.
var tokenAreas = []string{apitoken.KeyPrefix, account.UsersPrefix, account.RolesPrefix}

// areaRevision is a cache's revision: the store's area revision of the
// prefixes its values are read from.
func areaRevision(st *sqlitefsm.State, prefixes ...string) func() int64 {
	return func() int64 { return st.AreaRevision(prefixes...) }
}

// tokenState tells playback whether an API token is still valid and what
// it may do now: its own permissions within its owner's.
func tokenState(tokens *apitoken.Service, owner ownerFunc, revision func() int64) func(ctx context.Context, id string) (playback.TokenState, error) {
	// Cached for the store revision it was read at, like credentials: every
	// on_play of a lease asks about the same few tokens, and any committed
	// change (a revocation, a role change) makes every entry stale at once.
	var cache revcache.Cache[playback.TokenState]
	return func(ctx context.Context, id string) (playback.TokenState, error) {
		rev := revision()
		if ts, ok := cache.Get(id, rev); ok {
			if ts.ExpiresAt != nil && !time.Now().Before(*ts.ExpiresAt) {
				return playback.TokenState{}, nil // expired since it was read
			}
			return ts, nil
		}
		ts, err := readTokenState(ctx, tokens, owner, id)
		if err == nil {
			cache.Put(id, rev, ts)
		}
		return ts, err
	}
}

// grantState answers for the credential behind a playback grant: an API
// token, or the console session of the live view.
func grantState(
	tokens func(ctx context.Context, id string) (playback.TokenState, error),
	sessions *session.Service,
) func(ctx context.Context, id string) (playback.TokenState, error) {
	return func(ctx context.Context, id string) (playback.TokenState, error) {
		sid, ok := strings.CutPrefix(id, playback.SessionCredential)
		if !ok {
			return tokens(ctx, id)
		}
		r, err := sessions.Standing(ctx, sid, time.Now())
		if errors.Is(err, session.ErrSessionEnded) {
			return playback.TokenState{}, nil
		}
		if err != nil {
			return playback.TokenState{}, err
		}
		perms, err := sessions.Accounts.Permissions(ctx, r.User.RoleIDs)
		if err != nil {
			return playback.TokenState{}, err
		}
		end := r.Session.ExpiresAt
		return playback.TokenState{Valid: true, ExpiresAt: &end, Permissions: perms}, nil
	}
}

func readTokenState(ctx context.Context, tokens *apitoken.Service, owner ownerFunc, id string) (playback.TokenState, error) {
	rec, err := tokens.Get(ctx, id)
	if errors.Is(err, apitoken.ErrNotFound) {
		return playback.TokenState{}, nil
	}
	if err != nil {
		return playback.TokenState{}, err
	}
	if rec.State(time.Now()) != apitoken.StateActive {
		return playback.TokenState{}, nil
	}
	o, err := apitoken.ReadOwner(ctx, owner, rec)
	if err != nil {
		return playback.TokenState{}, err
	}
	perms, ok := apitoken.Effective(rec, o)
	if !ok {
		return playback.TokenState{}, nil
	}
	return playback.TokenState{Valid: true, ExpiresAt: rec.ExpiresAt, Permissions: perms}, nil
}

// leaseCutter ends a lease's players through the media server's agent.
type leaseCutter struct {
	servers *mediaserver.Service
}

// Cut implements playback.Cutter.
func (c leaseCutter) Cut(ctx context.Context, mediaServerID, leaseID string) error {
	_, err := c.servers.Do(ctx, mediaserver.Call{Target: mediaserver.Target{MediaServerID: mediaServerID}, Type: agentapi.TypeEnginePlayerKick,
		Payload: engineapi.KickRequest{LeaseID: leaseID}, Reason: "playback lease " + leaseID + " ended", Wait: 10 * time.Second,
		Actor: audit.Actor{Type: "system", ID: "playback"}}, nil)
	return err
}

// rtpServerTimeout ends the GB28181 session whose device stopped sending
// (ZLMediaKit's on_rtp_server_timeout): a live channel's goes Retrying and
// is INVITEd again by auto-recovery; a playback session ends, its RTP
// server closed, so nothing more can play.
func (s *Server) rtpServerTimeout(h engineapi.RTPServerTimeoutHook) {
	if h.App != streams.PlaybackApp {
		if s.streamDispatcher != nil {
			s.goBackground(func(ctx context.Context) { s.streamDispatcher.RTPServerTimeout(ctx, h) })
		}
		return
	}
	if s.gbPlayback == nil {
		return
	}
	s.goBackground(func(ctx context.Context) {
		err := s.gbPlayback.Stop(ctx, h.Stream, fmt.Sprintf("no media from the device for %d s (RTP server timeout)", h.TimeoutSeconds))
		if err != nil && !errors.Is(err, streams.ErrPlaybackEnded) && !errors.Is(err, streams.ErrPlaybackNotFound) {
			s.Log.Warn("ending a silent GB28181 playback session failed", zap.String("session", h.Stream), zap.Error(err))
		}
	})
}

// recordTalk writes what the talk service tells of a session into its
// owner record (talk.RecordState), in the background: it is told from SIP
// handlers and from shutdown, and a node cut off from the cluster cannot
// write (the leader's talk.EndNode then records the end). Not cancelled by
// shutdown, which releases the sessions after the background context is
// done and waits for this work before closing the store.
func (s *Server) recordTalk(sess talk.Session) {
	s.goBackground(func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := talk.RecordState(ctx, s.Node, sess, time.Now()); err != nil {
			s.Log.Info("recording a talk session's state failed", zap.String("session", sess.SessionID), zap.Error(err))
		}
	})
}

// goBackground runs work a hook starts and must not hold the hook's answer
// for: it gets the node's background context, and Shutdown waits for it as
// for the loops (hooks stop arriving before that wait).
func (s *Server) goBackground(fn func(ctx context.Context)) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		fn(s.bg)
	}()
}

// gbSessionEnders end the GB28181 sessions that depend on a control node
// or a device that is gone (the stale-holder loop calls them): live
// channels, playback sessions, and the talk sessions of a dead node.
func (s *Server) gbSessionEnders() []func(context.Context, gb28181.Gone) error {
	if s.GB28181 == nil {
		return nil
	}
	return []func(context.Context, gb28181.Gone) error{
		s.streamDispatcher.EndGB,
		s.gbPlayback.EndGB,
		func(ctx context.Context, gone gb28181.Gone) error {
			if gone.Node == "" {
				return nil
			}
			n, err := talk.EndNode(ctx, s.Node, gone.Node, gone.Reason, time.Now())
			if n > 0 {
				s.Log.Info("talk sessions of a gone control node ended", zap.String("node", gone.Node), zap.Int("sessions", n))
			}
			return err
		},
	}
}
