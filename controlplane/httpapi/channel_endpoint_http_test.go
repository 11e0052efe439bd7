package httpapi_test

import (
	"encoding/json"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/svcplatform/svc/test/testkit"
	"github.com/svcplatform/svc/test/testkit/controlnode"
)

// channelJSON is the part of a channel answer the tests look at.
type channelJSON struct {
	ChannelID            string `json:"channelId"`
	Name                 string `json:"name"`
	SourceURL            string `json:"sourceUrl"`
	HasSourceCredentials bool   `json:"hasSourceCredentials"`
	Vhost, App, Stream   string
	StreamID             string `json:"streamId"`
	GroupKey             string `json:"groupKey"`
	ActivationState      string `json:"activationState"`
	DesiredState         string `json:"desiredState"`
	ActualState          string `json:"actualState"`
	AutoRecoveryPaused   bool   `json:"autoRecoveryPaused"`
	LastCommandID        string `json:"lastCommandId"`
}

type channelPage struct {
	Page, PageSize int
	Total          int64
	Rows           []channelJSON
}

// caller is a token's view of a test server.
type caller struct {
	t   *testing.T
	ts  *controlnode.Node
	tok string
}

func (a caller) call(method, path string, body any) controlnode.Response {
	a.t.Helper()
	var raw []byte
	ct := ""
	if body != nil {
		switch b := body.(type) {
		case string:
			raw = []byte(b)
		default:
			raw, _ = json.Marshal(b)
		}
		ct = "application/json"
	}
	return a.ts.Do(method, path, a.tok, ct, raw)
}

func (a caller) create(body map[string]any) channelJSON {
	a.t.Helper()
	r := a.call("POST", "/api/v2/channels", body)
	if r.Status != 200 {
		a.t.Fatalf("create %v: %d %s", body, r.Status, r.Body)
	}
	var ch channelJSON
	r.JSON(a.t, &ch)
	return ch
}

func rtspChannel(stream string, extra ...any) map[string]any {
	b := map[string]any{"name": "Camera " + stream, "protocol": "rtsp", "app": "live", "stream": stream,
		"sourceUrl": "rtsp://viewer:Sup3rS3cret!@192.0.2.10:554/Streaming/" + stream}
	for i := 0; i+1 < len(extra); i += 2 {
		b[extra[i].(string)] = extra[i+1]
	}
	return b
}

