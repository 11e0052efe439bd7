package agent

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/svcplatform/svc/agent/commands"
	"github.com/svcplatform/svc/shared/agentapi"
	"github.com/svcplatform/svc/shared/engineapi"
)

// engineRelays are the node commands answered by the engine's control API:
// each maps one command type to one control call, so the set of things the
// control plane can make the engine do stays a reviewed whitelist.
func (a *agent) engineRelays() map[string]commands.Handler {
	call := a.engine.Call
	return map[string]commands.Handler{
		agentapi.TypeEngineProxyAdd: with(func(ctx context.Context, in agentapi.ProxyAdd) (any, error) {
			req := in.AddProxyRequest
			if err := a.secretURL(ctx, in.SecretURL, &req.URL); err != nil {
				return nil, err
			}
			var out engineapi.ProxyInfo
			return out, call(ctx, http.MethodPost, engineapi.PathProxies, req, &out)
		}),
		agentapi.TypeEngineProxyRemove: with(func(ctx context.Context, in agentapi.ProxyRef) (any, error) {
			if in.ID == "" {
				return nil, commands.Errorf(agentapi.CodeInvalid, "a proxy id is required")
			}
			return nil, call(ctx, http.MethodDelete, strings.Replace(engineapi.PathProxy, "{id}", url.PathEscape(in.ID), 1), nil, nil)
		}),
		agentapi.TypeEngineRTPServerOpen: with(func(ctx context.Context, in engineapi.OpenRTPServerRequest) (any, error) {
			var out engineapi.RTPServerInfo
			return out, call(ctx, http.MethodPost, engineapi.PathRTPServers, in, &out)
		}),
		agentapi.TypeEngineRTPServerClose: with(func(ctx context.Context, in agentapi.RTPServerRef) (any, error) {
			if in.ID == "" {
				return nil, commands.Errorf(agentapi.CodeInvalid, "an RTP server id is required")
			}
			return nil, call(ctx, http.MethodDelete, strings.Replace(engineapi.PathRTPServer, "{id}", url.PathEscape(in.ID), 1), nil, nil)
		}),
		agentapi.TypeEngineProxyList: noPayload(func(ctx context.Context) (any, error) {
			var out engineapi.ProxyList
			return out, call(ctx, http.MethodGet, engineapi.PathProxies, nil, &out)
		}),
		agentapi.TypeEngineStreamList: with(func(ctx context.Context, f agentapi.StreamFilter) (any, error) {
			var out engineapi.StreamList
			q := url.Values{}
			for k, v := range map[string]string{"vhost": f.Vhost, "app": f.App, "stream": f.Stream} {
				if v != "" {
					q.Set(k, v)
				}
			}
			return out, call(ctx, http.MethodGet, withQuery(engineapi.PathStreams, q), nil, &out)
		}),
		agentapi.TypeEngineStreamClose: with(func(ctx context.Context, in engineapi.CloseStreamRequest) (any, error) {
			return nil, call(ctx, http.MethodPost, engineapi.PathStreamClose, in, nil)
		}),
		agentapi.TypeEnginePlayerList: with(func(ctx context.Context, f agentapi.PlayerFilter) (any, error) {
			var out engineapi.PlayerList
			q := url.Values{}
			for k, v := range map[string]string{"app": f.App, "stream": f.Stream, "protocol": f.Protocol, "leaseId": f.LeaseID} {
				if v != "" {
					q.Set(k, v)
				}
			}
			return out, call(ctx, http.MethodGet, withQuery(engineapi.PathPlayers, q), nil, &out)
		}),
		agentapi.TypeEnginePlayerKick: with(func(ctx context.Context, in engineapi.KickRequest) (any, error) {
			var out engineapi.KickResult
			return out, call(ctx, http.MethodPost, engineapi.PathPlayersKick, in, &out)
		}),
		agentapi.TypeEngineSmokeTestRTSP: with(func(ctx context.Context, in agentapi.SmokeTest) (any, error) {
			req := in.SmokeTestRequest
			if err := a.secretURL(ctx, in.SecretURL, &req.URL); err != nil {
				return nil, err
			}
			var out engineapi.SmokeTestResult
			return out, call(ctx, http.MethodPost, engineapi.PathSmokeTestRTSP, req, &out)
		}),
		agentapi.TypeEngineRecordStart: with(func(ctx context.Context, in engineapi.StartRecordingRequest) (any, error) {
			var out engineapi.RecordingInfo
			return out, call(ctx, http.MethodPost, engineapi.PathRecordings, in, &out)
		}),
		agentapi.TypeEngineRecordStop: with(func(ctx context.Context, in engineapi.StopRecordingRequest) (any, error) {
			var out engineapi.RecordingInfo
			return out, call(ctx, http.MethodPost, engineapi.PathRecordingStop, in, &out)
		}),
		agentapi.TypeEngineRecordDelete: with(func(ctx context.Context, in engineapi.DeleteRecordFilesRequest) (any, error) {
			var out engineapi.DeleteRecordFilesResult
			return out, call(ctx, http.MethodPost, engineapi.PathRecordingFilesDelete, in, &out)
		}),
		agentapi.TypeEngineRecordCutMerge: with(func(ctx context.Context, in engineapi.CutMergeRequest) (any, error) {
			var out engineapi.CutMergeResult
			return out, call(ctx, http.MethodPost, engineapi.PathRecordingCutMerge, in, &out)
		}),
		agentapi.TypeEngineRecordComposite: with(func(ctx context.Context, in engineapi.CompositeRequest) (any, error) {
			var out engineapi.CompositeResult
			return out, call(ctx, http.MethodPost, engineapi.PathRecordingComposite, in, &out)
		}),
		agentapi.TypeEngineRecordScan: noPayload(func(ctx context.Context) (any, error) {
			var out engineapi.RecordFileScanResult
			return out, call(ctx, http.MethodPost, engineapi.PathRecordingFilesScan, nil, &out)
		}),
		agentapi.TypeEngineRecordRootProbe: with(func(ctx context.Context, in engineapi.RootProbeRequest) (any, error) {
			in.Bind = false
			var out engineapi.RootProbe
			return out, call(ctx, http.MethodPost, engineapi.PathRecordingRootProbe, in, &out)
		}),
		agentapi.TypeEngineRecordRootValidate: with(func(ctx context.Context, in engineapi.RootProbeRequest) (any, error) {
			in.Bind = true
			var out engineapi.RootProbe
			return out, call(ctx, http.MethodPost, engineapi.PathRecordingRootProbe, in, &out)
		}),
		agentapi.TypeEngineRecordFallbackRecover: with(func(ctx context.Context, in engineapi.FallbackRecoveryRequest) (any, error) {
			var out engineapi.FallbackRecoveryResult
			return out, call(ctx, http.MethodPost, engineapi.PathRecordingFallbackRecover, in, &out)
		}),
		agentapi.TypeEngineRecordBrowse: with(func(ctx context.Context, in engineapi.BrowseRequest) (any, error) {
			in.Create = false
			var out engineapi.BrowseResult
			return out, call(ctx, http.MethodPost, engineapi.PathRecordingBrowse, in, &out)
		}),
		agentapi.TypeEngineRecordMkdir: with(func(ctx context.Context, in engineapi.BrowseRequest) (any, error) {
			in.Create = true
			var out engineapi.BrowseResult
			return out, call(ctx, http.MethodPost, engineapi.PathRecordingBrowse, in, &out)
		}),
		agentapi.TypeEngineRecordList: noPayload(func(ctx context.Context) (any, error) {
			var out engineapi.RecordingList
			return out, call(ctx, http.MethodGet, engineapi.PathRecordings, nil, &out)
		}),
		agentapi.TypeEngineStats: noPayload(func(ctx context.Context) (any, error) {
			var out engineapi.Stats
			return out, call(ctx, http.MethodGet, engineapi.PathStats, nil, &out)
		}),
	}
}

