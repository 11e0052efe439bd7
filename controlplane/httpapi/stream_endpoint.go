package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/audit"
	"github.com/svcplatform/svc/controlplane/channels"
	"github.com/svcplatform/svc/controlplane/mediaserver"
	"github.com/svcplatform/svc/controlplane/nodes"
	"github.com/svcplatform/svc/controlplane/streams"
	"github.com/svcplatform/svc/shared/agentapi"
	"github.com/svcplatform/svc/shared/engineapi"
)

// streamEndpoints serves the stream lifecycle commands, the stream
// sessions, the live player listing, the ad-hoc pull proxies and the
// third-party stream and media-server listings.
type streamEndpoints struct {
	channels *channels.Service
	streams  *streams.Service
	servers  *mediaserver.Service
	nodes    *nodes.Service
	// mediaServers answers the media-server listing (shared with
	// GET /api/v2/media-servers).
	mediaServers func(ctx context.Context, clusterID *string) (contract.MediaServerList, error)
}

func (e *streamEndpoints) ListStreamCommands(ctx context.Context, r contract.ListStreamCommandsRequestObject) (contract.ListStreamCommandsResponseObject, error) {
	q := channels.CommandQuery{ChannelID: channels.ChannelID(deref(r.Params.ChannelId, "")), MediaServerID: deref(r.Params.MediaServerId, ""),
		Page: int(deref(r.Params.Page, 1)), PageSize: int(deref(r.Params.PageSize, 50))}
	if r.Params.Action != nil {
		q.Action = channels.CommandAction(*r.Params.Action)
	}
	if r.Params.State != nil {
		q.State = channels.CommandState(*r.Params.State)
	}
	rows, total, err := e.channels.Commands(requestContext(ctx), q)
	if err != nil {
		return nil, err
	}
	out := contract.ListStreamCommands200JSONResponse{Page: int32(q.Page), PageSize: int32(q.PageSize), Total: total, Rows: []contract.StreamCommand{}}
	for i := range rows {
		out.Rows = append(out.Rows, toStreamCommand(&rows[i]))
	}
	return out, nil
}

func toSession(s *streams.Session) contract.StreamSession {
	out := contract.StreamSession{SessionId: s.SessionID, MediaServerId: s.MediaServerID, Vhost: s.Vhost, App: s.App, StreamId: s.Stream,
		State: contract.StreamSessionState(s.State), OnlineAt: s.OnlineAt, OfflineAt: s.OfflineAt, UpdatedAt: s.UpdatedAt}
	if s.ChannelID != "" {
		out.ChannelId = &s.ChannelID
	}
	if s.Origin != "" {
		out.Origin = &s.Origin
	}
	if s.State == streams.StateOnline {
		schemas := append([]string{}, s.Schemas...)
		out.Schemas = &schemas
		tracks := []contract.StreamTrack{}
		for _, t := range s.Tracks {
			ct := contract.StreamTrack{Kind: contract.StreamTrackKind(t.Kind), Codec: t.Codec}
			if t.Width > 0 {
				w, h := int32(t.Width), int32(t.Height)
				ct.Width, ct.Height = &w, &h
			}
			if t.FPS > 0 {
				f := t.FPS
				ct.Fps = &f
			}
			if t.SampleRate > 0 {
				sr, ch := int32(t.SampleRate), int32(t.Channels)
				ct.SampleRate, ct.Channels = &sr, &ch
			}
			tracks = append(tracks, ct)
		}
		out.Tracks = &tracks
	}
	return out
}

func (e *streamEndpoints) sessions(ctx context.Context, q streams.SessionQuery) (contract.StreamSessionList, error) {
	rows, total, err := e.streams.Sessions(ctx, q)
	if err != nil {
		return contract.StreamSessionList{}, err
	}
	out := contract.StreamSessionList{Page: int32(q.Page), PageSize: int32(q.PageSize), Total: total, Rows: []contract.StreamSession{}}
	for i := range rows {
		out.Rows = append(out.Rows, toSession(&rows[i]))
	}
	return out, nil
}

