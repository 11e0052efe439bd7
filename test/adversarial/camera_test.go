package adversarial

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/svcplatform/svc/controlplane/httpapi"
	"github.com/svcplatform/svc/test/testkit"
)

// startChannel starts a channel and waits for its first outcome.
func (h *mediaHost) startChannel(id string) {
	h.t.Helper()
	if a := h.call("POST", "/api/v2/channels/"+id+"/start", h.super, nil); a.status >= 300 {
		h.t.Fatalf("start %s: %s", id, a)
	}
}

// proxyError is the last error of the engine's pull proxy id, as the
// engine lists it (through a node command).
func (h *mediaHost) proxyError(id string) string {
	h.t.Helper()
	var cmd struct{ CommandID string }
	h.call("POST", "/api/v2/nodes/"+mediaServerID+"/commands", h.super, map[string]any{"commandType": "engine.proxy.list", "waitSeconds": 10}).decode(h.t, &cmd)
	var d struct {
		Result struct {
			Proxies []struct{ ID, LastError string }
		}
	}
	h.call("GET", "/api/v2/node/commands/"+cmd.CommandID+"/detail", h.super, nil).decode(h.t, &d)
	for _, p := range d.Result.Proxies {
		if p.ID == id {
			return p.LastError
		}
	}
	return ""
}

func (h *mediaHost) createChannel(name, stream, source string) string {
	h.t.Helper()
	a := h.call("POST", "/api/v2/channels", h.super, map[string]any{"name": name, "protocol": "rtsp", "sourceUrl": source, "app": "live",
		"stream": stream, "mediaServerId": mediaServerID, "rtspTransport": "tcp"})
	if a.status != 200 {
		h.t.Fatalf("create channel %s: %s", name, a)
	}
	var ch channel
	a.decode(h.t, &ch)
	return ch.ChannelID
}

// Item 3: whoever may edit a channel points it at a server of their own
// and keeps the stored credentials, and the engine hands the password to
// that server in clear (Basic). Now the credentials stay with their
// server (scheme, host and port), and the RTSP client answers Basic over
// plain rtsp:// only when the channel opted in.
func TestAttack03CameraCredentialsToAHostOfTheCallersChoice(t *testing.T) {
	h := startMediaHost(t, "a3")
	trapHost := startTrap(t)
	const password = "Stored-Cam-Pa55"
	ch := h.createChannel("Gate", "gate", "rtsp://admin:"+password+"@127.0.0.1:9/Streaming/101")
	editor := tokenCaller(h.node, h.token("channels.manage", "channels.view"))

	refused(
		t,
		"re-pointing with the masked credentials",
		editor("PUT", "/api/v2/channels/"+ch, map[string]any{"sourceUrl": "rtsp://***@" + trapHost.addr + "/x"}),
		400,
		"invalid_body",
	)
	refused(t, "another port of the same host", editor("PUT", "/api/v2/channels/"+ch, map[string]any{"sourceUrl": "rtsp://***@127.0.0.1:10/Streaming/101"}), 400, "invalid_body")
	refused(t, "opting in to Basic without the credentials", editor("PUT", "/api/v2/channels/"+ch, map[string]any{"allowBasicAuthOverPlainRtsp": true}), 400, "invalid_body")
	if got := h.channel(ch); !got.HasSourceCredentials || got.SourceURL != "rtsp://***@127.0.0.1:9/Streaming/101" {
		t.Fatalf("the channel changed: %+v", got)
	}
	// Pointing it elsewhere without credentials is allowed, and then the
	// credentials are gone: the trap, asking for Basic, gets none.
	if a := editor("PUT", "/api/v2/channels/"+ch, map[string]any{"sourceUrl": "rtsp://" + trapHost.addr + "/x"}); a.status != 200 {
		t.Fatalf("re-pointing without credentials: %s", a)
	}
	if got := h.channel(ch); got.HasSourceCredentials {
		t.Fatal("the stored credentials followed the URL")
	}
	h.startChannel(ch)
	testkit.Eventually(t, 30*time.Second, "the engine at the trap", func() bool { seen, _ := trapHost.requests(); return len(seen) > 0 })

	// The camera's own address answering with Basic (a camera that offers
	// only Basic, or someone on its network path): the engine sends
	// nothing unless the channel opted in.
	basicCam := startTrap(t)
	const camPassword = "Basic-Only-Pa55"
	second := h.createChannel("Yard", "yard", "rtsp://yard:"+camPassword+"@"+basicCam.addr+"/live")
	h.startChannel(second)
	testkit.Eventually(t, 30*time.Second, "the engine's refusal", func() bool { return strings.Contains(h.proxyError(second), "Basic") })
	for _, tr := range []*trap{trapHost, basicCam} {
		seen, raw := tr.requests()
		for _, s := range seen {
			if !strings.HasSuffix(s, "auth=") {
				t.Fatalf("the engine answered a Basic challenge over plain rtsp://: %s", s)
			}
		}
		if strings.Contains(raw, password) || strings.Contains(raw, camPassword) || strings.Contains(raw, base64.StdEncoding.EncodeToString([]byte("yard:"+camPassword))) {
			t.Fatal("a password reached the trap")
		}
	}
	// Opting in, with the credentials sent again, lets Basic through: the
	// trap sees it, which shows it would have seen it before.
	if a := h.call("POST", "/api/v2/channels/"+second+"/stop", h.super, nil); a.status >= 300 {
		t.Fatalf("stop: %s", a)
	}
	testkit.Eventually(t, 30*time.Second, "the channel stopped", func() bool { return h.channel(second).ActualState == "Offline" })
	if a := h.call("PUT", "/api/v2/channels/"+second, h.super, map[string]any{"allowBasicAuthOverPlainRtsp": true,
		"sourceUrl": "rtsp://yard:" + camPassword + "@" + basicCam.addr + "/live"}); a.status != 200 {
		t.Fatalf("opting in: %s", a)
	}
	h.startChannel(second)
	want := "auth=Basic " + base64.StdEncoding.EncodeToString([]byte("yard:"+camPassword))
	testkit.Eventually(t, 30*time.Second, "Basic after the opt-in", func() bool {
		seen, _ := basicCam.requests()
		for _, s := range seen {
			if strings.HasSuffix(s, want) {
				return true
			}
		}
		return false
	})
}