// secretURL replaces *target with the full URL (credentials included) the
// control plane keeps sealed for the running command, when the payload
// says so. The URL goes only to the engine's loopback control API: it is
// neither logged nor journaled (the journal keeps results, not payloads).
func (a *agent) secretURL(ctx context.Context, mark agentapi.SecretURL, target *string) error {
	if !mark.SecretURL {
		return nil
	}
	cmd, ok := commands.Running(ctx)
	if !ok {
		return commands.Errorf(agentapi.CodeInternal, "no running command to fetch the source credentials for")
	}
	var resp agentapi.CommandSecretResponse
	if err := a.client.Post(ctx, agentapi.PathCommandSecret, agentapi.CommandSecretRequest{CommandID: cmd.CommandID, Attempt: cmd.Attempt}, &resp); err != nil {
		return commands.Errorf(agentapi.CodeUnavailable, "fetching the source credentials from the control plane: %v", err)
	}
	*target = resp.URL
	return nil
}

func withQuery(path string, q url.Values) string {
	if len(q) == 0 {
		return path
	}
	return path + "?" + q.Encode()
}

// merge joins handler sets; a type defined twice is a programming error.
func merge(sets ...map[string]commands.Handler) map[string]commands.Handler {
	out := map[string]commands.Handler{}
	for _, set := range sets {
		for k, h := range set {
			if _, dup := out[k]; dup {
				panic("agent: node command type " + k + " has two handlers")
			}
			out[k] = h
		}
	}
	return out
}