func TestChannelCRUDFiltersAndPaging(t *testing.T) {
	ts := controlnode.StartNode(t, "ch", "", "")
	a := caller{t, ts, ts.Token("channels.view", "channels.manage")}
	if r := a.call("POST", "/api/v2/channels/groups", map[string]any{"groupKey": "gate", "name": "Gates"}); r.Status != 200 {
		t.Fatalf("group: %d %s", r.Status, r.Body)
	}
	first := a.create(rtspChannel("cam1", "groupKey", "gate", "mediaServerId", "ms-1", "autoRecord", true))
	if first.ChannelID == "" || first.SourceURL != "rtsp://***@192.0.2.10:554/Streaming/cam1" || !first.HasSourceCredentials ||
		first.Vhost != "__defaultVhost__" || first.StreamID != "cam1" || first.ActivationState != "Active" || first.DesiredState != "Stopped" || first.ActualState != "Offline" {
		t.Fatalf("created = %+v", first)
	}
	a.create(rtspChannel("cam2", "hasAudio", false, "description", "north entrance", "rtspTransport", "tcp"))
	a.create(rtspChannel("cam3", "vhost", "site-b", "enabled", false, "noPlayerBreak", true, "isShareChannel", true))
	a.create(map[string]any{"name": "Lobby PTZ", "protocol": "onvif", "app": "onvif", "stream": "lobby", "deviceId": "onvif-lobby",
		"hasPtz": true, "sourceUrl": "http://192.0.2.20/onvif/device_service"})
	yard := a.create(map[string]any{"name": "Yard", "protocol": "gb28181", "app": "rtp", "stream": "yard", "deviceId": "34020000001110000001",
		"deviceChannelId": "34020000001320000001", "autoVideo": true})
	// The auto-pull channel starts at once; the stream dispatcher fails its
	// start (no GB28181 integration yet) and it retries with backoff. Wait
	// for that, so the actual-state filter below sees a settled state.
	testkit.Eventually(t, 60*time.Second, "the yard channel's start to be dispatched", func() bool {
		var ch channelJSON
		a.call("GET", "/api/v2/channels/"+yard.ChannelID, nil).JSON(t, &ch)
		return ch.ActualState == "Retrying"
	})
	a.create(rtspChannel("cam4", "activationState", "Pending"))

	var got channelJSON
	a.call("GET", "/api/v2/channels/"+first.ChannelID, nil).JSON(t, &got)
	if got.ChannelID != first.ChannelID || got.GroupKey != "gate" {
		t.Fatalf("get = %+v", got)
	}
	checkErrorBody(t, a.call("GET", "/api/v2/channels/0190e0c6-0000-7000-8000-000000000000", nil), 404, "not_found")

	cases := []struct {
		query string
		want  []string // streams, in list order
	}{
		{"", []string{"cam1", "cam2", "cam3", "lobby", "yard", "cam4"}},
		{"protocol=rtsp", []string{"cam1", "cam2", "cam3", "cam4"}},
		{"protocol=gb28181", []string{"yard"}},
		{"mediaServerId=ms-1", []string{"cam1"}},
		{"deviceId=onvif-lobby", []string{"lobby"}},
		{"deviceChannelId=34020000001320000001", []string{"yard"}},
		{"vhost=site-b", []string{"cam3"}},
		{"app=rtp", []string{"yard"}},
		{"stream=cam2", []string{"cam2"}},
		{"streamId=cam2", []string{"cam2"}},
		{"enabled=false", []string{"cam3"}},
		{"autoVideo=true", []string{"yard"}},
		{"autoRecord=true", []string{"cam1"}},
		{"noPlayerBreak=true", []string{"cam3"}},
		{"hasAudio=false", []string{"cam2"}},
		{"hasPtz=true", []string{"lobby"}},
		{"isShareChannel=true", []string{"cam3"}},
		{"desiredState=Running", []string{"yard"}},
		{"actualState=Retrying", []string{"yard"}},
		{"actualState=Offline&protocol=rtsp&enabled=true", []string{"cam1", "cam2", "cam4"}},
		{"keyword=NORTH", []string{"cam2"}},
		{"keyword=lobby", []string{"lobby"}},
		{"keyword=100%25", nil},
		{"sourceUrl=" + url.QueryEscape("rtsp://viewer:Sup3rS3cret!@192.0.2.10:554/Streaming/cam3"), []string{"cam3"}},
		{"sourceUrl=192.0.2.20", []string{"lobby"}},
		{"groupKey=gate", []string{"cam1"}},
		{"activationState=Pending", []string{"cam4"}},
		{"pageSize=2&page=2", []string{"cam3", "lobby"}},
		{"pageSize=4&page=2", []string{"yard", "cam4"}},
		{"pageSize=4&page=3", nil},
	}
	third := caller{t, ts, a.tok}
	for _, tc := range cases {
		t.Run(tc.query, func(t *testing.T) {
			for _, path := range []string{"/api/v2/channels?", "/api/v2/third-party/channels?"} {
				var page channelPage
				r := third.call("GET", path+tc.query, nil)
				r.JSON(t, &page)
				var streams []string
				for _, c := range page.Rows {
					streams = append(streams, c.Stream)
				}
				if r.Status != 200 || strings.Join(streams, ",") != strings.Join(tc.want, ",") {
					t.Fatalf("%s%s = %d %v, want %v", path, tc.query, r.Status, streams, tc.want)
				}
				if !strings.Contains(tc.query, "page") && page.Total != int64(len(tc.want)) {
					t.Fatalf("total %d, want %d", page.Total, len(tc.want))
				}
			}
		})
	}
	var pending channelPage
	a.call("GET", "/api/v2/channels/pending-activation", nil).JSON(t, &pending)
	if pending.Total != 1 || pending.Rows[0].Stream != "cam4" {
		t.Fatalf("pending = %+v", pending)
	}
	// Third-party operations accept only API tokens.
	console := sessionWith(ts, t, "channels.view")
	checkErrorBody(t, console.Do("GET", "/api/v2/third-party/channels", nil), 401, "api_token_required")
	if r := console.Do("GET", "/api/v2/channels", nil); r.Status != 200 {
		t.Fatalf("console list: %d", r.Status)
	}

	// Update: partial, masked URL keeps the credentials, rename frees the
	// old name.
	var upd channelJSON
	r := a.call("PUT", "/api/v2/channels/"+first.ChannelID, map[string]any{"name": "Front gate", "sourceUrl": "rtsp://***@192.0.2.10:554/Streaming/cam1b", "stream": "front"})
	r.JSON(t, &upd)
	if r.Status != 200 || upd.Name != "Front gate" || !upd.HasSourceCredentials || upd.SourceURL != "rtsp://***@192.0.2.10:554/Streaming/cam1b" || upd.Stream != "front" {
		t.Fatalf("update = %d %s", r.Status, r.Body)
	}
	if full, err := ts.S.Channels.SourceURL(t.Context(), "x/y"); err == nil || full != "" {
		t.Fatal("a bad id reached the store")
	}
	if full, _ := ts.S.Channels.SourceURL(t.Context(), channelID(first.ChannelID)); full != "rtsp://viewer:Sup3rS3cret%21@192.0.2.10:554/Streaming/cam1b" {
		t.Fatalf("source URL after masked update = %q", full)
	}
	a.create(rtspChannel("cam1"))
	// Delete: the group count follows.
	if r := a.call("DELETE", "/api/v2/channels/"+first.ChannelID, nil); r.Status != 200 {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}
	checkErrorBody(t, a.call("GET", "/api/v2/channels/"+first.ChannelID, nil), 404, "not_found")
	var gone channelPage
	a.call("GET", "/api/v2/channels?stream=front", nil).JSON(t, &gone)
	if gone.Total != 0 {
		t.Fatalf("a deleted channel is still listed: %+v", gone)
	}
	if r := a.call("DELETE", "/api/v2/channels/groups/gate", nil); r.Status != 200 {
		t.Fatalf("delete emptied group: %d %s", r.Status, r.Body)
	}
}