func sessionState(s *contract.StreamSessionState) string {
	if s == nil {
		return ""
	}
	return string(*s)
}

func (e *streamEndpoints) ListStreamSessions(ctx context.Context, r contract.ListStreamSessionsRequestObject) (contract.ListStreamSessionsResponseObject, error) {
	out, err := e.sessions(requestContext(ctx), streams.SessionQuery{MediaServerID: deref(r.Params.MediaServerId, ""), Stream: deref(r.Params.Stream, ""),
		State: sessionState(r.Params.State), ChannelID: deref(r.Params.ChannelId, ""), Page: int(deref(r.Params.Page, 1)), PageSize: int(deref(r.Params.PageSize, 50))})
	return contract.ListStreamSessions200JSONResponse(out), err
}

func (e *streamEndpoints) ListThirdPartyStreams(ctx context.Context, r contract.ListThirdPartyStreamsRequestObject) (contract.ListThirdPartyStreamsResponseObject, error) {
	out, err := e.sessions(requestContext(ctx), streams.SessionQuery{MediaServerID: deref(r.Params.MediaServerId, ""), Stream: deref(r.Params.StreamId, ""),
		State: sessionState(r.Params.State), Page: int(deref(r.Params.Page, 1)), PageSize: int(deref(r.Params.PageSize, 50))})
	return contract.ListThirdPartyStreams200JSONResponse(out), err
}

func (e *streamEndpoints) ListThirdPartyMediaServers(
	ctx context.Context,
	r contract.ListThirdPartyMediaServersRequestObject,
) (contract.ListThirdPartyMediaServersResponseObject, error) {
	all, err := e.mediaServers(requestContext(ctx), r.Params.ClusterId)
	if err != nil {
		return nil, err
	}
	page, size := int(deref(r.Params.Page, 1)), int(deref(r.Params.PageSize, 50))
	from := min((page-1)*size, len(all.Rows))
	rows := all.Rows[from:min(from+size, len(all.Rows))]
	return contract.ListThirdPartyMediaServers200JSONResponse{Page: int32(page), PageSize: int32(size), Total: int64(len(all.Rows)), Rows: rows}, nil
}

// playerWait bounds how long the listing waits for each media server.
const playerWait = 4 * time.Second