// Item 4: no secret in a node command in clear, and none in any answer,
// log line, data directory or raft snapshot. The camera's password goes
// through every path that carries a source URL: a channel pulled through
// the stream dispatcher, an ad hoc pull, a smoke test and a generic node
// command. Then every GET operation of the contract is asked, and the
// logs, the data directories (control node and agent) and a fresh raft
// snapshot are searched for the password in any form.
func TestAttack04CameraPasswordNeverLeaks(t *testing.T) {
	h := startMediaHost(t, "a4")
	cam := startCamera(t)
	var answers [][]byte
	call := func(method, path string, body any) answer {
		a := h.call(method, path, h.super, body)
		answers = append(answers, a.body)
		return a
	}
	// The pulled channel, with the credentials in the userinfo.
	var ch channel
	if a := call("POST", "/api/v2/channels", map[string]any{"name": "Gate", "protocol": "rtsp", "sourceUrl": cam.URL("h264"), "app": "live",
		"stream": "gate", "mediaServerId": mediaServerID}); a.status != 200 {
		t.Fatalf("channel: %s", a)
	} else {
		a.decode(t, &ch)
	}
	call("POST", "/api/v2/channels/"+ch.ChannelID+"/start", nil)
	testkit.Eventually(t, 60*time.Second, "the channel Online (the agent fetched the URL)", func() bool { return h.channel(ch.ChannelID).ActualState == "Online" })
	// The same credentials in the query and in the path (item 5's forms).
	query := "rtsp://127.0.0.1:" + fmt.Sprint(cam.Port) + "/h264?user=cam&password=" + url.QueryEscape(cam.Password)
	if a := call("POST", "/api/v2/channels", map[string]any{"name": "Q", "protocol": "rtsp", "sourceUrl": query, "app": "live", "stream": "q"}); a.status != 200 {
		t.Fatalf("query channel: %s", a)
	}
	// An ad hoc pull, a smoke test and a generic node command.
	if a := call("POST", "/api/v2/streams/start-proxy", map[string]any{"mediaServerId": mediaServerID, "app": "adhoc", "stream": "s1", "url": cam.URL("h264")}); a.status != 200 {
		t.Fatalf("start-proxy: %s", a)
	}
	if a := call("POST", "/api/v2/streams/smoke-tests/rtsp", map[string]any{"mediaServerId": mediaServerID, "url": cam.URL("h264"), "timeoutSeconds": 15}); a.status != 200 ||
		!strings.Contains(string(a.body), `"ok":true`) {
		t.Fatalf("smoke test: %s", a)
	}
	var generic struct{ CommandID string }
	if a := call("POST", "/api/v2/nodes/"+mediaServerID+"/commands", map[string]any{"commandType": "engine.proxy.add", "waitSeconds": 10,
		"payload": map[string]any{"id": "generic", "url": cam.URL("h264"), "app": "generic", "stream": "s2"}}); a.status != 200 {
		t.Fatalf("generic command: %s", a)
	} else {
		a.decode(t, &generic)
	}
	// Every proxy-add command shows its masked URL and the mark, and ran.
	var cmds struct {
		Rows []struct{ CommandID, CommandType, Status string }
	}
	call("GET", "/api/v2/node/commands?pageSize=100&commandType=engine.proxy.add", nil).decode(t, &cmds)
	if len(cmds.Rows) < 3 {
		t.Fatalf("%d proxy-add commands", len(cmds.Rows))
	}
	var commandIDs []string
	for _, c := range cmds.Rows {
		commandIDs = append(commandIDs, c.CommandID)
		testkit.Eventually(t, 30*time.Second, "command "+c.CommandID+" finished", func() bool {
			var d struct {
				Status  string
				Payload map[string]any
			}
			call("GET", "/api/v2/node/commands/"+c.CommandID+"/detail", nil).decode(t, &d)
			if d.Payload["secretUrl"] != true || !strings.Contains(fmt.Sprint(d.Payload["url"]), "***@") {
				t.Fatalf("command %s payload %v", c.CommandID, d.Payload)
			}
			return d.Status == "Succeeded"
		})
	}

	// Every GET operation of the contract, with the ids this test made.
	ops, err := httpapi.LoadOperations()
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string][]string{"channelId": {ch.ChannelID}, "nodeId": {mediaServerID}, "mediaServerId": {mediaServerID}, "commandId": commandIDs}
	param := regexp.MustCompile(`\{([^}]+)\}`)
	asked := 0
	for _, op := range ops.All() {
		if op.Method != "GET" {
			continue
		}
		for _, path := range expand(op.Path, param, ids) {
			call("GET", path, nil)
			asked++
		}
	}
	t.Logf("asked %d GET answers", asked)

	// A raft snapshot, then the search.
	if err := h.s.Node.Raft().Snapshot().Error(); err != nil {
		t.Fatalf("raft snapshot: %v", err)
	}
	forms := secretForms(cam)
	for i, body := range answers {
		if f := containsAny(body, forms); f != "" {
			t.Fatalf("answer %d holds the password (%q): %s", i, f, body)
		}
	}
	if f := containsAny([]byte(h.logs.String()), forms); f != "" {
		t.Fatalf("the control node's log holds the password (%q)", f)
	}
	if f := containsAny([]byte(h.agent.Out.String()), forms); f != "" {
		t.Fatalf("the agent's and engine's output holds the password (%q)", f)
	}
	snapshots := 0
	for _, dir := range []string{h.s.Config.DataDir, h.agentDir} {
		filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			if strings.Contains(path, "snapshots") {
				snapshots++
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return nil
			}
			if f := containsAny(b, forms); f != "" {
				t.Errorf("%s holds the password (%q)", path, f)
			}
			return nil
		})
	}
	if snapshots == 0 {
		t.Fatal("no raft snapshot file was searched")
	}
}