func TestChannelBadInput(t *testing.T) {
	ts := controlnode.StartNode(t, "chbad", "", "")
	a := caller{t, ts, ts.Token("channels.view", "channels.manage", "devices.control")}
	existing := a.create(rtspChannel("taken"))
	rev := ts.S.Node.Revision()
	cases := []struct {
		name   string
		method string
		path   string
		Body   any
		Status int
		code   string
		msg    string
	}{
		{"missing name", "POST", "/api/v2/channels", map[string]any{"protocol": "rtsp", "app": "a", "stream": "s", "sourceUrl": "rtsp://h/x"}, 400, "invalid_body", "name"},
		{"unknown protocol", "POST", "/api/v2/channels", rtspChannel("x", "protocol", "rtmp"), 400, "invalid_body", "protocol"},
		{"unknown field", "POST", "/api/v2/channels", rtspChannel("x", "password", "x"), 400, "invalid_body", "password"},
		{
			"rtsp without source",
			"POST",
			"/api/v2/channels",
			map[string]any{"name": "n", "protocol": "rtsp", "app": "a", "stream": "s"},
			400,
			"invalid_body",
			"sourceUrl is required",
		},
		{"wrong scheme", "POST", "/api/v2/channels", rtspChannel("x", "sourceUrl", "http://u:Sup3rS3cret!@h/x"), 400, "invalid_body", "scheme must be rtsp"},
		{"bad url", "POST", "/api/v2/channels", rtspChannel("x", "sourceUrl", "rtsp://u:Sup3rS3cret!@h/a b"), 400, "invalid_body", "spaces"},
		{"slash in app", "POST", "/api/v2/channels", rtspChannel("x", "app", "a/b"), 400, "invalid_body", "app must be"},
		{"long stream", "POST", "/api/v2/channels", rtspChannel(strings.Repeat("s", 65)), 400, "invalid_body", "stream"},
		{"bad vhost", "POST", "/api/v2/channels", rtspChannel("x", "vhost", "a b"), 400, "invalid_body", "vhost must be"},
		{"unknown group", "POST", "/api/v2/channels", rtspChannel("x", "groupKey", "nowhere"), 400, "invalid_body", "names no channel group"},
		{
			"gb28181 bad code",
			"POST",
			"/api/v2/channels",
			map[string]any{"name": "n", "protocol": "gb28181", "app": "rtp", "stream": "g", "deviceId": "123", "deviceChannelId": "34020000001320000001"},
			400,
			"invalid_body",
			"20-digit",
		},
		{"rtsp with ptz", "POST", "/api/v2/channels", rtspChannel("x", "hasPtz", true), 400, "invalid_body", "hasPtz"},
		{"bad transport", "POST", "/api/v2/channels", rtspChannel("x", "rtspTransport", "sctp"), 400, "invalid_body", "rtspTransport"},
		{"duplicate stream", "POST", "/api/v2/channels", rtspChannel("taken"), 409, "channel_stream_conflict", "already uses"},
		{"update unknown channel", "PUT", "/api/v2/channels/0190e0c6-0000-7000-8000-000000000000", map[string]any{"name": "x"}, 404, "not_found", "no such channel"},
		{"update empty name", "PUT", "/api/v2/channels/" + existing.ChannelID, map[string]any{"name": ""}, 400, "invalid_body", "name"},
		{"bad filter enum", "GET", "/api/v2/channels?actualState=Dancing", nil, 400, "invalid_query", "actualState"},
		{"bad page size", "GET", "/api/v2/channels?pageSize=1000", nil, 400, "invalid_query", "pageSize"},
		{"bad log kind", "GET", "/api/v2/channels/" + existing.ChannelID + "/runtime-logs?kind=other", nil, 400, "invalid_query", "kind"},
		{"bad log time", "GET", "/api/v2/channels/" + existing.ChannelID + "/runtime-logs?from=yesterday", nil, 400, "invalid_query", "from"},
		{"start unknown", "POST", "/api/v2/channels/nope/start", nil, 404, "not_found", "no such channel"},
		{"group bad key", "POST", "/api/v2/channels/groups", map[string]any{"groupKey": "a b", "name": "x"}, 400, "invalid_body", "groupKey"},
		{"group update unknown", "PUT", "/api/v2/channels/groups/nope", map[string]any{"name": "x"}, 404, "not_found", "group"},
		{"group delete unknown", "DELETE", "/api/v2/channels/groups/nope", nil, 404, "not_found", "group"},
		{"ptz bad command", "POST", "/api/v2/channels/" + existing.ChannelID + "/ptz", map[string]any{"command": "spin"}, 400, "invalid_body", "command"},
		{
			"import wrong format",
			"POST",
			"/api/v2/channels/asset-transfer/import",
			map[string]any{"preview": false, "document": map[string]any{"format": "other", "version": 1, "groups": []any{}, "channels": []any{}}},
			400,
			"invalid_body",
			"format",
		},
		{
			"import future version",
			"POST",
			"/api/v2/channels/asset-transfer/import",
			map[string]any{"document": map[string]any{"format": "svc.channels.asset-transfer", "version": 9, "groups": []any{}, "channels": []any{}}},
			400,
			"invalid_body",
			"version 9",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := a.call(tc.method, tc.path, tc.Body)
			checkErrorBody(t, r, tc.Status, tc.code)
			if !strings.Contains(string(r.Body), tc.msg) {
				t.Fatalf("message of %s lacks %q", r.Body, tc.msg)
			}
			if strings.Contains(string(r.Body), "Sup3rS3cret") {
				t.Fatalf("error repeats the password: %s", r.Body)
			}
		})
	}
	if got := ts.S.Node.Revision(); got != rev {
		t.Fatalf("bad input changed the store: revision %d -> %d", rev, got)
	}
}

