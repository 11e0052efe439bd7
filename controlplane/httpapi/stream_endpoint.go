package httpapi

import (
	"context"
	"time"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/channels"
	"github.com/svcplatform/svc/controlplane/engines"
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
	engines  *engines.Service
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

func (e *streamEndpoints) ListStreamPlayers(ctx context.Context, r contract.ListStreamPlayersRequestObject) (contract.ListStreamPlayersResponseObject, error) {
	rctx := requestContext(ctx)
	var hosts []*nodes.Record
	if id := deref(r.Params.MediaServerId, ""); id != "" {
		rec, err := e.nodes.Resolve(rctx, "", id)
		if err != nil {
			return nil, err
		}
		hosts = append(hosts, rec)
	} else {
		all, err := e.nodes.List(rctx)
		if err != nil {
			return nil, err
		}
		for _, rec := range all {
			if rec.Status == nodes.StatusOnline {
				hosts = append(hosts, rec)
			}
		}
	}
	found, unreachable := e.engines.Players(rctx, hosts,
		agentapi.PlayerFilter{App: deref(r.Params.App, ""), Stream: deref(r.Params.Stream, ""), LeaseID: deref(r.Params.LeaseId, "")})
	out := contract.ListStreamPlayers200JSONResponse{Rows: []contract.StreamPlayer{}, Unreachable: []struct {
		Error         string `json:"error"`
		MediaServerId string `json:"mediaServerId"`
	}{}}
	for _, u := range unreachable {
		out.Unreachable = append(out.Unreachable, struct {
			Error         string `json:"error"`
			MediaServerId string `json:"mediaServerId"`
		}{Error: u.Err.Error(), MediaServerId: u.MediaServerID})
	}
	for _, h := range found {
		for _, p := range h.Players {
			cp := contract.StreamPlayer{PlayerId: p.ID, MediaServerId: h.MediaServerID, App: p.App, StreamId: p.Stream, Protocol: p.Protocol,
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
	}
	return out, nil
}

// toProxyCommand renders where a proxy start or stop ended.
func toProxyCommand(c engines.ProxyCommand) contract.StreamProxyCommand {
	out := contract.StreamProxyCommand{ProxyId: c.ID}
	if c.Outcome.Node != nil {
		out.MediaServerId = c.Outcome.Node.MediaServerID
	}
	if c.Outcome.Command != nil {
		out.NodeCommandId, out.State = c.Outcome.Command.CommandID, c.Outcome.Command.Status
	}
	if c.Failure != nil {
		msg := c.Failure.Error()
		out.Error = &msg
	}
	return out
}

func (e *streamEndpoints) StartStreamProxy(ctx context.Context, r contract.StartStreamProxyRequestObject) (contract.StartStreamProxyResponseObject, error) {
	ctx = requestContext(ctx)
	b := r.Body
	transport := ""
	if b.Transport != nil {
		transport = string(*b.Transport)
	}
	c, err := e.engines.StartProxy(ctx, actor(ctx).Actor, e.channels, deref(b.MediaServerId, ""), deref(b.Vhost, ""), b.App, b.Stream, b.Url, transport)
	if err != nil {
		return nil, err
	}
	return contract.StartStreamProxy200JSONResponse(toProxyCommand(c)), nil
}

func (e *streamEndpoints) StopStreamProxy(ctx context.Context, r contract.StopStreamProxyRequestObject) (contract.StopStreamProxyResponseObject, error) {
	ctx = requestContext(ctx)
	b := r.Body
	c, err := e.engines.StopProxy(ctx, actor(ctx).Actor, e.channels, deref(b.MediaServerId, ""), deref(b.Vhost, ""), b.App, b.Stream)
	if err != nil {
		return nil, err
	}
	return contract.StopStreamProxy200JSONResponse(toProxyCommand(c)), nil
}

// smokeRequest turns a contract smoke test into the engine's request.
func smokeRequest(req contract.RtspSmokeTestRequest) engineapi.SmokeTestRequest {
	timeout := time.Duration(deref(req.TimeoutSeconds, 10)) * time.Second
	in := engineapi.SmokeTestRequest{URL: req.Url, TimeoutMs: int(timeout / time.Millisecond)}
	if req.Transport != nil {
		in.Transport = string(*req.Transport)
	}
	return in
}

// toSmokeResult renders a smoke test's answer; the URL is shown without
// its credentials.
func toSmokeResult(url string, t engines.SmokeTest) contract.RtspSmokeTestResult {
	out := contract.RtspSmokeTestResult{Url: engineapi.RedactURL(url)}
	if t.MediaServerID != "" {
		id := t.MediaServerID
		out.MediaServerId = &id
	}
	res := t.SmokeTestResult
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
	return out
}

func (e *streamEndpoints) RtspSmokeTest(ctx context.Context, r contract.RtspSmokeTestRequestObject) (contract.RtspSmokeTestResponseObject, error) {
	ctx = requestContext(ctx)
	t, err := e.engines.SmokeTestRTSP(ctx, actor(ctx).Actor, deref(r.Body.MediaServerId, ""), smokeRequest(*r.Body))
	if err != nil {
		return nil, err
	}
	return contract.RtspSmokeTest200JSONResponse(toSmokeResult(r.Body.Url, t)), nil
}

func (e *streamEndpoints) RtspSmokeTestBatch(ctx context.Context, r contract.RtspSmokeTestBatchRequestObject) (contract.RtspSmokeTestBatchResponseObject, error) {
	ctx = requestContext(ctx)
	ids, reqs := make([]string, len(r.Body.Items)), make([]engineapi.SmokeTestRequest, len(r.Body.Items))
	for i, item := range r.Body.Items {
		ids[i], reqs[i] = deref(item.MediaServerId, ""), smokeRequest(item)
	}
	tests, errs := e.engines.SmokeTestBatch(ctx, actor(ctx).Actor, ids, reqs)
	results := make([]contract.RtspSmokeTestResult, len(tests))
	for i := range tests {
		results[i] = toSmokeResult(r.Body.Items[i].Url, tests[i])
		if errs[i] != nil {
			// A test that could not run is a failed result of the batch.
			msg := errs[i].Error()
			results[i].Ok, results[i].Stage, results[i].Error = false, "dispatch", &msg
		}
	}
	return contract.RtspSmokeTestBatch200JSONResponse{Results: results}, nil
}