// expand fills an operation's path parameters: every known id, and a
// placeholder for the others.
func expand(path string, param *regexp.Regexp, ids map[string][]string) []string {
	out := []string{path}
	for _, m := range param.FindAllStringSubmatch(path, -1) {
		values := ids[m[1]]
		if len(values) == 0 {
			values = []string{"x1"}
		}
		var next []string
		for _, p := range out {
			for _, v := range values {
				next = append(next, strings.Replace(p, m[0], v, 1))
			}
		}
		out = next
	}
	return out
}

// secretForms are the ways the camera's password could be written down:
// as is, URL-escaped, inside a Basic header, and as user:password.
func secretForms(c *testkit.Camera) []string {
	return []string{c.Password, url.QueryEscape(c.Password), url.PathEscape(c.Password),
		base64.StdEncoding.EncodeToString([]byte(c.User + ":" + c.Password)), c.User + ":" + c.Password}
}

func containsAny(b []byte, forms []string) string {
	for _, f := range forms {
		if bytes.Contains(b, []byte(f)) {
			return f
		}
	}
	return ""
}

// Item 5: credentials in the query (?user=..&password=.., Dahua and
// others) and in a path segment (/user=..&password=..&channel=1, XM) were
// returned in clear by channel reads, the export and the third-party API.
// Now they are sealed like userinfo and masked everywhere.
func TestAttack05CredentialsInQueryStringsAndPaths(t *testing.T) {
	n := startNode(t, "a5", "", "", nil)
	super := n.token("*")
	backend := n.token("channels.view", "streams.view")
	const secret = "Qu3ry-Pa55"
	sources := map[string]string{
		"dahua": "rtsp://10.0.0.7:554/cam/realmonitor?channel=1&subtype=0&user=admin&password=" + secret,
		"xm":    "rtsp://10.0.0.8:554/user=admin&password=" + secret + "&channel=1&stream=0.sdp?",
		"mixed": "rtsp://10.0.0.9/live?usr=admin&pwd=" + secret,
	}
	var answers []answer
	for name, src := range sources {
		a := n.call("POST", "/api/v2/channels", super, map[string]any{"name": name, "protocol": "rtsp", "sourceUrl": src, "app": "live", "stream": name})
		if a.status != 200 {
			t.Fatalf("create %s: %s", name, a)
		}
		answers = append(answers, a)
		var ch channel
		a.decode(t, &ch)
		if !ch.HasSourceCredentials || !strings.Contains(ch.SourceURL, "=***") {
			t.Fatalf("%s answered %+v", name, ch)
		}
		answers = append(answers, n.call("GET", "/api/v2/channels/"+ch.ChannelID, backend, nil))
		// Sending the masked form back keeps them; moving the host needs them again.
		if a := n.call("PUT", "/api/v2/channels/"+ch.ChannelID, super, map[string]any{"sourceUrl": ch.SourceURL}); a.status != 200 {
			t.Fatalf("%s: the masked URL sent back: %s", name, a)
		}
		moved := strings.Replace(ch.SourceURL, "10.0.0.", "203.0.113.", 1)
		refused(t, name+" moved with the mask", n.call("PUT", "/api/v2/channels/"+ch.ChannelID, super, map[string]any{"sourceUrl": moved}), 400, "invalid_body")
	}
	answers = append(answers,
		n.call("GET", "/api/v2/channels?pageSize=100", backend, nil),
		n.call("GET", "/api/v2/channels?pageSize=100&sourceUrl="+url.QueryEscape(sources["dahua"]), backend, nil),
		n.call("GET", "/api/v2/channels/asset-transfer/export", super, nil),
		n.call("GET", "/api/v2/third-party/channels?pageSize=100", backend, nil))
	for _, a := range answers {
		if a.status != 200 {
			t.Fatalf("answer %s", a)
		}
		if bytes.Contains(a.body, []byte(secret)) {
			t.Fatalf("an answer holds the password: %s", a)
		}
	}
	resp, err := n.s.Node.Range(t.Context(), "/", storeAll())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range resp.KVs {
		if bytes.Contains(kv.Value, []byte(secret)) {
			t.Fatalf("%s holds the password in clear", kv.Key)
		}
	}
}