func TestChannelCredentialsNeverLeak(t *testing.T) {
	logs := &testkit.Output{}
	ts := controlnode.StartNodeWith(t, "chleak", "", "", nil, logs)
	a := caller{t, ts, ts.Token("*")}
	const secret = "Sup3rS3cret!"
	ch := a.create(rtspChannel("leak"))
	var bodies []string
	record := func(r controlnode.Response) controlnode.Response {
		bodies = append(bodies, string(r.Body))
		return r
	}
	id := ch.ChannelID
	record(a.call("GET", "/api/v2/channels/"+id, nil))
	record(a.call("GET", "/api/v2/channels", nil))
	record(a.call("GET", "/api/v2/channels?sourceUrl="+url.QueryEscape("rtsp://viewer:"+secret+"@192.0.2.10"), nil))
	record(a.call("GET", "/api/v2/third-party/channels", nil))
	record(a.call("GET", "/api/v2/third-party/channels/"+id, nil))
	record(a.call("PUT", "/api/v2/channels/"+id, map[string]any{"description": "kept"}))
	record(a.call("POST", "/api/v2/channels/"+id+"/start", nil))
	record(a.call("POST", "/api/v2/third-party/channels/"+id+"/stop", nil))
	record(a.call("GET", "/api/v2/channels/"+id+"/runtime-logs", nil))
	exp := record(a.call("GET", "/api/v2/channels/asset-transfer/export", nil))
	var doc map[string]any
	exp.JSON(t, &doc)
	record(a.call("POST", "/api/v2/channels/asset-transfer/import", map[string]any{"preview": true, "document": doc}))
	// Bad input carrying the password is refused without repeating it.
	record(a.call("POST", "/api/v2/channels", rtspChannel("leak2", "sourceUrl", "rtsp://viewer:"+secret+"@bad host/x")))
	record(a.call("POST", "/api/v2/channels", rtspChannel("leak", "sourceUrl", "rtsp://viewer:"+secret+"@192.0.2.10/x")))
	record(a.call("PUT", "/api/v2/channels/"+id, map[string]any{"sourceUrl": "rtsp://viewer:" + secret + "@192.0.2.10/y"}))
	for i, b := range bodies {
		if strings.Contains(b, secret) || strings.Contains(b, url.QueryEscape(secret)) || strings.Contains(b, "Sup3rS3cret%21") {
			t.Fatalf("controlnode.Response %d shows the password: %s", i, b)
		}
	}
	if !strings.Contains(bodies[0], "rtsp://***@192.0.2.10:554/Streaming/leak") {
		t.Fatalf("masked URL missing: %s", bodies[0])
	}
	if out := logs.String(); strings.Contains(out, secret) || strings.Contains(out, "Sup3rS3cret%21") {
		t.Fatal("the logs show the password")
	}
	if !strings.Contains(logs.String(), "/api/v2/channels") {
		t.Fatal("the log capture saw no channel request")
	}
}