func (e *streamEndpoints) ListStreamPlayers(ctx context.Context, r contract.ListStreamPlayersRequestObject) (contract.ListStreamPlayersResponseObject, error) {
	rctx := requestContext(ctx)
	var targets []*nodes.Record
	if id := deref(r.Params.MediaServerId, ""); id != "" {
		rec, err := e.nodes.Resolve(rctx, "", id)
		if err != nil {
			return nil, err
		}
		targets = append(targets, rec)
	} else {
		all, err := e.nodes.List(rctx)
		if err != nil {
			return nil, err
		}
		for _, rec := range all {
			if rec.Status == nodes.StatusOnline {
				targets = append(targets, rec)
			}
		}
	}
	filter := agentapi.PlayerFilter{App: deref(r.Params.App, ""), Stream: deref(r.Params.Stream, ""), LeaseID: deref(r.Params.LeaseId, "")}
	out := contract.ListStreamPlayers200JSONResponse{Rows: []contract.StreamPlayer{}, Unreachable: []struct {
		Error         string `json:"error"`
		MediaServerId string `json:"mediaServerId"`
	}{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, rec := range targets {
		wg.Add(1)
		go func(rec *nodes.Record) {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(rctx, playerWait)
			defer cancel()
			var list engineapi.PlayerList
			_, err := e.servers.Do(cctx, mediaserver.Call{Target: mediaserver.Target{NodeID: rec.NodeID}, Type: agentapi.TypeEnginePlayerList,
				Payload: filter, Read: true, Actor: audit.Actor{Type: "system", ID: "player-listing"}}, &list)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				out.Unreachable = append(out.Unreachable, struct {
					Error         string `json:"error"`
					MediaServerId string `json:"mediaServerId"`
				}{Error: err.Error(), MediaServerId: rec.MediaServerID})
				return
			}
			for _, p := range list.Players {
				cp := contract.StreamPlayer{PlayerId: p.ID, MediaServerId: rec.MediaServerID, App: p.App, StreamId: p.Stream, Protocol: p.Protocol,
					RemoteAddr: p.RemoteAddr, Bytes: int64(p.Bytes), Frames: int64(p.Frames), DroppedFrames: int64(p.Dropped), StartedAt: p.StartedAt}
				if p.Vhost != "" {
					v := p.Vhost
					cp.Vhost = &v
				}
				if p.LeaseID != "" {
					l := p.LeaseID
					cp.LeaseId = &l
				}
				out.Rows = append(out.Rows, cp)
			}
		}(rec)
	}
	wg.Wait()
	return out, nil
}

// proxyID names an ad-hoc proxy by its path, so a start is idempotent and a
// stop needs only the path.
func proxyID(vhost, app, stream string) string {
	if vhost == "" {
		vhost = channels.DefaultVhost
	}
	return "proxy:" + vhost + "/" + app + "/" + stream
}

// proxyWait bounds how long start-proxy and stop-proxy wait for the agent.
const proxyWait = 10 * time.Second

func (e *streamEndpoints) proxyCall(ctx context.Context, mediaServerID, vhost, app, stream, typ string, payload any) (contract.StreamProxyCommand, error) {
	if _, err := e.channels.ByStream(ctx, vhost, app, stream); err == nil {
		return contract.StreamProxyCommand{}, &Error{Status: http.StatusConflict, Code: "channel_stream_conflict", Retryable: retryable(false),
			Message: fmt.Sprintf("%s/%s belongs to a channel; start or stop the channel instead", app, stream)}
	} else if !errors.Is(err, channels.ErrNotFound) {
		return contract.StreamProxyCommand{}, err
	}
	a := actor(ctx)
	o, err := e.servers.Do(ctx, mediaserver.Call{Target: mediaserver.Target{MediaServerID: mediaServerID}, Type: typ, Payload: payload,
		Reason: typ + " " + app + "/" + stream, Actor: a.Actor, Wait: proxyWait}, nil)
	out := contract.StreamProxyCommand{ProxyId: proxyID(vhost, app, stream)}
	if o.Node != nil {
		out.MediaServerId = o.Node.MediaServerID
	}
	if o.Command != nil {
		out.NodeCommandId, out.State = o.Command.CommandID, o.Command.Status
	}
	var ce *mediaserver.CommandError
	if errors.As(err, &ce) && (ce.Code == engineapi.CodeProxyNotFound || ce.Code == engineapi.CodeProxyExists) {
		// Stopping a stopped proxy, or starting a running one, converges.
		return out, nil
	}
	if err != nil {
		if o.Command == nil {
			return out, err
		}
		msg := err.Error()
		out.Error = &msg
	}
	return out, nil
}

func (e *streamEndpoints) StartStreamProxy(ctx context.Context, r contract.StartStreamProxyRequestObject) (contract.StartStreamProxyResponseObject, error) {
	b := r.Body
	vhost := deref(b.Vhost, "")
	transport := ""
	if b.Transport != nil {
		transport = string(*b.Transport)
	}
	req := engineapi.AddProxyRequest{ID: proxyID(vhost, b.App, b.Stream), URL: b.Url, Vhost: vhost, App: b.App, Stream: b.Stream, Transport: transport,
		Retry: engineapi.RetryPolicy{InitialBackoff: engineapi.Duration(time.Second), MaxBackoff: engineapi.Duration(30 * time.Second)}}
	out, err := e.proxyCall(requestContext(ctx), deref(b.MediaServerId, ""), vhost, b.App, b.Stream, agentapi.TypeEngineProxyAdd, req)
	if err != nil {
		return nil, err
	}
	return contract.StartStreamProxy200JSONResponse(out), nil
}

func (e *streamEndpoints) StopStreamProxy(ctx context.Context, r contract.StopStreamProxyRequestObject) (contract.StopStreamProxyResponseObject, error) {
	b := r.Body
	vhost := deref(b.Vhost, "")
	out, err := e.proxyCall(requestContext(ctx), deref(b.MediaServerId, ""), vhost, b.App, b.Stream, agentapi.TypeEngineProxyRemove,
		agentapi.ProxyRef{ID: proxyID(vhost, b.App, b.Stream)})
	if err != nil {
		return nil, err
	}
	return contract.StopStreamProxy200JSONResponse(out), nil
}

// smokeParallel bounds the tests of a batch running at once.
const smokeParallel = 4

func (e *streamEndpoints) smokeTest(ctx context.Context, req contract.RtspSmokeTestRequest) (contract.RtspSmokeTestResult, error) {
	timeout := time.Duration(deref(req.TimeoutSeconds, 10)) * time.Second
	in := engineapi.SmokeTestRequest{URL: req.Url, TimeoutMs: int(timeout / time.Millisecond)}
	if req.Transport != nil {
		in.Transport = string(*req.Transport)
	}
	a := actor(ctx)
	var res engineapi.SmokeTestResult
	o, err := e.servers.Do(ctx, mediaserver.Call{Target: mediaserver.Target{MediaServerID: deref(req.MediaServerId, "")}, Type: agentapi.TypeEngineSmokeTestRTSP,
		Payload: in, Reason: "RTSP smoke test", Actor: a.Actor, Wait: timeout + 10*time.Second}, &res)
	out := contract.RtspSmokeTestResult{Url: engineapi.RedactURL(req.Url)}
	if o.Node != nil {
		out.MediaServerId = &o.Node.MediaServerID
	}
	if err != nil {
		return out, err
	}
	if !o.Done {
		return out, &Error{Status: http.StatusServiceUnavailable, Code: "agent_timeout", Retryable: retryable(true),
			Message: "the media server did not finish the test in time; see node command " + o.Command.CommandID}
	}
	out.Ok, out.Stage, out.DurationMs = res.OK, res.Stage, res.DurationMs
	str := func(v string) *string {
		if v == "" {
			return nil
		}
		return &v
	}
	out.Error, out.Transport, out.VideoCodec, out.AudioCodec = str(res.Error), str(res.Transport), str(res.VideoCodec), str(res.AudioCodec)
	if res.OK {
		ttff, fps := res.TimeToFirstFrameMs, res.FPS
		w, h := int32(res.Width), int32(res.Height)
		out.TimeToFirstFrameMs, out.Fps, out.Width, out.Height = &ttff, &fps, &w, &h
	}
	return out, nil
}

func (e *streamEndpoints) RtspSmokeTest(ctx context.Context, r contract.RtspSmokeTestRequestObject) (contract.RtspSmokeTestResponseObject, error) {
	out, err := e.smokeTest(requestContext(ctx), *r.Body)
	if err != nil {
		return nil, err
	}
	return contract.RtspSmokeTest200JSONResponse(out), nil
}

func (e *streamEndpoints) RtspSmokeTestBatch(ctx context.Context, r contract.RtspSmokeTestBatchRequestObject) (contract.RtspSmokeTestBatchResponseObject, error) {
	rctx := requestContext(ctx)
	results := make([]contract.RtspSmokeTestResult, len(r.Body.Items))
	sem := make(chan struct{}, smokeParallel)
	var wg sync.WaitGroup
	for i, item := range r.Body.Items {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int, item contract.RtspSmokeTestRequest) {
			defer wg.Done()
			defer func() { <-sem }()
			res, err := e.smokeTest(rctx, item)
			if err != nil {
				msg := err.Error()
				res.Ok, res.Stage, res.Error = false, "dispatch", &msg
			}
			results[i] = res
		}(i, item)
	}
	wg.Wait()
	return contract.RtspSmokeTestBatch200JSONResponse{Results: results}, nil
}