func TestChannelStateOverHTTP(t *testing.T) {
	ts := controlnode.StartNode(t, "chstate", "", "")
	a := caller{t, ts, ts.Token("channels.view", "channels.manage")}
	ch := a.create(rtspChannel("st", "activationState", "Pending"))
	id := ch.ChannelID
	checkErrorBody(t, a.call("POST", "/api/v2/channels/"+id+"/start", nil), 409, "channel_pending_activation")
	checkErrorBody(t, a.call("POST", "/api/v2/channels/"+id+"/retry", nil), 409, "channel_pending_activation")
	checkErrorBody(t, a.call("POST", "/api/v2/channels/"+id+"/return-to-pending", nil), 409, "channel_pending_activation")
	if r := a.call("POST", "/api/v2/channels/"+id+"/activate", nil); r.Status != 200 {
		t.Fatalf("activate: %d %s", r.Status, r.Body)
	}
	checkErrorBody(t, a.call("POST", "/api/v2/channels/"+id+"/activate", nil), 409, "channel_not_pending")
	a.call("PUT", "/api/v2/channels/"+id, map[string]any{"enabled": false})
	checkErrorBody(t, a.call("POST", "/api/v2/channels/"+id+"/start", nil), 409, "channel_disabled")
	a.call("PUT", "/api/v2/channels/"+id, map[string]any{"enabled": true})

	var started struct {
		Channel channelJSON
		Command struct {
			CommandID, ChannelID, Action, State, RequestedBy string
		}
	}
	r := a.call("POST", "/api/v2/third-party/channels/"+id+"/start", nil)
	r.JSON(t, &started)
	if r.Status != 200 || started.Channel.DesiredState != "Running" || started.Command.State != "Pending" || started.Command.Action != "start" ||
		started.Command.ChannelID != id || !strings.HasPrefix(started.Command.RequestedBy, "api-token:") || started.Channel.LastCommandID != started.Command.CommandID {
		t.Fatalf("start = %d %s", r.Status, r.Body)
	}
	// The stream dispatcher runs in this server and fails the start at once
	// (there is no media server), so a repeated start may find the first
	// command finished and record a new one; while it is unfinished the same
	// command answers (the channels package tests that without a dispatcher).
	var again struct {
		Command struct{ CommandID, Action string }
	}
	if r := a.call("POST", "/api/v2/channels/"+id+"/start", nil); r.Status != 200 {
		t.Fatalf("repeated start: %d %s", r.Status, r.Body)
	} else {
		r.JSON(t, &again)
	}
	if again.Command.Action != "start" {
		t.Fatalf("a repeated start answered %+v", again.Command)
	}
	checkErrorBody(t, a.call("DELETE", "/api/v2/channels/"+id, nil), 409, "channel_running")
	checkErrorBody(t, a.call("PUT", "/api/v2/channels/"+id, map[string]any{"stream": "moved"}), 409, "channel_running")
	checkErrorBody(t, a.call("POST", "/api/v2/channels/"+id+"/return-to-pending", nil), 409, "channel_running")
	if r := a.call("POST", "/api/v2/channels/"+id+"/pause", nil); r.Status != 200 || !strings.Contains(string(r.Body), `"autoRecoveryPaused":true`) {
		t.Fatalf("pause: %d %s", r.Status, r.Body)
	}
	// Retry clears the backoff and the pause and starts now.
	ts.S.Channels.RecordFailedAttempt(t.Context(), systemActor, channelID(id), "connection refused")
	var retried struct {
		Channel struct {
			AutoRecoveryPaused bool
			Retry              struct{ Attempts int }
		}
		Command struct{ CommandID, Action string }
	}
	r = a.call("POST", "/api/v2/channels/"+id+"/retry", nil)
	r.JSON(t, &retried)
	if r.Status != 200 || retried.Channel.AutoRecoveryPaused || retried.Command.Action != "start" {
		t.Fatalf("retry = %d %s", r.Status, r.Body)
	}
	var stopped map[string]any
	r = a.call("POST", "/api/v2/channels/"+id+"/stop", nil)
	r.JSON(t, &stopped)
	if r.Status != 200 || stopped["streamCommandId"] == "" || stopped["nodeCommandId"] != nil || stopped["state"] != "Pending" {
		t.Fatalf("stop = %d %s", r.Status, r.Body)
	}
	// The first start is finished: canceled by the stop, or failed by the
	// dispatcher before it (no media server to pull on).
	cmd, err := ts.S.Channels.Command(t.Context(), commandID(started.Command.CommandID))
	if err != nil || (cmd.State != "Canceled" && cmd.State != "Failed") {
		t.Fatalf("start command after stop: %+v %v", cmd, err)
	}
	// The dispatcher's report moves the stream on; then delete works.
	if _, err := ts.S.Channels.SetActualState(t.Context(), systemActor, channelID(id), "Offline", "stop finished"); err != nil {
		t.Fatal(err)
	}
	var logs struct {
		Total int64
		Rows  []struct{ Kind, Event, Actor, TraceID string }
	}
	a.call("GET", "/api/v2/channels/"+id+"/runtime-logs?order=oldest&pageSize=100", nil).JSON(t, &logs)
	// The dispatcher's own entries are there (its failed attempts). Which
	// entry is last depends on whether the dispatcher had failed the start
	// before the stop came (then the stop itself set Offline, and the
	// report above changes only the reason, which makes no entry).
	byDispatcher := 0
	for _, r := range logs.Rows {
		if r.Actor == "system:stream-dispatcher" {
			byDispatcher++
		}
	}
	if logs.Total < 10 || logs.Rows[0].Event != "channel.created" || byDispatcher == 0 {
		t.Fatalf("runtime log = %+v", logs)
	}
	// Every command is in the timeline: the starts and the stop recorded,
	// and each finished by the stop or by the dispatcher.
	var cmds struct {
		Total int64
		Rows  []struct{ Event string }
	}
	a.call("GET", "/api/v2/channels/"+id+"/runtime-logs?kind=command&pageSize=100", nil).JSON(t, &cmds)
	recorded := 0
	for _, e := range cmds.Rows {
		if e.Event == "command.recorded" {
			recorded++
		}
	}
	if recorded < 2 || cmds.Total < 3 {
		t.Fatalf("command entries = %+v", cmds)
	}
	if r := a.call("DELETE", "/api/v2/channels/"+id, nil); r.Status != 200 {
		t.Fatalf("delete stopped: %d %s", r.Status, r.Body)
	}
	// The log stays readable for the audit.
	if r := a.call("GET", "/api/v2/channels/"+id+"/runtime-logs", nil); r.Status != 200 || !strings.Contains(string(r.Body), "channel.deleted") {
		t.Fatalf("log after delete: %d %s", r.Status, r.Body)
	}
}

func TestChannelCreateRaceOverHTTP(t *testing.T) {
	ts := controlnode.StartNode(t, "chrace", "", "")
	a := caller{t, ts, ts.Token("channels.manage")}
	var wg sync.WaitGroup
	statuses := make([]int, 6)
	for i := range statuses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i] = a.call("POST", "/api/v2/channels", rtspChannel("one")).Status
		}()
	}
	wg.Wait()
	won := 0
	for _, s := range statuses {
		switch s {
		case 200:
			won++
		case 409:
		default:
			t.Fatalf("statuses %v", statuses)
		}
	}
	if won != 1 {
		t.Fatalf("statuses %v: %d won", statuses, won)
	}
}

func TestChannelGroupsOverHTTP(t *testing.T) {
	ts := controlnode.StartNode(t, "chgroups", "", "")
	a := caller{t, ts, ts.Token("channels.view", "channels.manage")}
	for _, k := range []string{"b-site", "a-site"} {
		if r := a.call("POST", "/api/v2/channels/groups", map[string]any{"groupKey": k, "name": "Site " + k}); r.Status != 200 {
			t.Fatalf("create %s: %d %s", k, r.Status, r.Body)
		}
	}
	checkErrorBody(t, a.call("POST", "/api/v2/channels/groups", map[string]any{"groupKey": "a-site", "name": "again"}), 409, "channel_group_conflict")
	ch := a.create(rtspChannel("g1", "groupKey", "a-site"))
	var list struct {
		Total int64
		Rows  []struct {
			GroupKey     string
			Name         string
			ChannelCount int
		}
	}
	a.call("GET", "/api/v2/channels/groups", nil).JSON(t, &list)
	if list.Total != 2 || list.Rows[0].GroupKey != "a-site" || list.Rows[0].ChannelCount != 1 || list.Rows[1].ChannelCount != 0 {
		t.Fatalf("groups = %+v", list)
	}
	a.call("GET", "/api/v2/channels/groups?keyword=B-SITE", nil).JSON(t, &list)
	if list.Total != 1 || list.Rows[0].GroupKey != "b-site" {
		t.Fatalf("keyword = %+v", list)
	}
	if r := a.call("PUT", "/api/v2/channels/groups/a-site", map[string]any{"name": "Site A"}); r.Status != 200 || !strings.Contains(string(r.Body), `"channelCount":1`) {
		t.Fatalf("update: %d %s", r.Status, r.Body)
	}
	r := a.call("DELETE", "/api/v2/channels/groups/a-site", nil)
	checkErrorBody(t, r, 409, "channel_group_not_empty")
	// Moving the channel moves the count.
	a.call("PUT", "/api/v2/channels/"+ch.ChannelID, map[string]any{"groupKey": "b-site"})
	if r := a.call("DELETE", "/api/v2/channels/groups/a-site", nil); r.Status != 200 {
		t.Fatalf("delete emptied group: %d %s", r.Status, r.Body)
	}
	checkErrorBody(t, a.call("DELETE", "/api/v2/channels/groups/b-site", nil), 409, "channel_group_not_empty")
}

func TestChannelPTZAndRecordingSearch(t *testing.T) {
	ts := controlnode.StartNode(t, "chptz", "", "")
	a := caller{t, ts, ts.Token("channels.view", "channels.manage", "devices.control")}
	rtsp := a.create(rtspChannel("ptz"))
	onvif := a.create(map[string]any{"name": "Dome", "protocol": "onvif", "app": "onvif", "stream": "dome", "deviceId": "dome-1", "hasPtz": true})
	calls := []struct{ method, suffix string }{
		{"POST", "/ptz"}, {"GET", "/ptz/capabilities"}, {"POST", "/ptz/capabilities/refresh"}, {"GET", "/ptz/settings"}, {"PUT", "/ptz/settings"},
	}
	for _, c := range calls {
		var body any
		switch c.suffix {
		case "/ptz":
			body = map[string]any{"command": "left", "speed": 30}
		case "/ptz/settings":
			if c.method == "PUT" {
				body = map[string]any{"enabled": true}
			}
		}
		r := a.call(c.method, "/api/v2/channels/"+rtsp.ChannelID+c.suffix, body)
		checkErrorBody(t, r, 409, "ptz_not_supported")
		if !strings.Contains(string(r.Body), "not supported for this protocol") && !strings.Contains(string(r.Body), "has no PTZ control") {
			t.Fatalf("%s %s: %s", c.method, c.suffix, r.Body)
		}
		r = a.call(c.method, "/api/v2/channels/"+onvif.ChannelID+c.suffix, body)
		checkErrorBody(t, r, 409, "ptz_unavailable")
		checkErrorBody(t, a.call(c.method, "/api/v2/channels/0190e0c6-0000-7000-8000-000000000000"+c.suffix, body), 404, "not_found")
	}
	var capability struct {
		Available, Editable bool
		Reason              string
	}
	a.call("GET", "/api/v2/channels/recording-search/capability", nil).JSON(t, &capability)
	if capability.Available || capability.Editable || capability.Reason == "" {
		t.Fatalf("recording search capability = %+v", capability)
	}
}

func TestChannelAssetTransfer(t *testing.T) {
	src := controlnode.StartNode(t, "export", "", "")
	dst := controlnode.StartNode(t, "import", "", "")
	a := caller{t, src, src.Token("channels.view", "channels.manage")}
	b := caller{t, dst, dst.Token("channels.view", "channels.manage")}
	a.call("POST", "/api/v2/channels/groups", map[string]any{"groupKey": "yard", "name": "Yard"})
	a.create(rtspChannel("t1", "groupKey", "yard"))
	a.create(rtspChannel("t2", "sourceUrl", "rtsp://192.0.2.30/open"))
	var doc map[string]any
	r := a.call("GET", "/api/v2/channels/asset-transfer/export", nil)
	r.JSON(t, &doc)
	if doc["format"] != "svc.channels.asset-transfer" || doc["version"] != float64(1) || len(doc["channels"].([]any)) != 2 || strings.Contains(string(r.Body), "Sup3rS3cret") {
		t.Fatalf("export = %s", r.Body)
	}
	type result struct {
		Preview, Applied                  bool
		Created, Updated, Skipped, Failed int
		Items                             []struct{ Kind, Key, ChannelID, Action, Reason string }
	}
	// Preview writes nothing.
	rev := dst.S.Node.Revision()
	var plan result
	b.call("POST", "/api/v2/channels/asset-transfer/import", map[string]any{"document": doc}).JSON(t, &plan)
	if !plan.Preview || plan.Applied || plan.Created != 3 || plan.Failed != 0 {
		t.Fatalf("preview = %+v", plan)
	}
	if got := dst.S.Node.Revision(); got != rev {
		t.Fatalf("preview changed the store: %d -> %d", rev, got)
	}
	var done result
	r = b.call("POST", "/api/v2/channels/asset-transfer/import", map[string]any{"preview": false, "document": doc})
	r.JSON(t, &done)
	if r.Status != 200 || !done.Applied || done.Created != 3 {
		t.Fatalf("confirm = %d %s", r.Status, r.Body)
	}
	// Credentials do not travel: the note says so; new channels are pending.
	if !strings.Contains(string(r.Body), "source credentials are not exported") {
		t.Fatalf("no credential note: %s", r.Body)
	}
	var page channelPage
	b.call("GET", "/api/v2/channels?activationState=Pending", nil).JSON(t, &page)
	if page.Total != 2 || page.Rows[0].HasSourceCredentials || page.Rows[0].GroupKey != "yard" {
		t.Fatalf("imported = %+v", page)
	}
	var orig channelPage
	a.call("GET", "/api/v2/channels", nil).JSON(t, &orig)
	if page.Rows[0].ChannelID != orig.Rows[0].ChannelID {
		t.Fatal("channel ids did not travel")
	}
	// Confirming again changes nothing.
	rev = dst.S.Node.Revision()
	b.call("POST", "/api/v2/channels/asset-transfer/import", map[string]any{"preview": false, "document": doc}).JSON(t, &done)
	if done.Skipped != 3 || done.Created+done.Updated != 0 || dst.S.Node.Revision() != rev {
		t.Fatalf("second confirm = %+v, revision %d -> %d", done, rev, dst.S.Node.Revision())
	}
	// A changed name is an update; an invalid item rejects the whole
	// document and applies nothing.
	chans := doc["channels"].([]any)
	chans[0].(map[string]any)["name"] = "Renamed"
	chans = append(chans, map[string]any{"name": "bad", "protocol": "rtsp", "app": "a/b", "stream": "x", "sourceUrl": "rtsp://h/x"})
	doc["channels"] = chans
	b.call("POST", "/api/v2/channels/asset-transfer/import", map[string]any{"document": doc}).JSON(t, &plan)
	if plan.Updated != 1 || plan.Failed != 1 || plan.Items[len(plan.Items)-1].Action != "error" || !strings.Contains(plan.Items[len(plan.Items)-1].Reason, "app must be") {
		t.Fatalf("preview with an invalid item = %+v", plan)
	}
	rev = dst.S.Node.Revision()
	r = b.call("POST", "/api/v2/channels/asset-transfer/import", map[string]any{"preview": false, "document": doc})
	checkErrorBody(t, r, 409, "import_rejected")
	if !strings.Contains(string(r.Body), "app must be") || dst.S.Node.Revision() != rev {
		t.Fatalf("rejected confirm = %s, revision %d -> %d", r.Body, rev, dst.S.Node.Revision())
	}
	doc["channels"] = chans[:len(chans)-1]
	b.call("POST", "/api/v2/channels/asset-transfer/import", map[string]any{"preview": false, "document": doc}).JSON(t, &done)
	if done.Updated != 1 || !done.Applied {
		t.Fatalf("update import = %+v", done)
	}
	b.call("GET", "/api/v2/channels?keyword=Renamed", nil).JSON(t, &page)
	if page.Total != 1 {
		t.Fatalf("renamed channel not found: %+v", page)
	}
}
