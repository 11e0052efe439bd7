package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/svcplatform/svc/controlplane/events"
	"github.com/svcplatform/svc/controlplane/httpapi"
	"github.com/svcplatform/svc/controlplane/store"
	"github.com/svcplatform/svc/test/testkit/controlnode"
)

// device sends a meeting device's request with its participant token in
// X-Svc-RTC-Token (or as a bearer).
func device(ts *controlnode.Node, method, path, token string, bearer bool, contentType string, body []byte) controlnode.Response {
	req, _ := http.NewRequest(method, ts.URL+path, bytes.NewReader(body))
	switch {
	case token == "":
	case bearer:
		req.Header.Set("Authorization", "Bearer "+token)
	default:
		req.Header.Set(httpapi.RTCTokenHeader, token)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	return ts.Send(req)
}

func jsonBody(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rtcEvents are the rtc.* events of the outbox, in order.
func rtcEvents(t *testing.T, ts *controlnode.Node) []events.Envelope {
	t.Helper()
	resp, err := ts.S.Node.Range(context.Background(), events.OutboxPrefix, store.RangeOptions{End: store.PrefixEnd(events.OutboxPrefix)})
	if err != nil {
		t.Fatal(err)
	}
	var out []events.Envelope
	for _, kv := range resp.KVs {
		var ev events.Envelope
		if err := json.Unmarshal(kv.Value, &ev); err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(ev.EventName, "rtc.") {
			out = append(out, ev)
		}
	}
	return out
}

// TestRoomsOverHTTP walks a room through its operations without a media
// server: idempotent creation, the owner's listing, single-use tickets,
// every credential refused where it does not belong, token rotation,
// capability filtering, another device's publication, a publication whose
// media server is missing (rtc.publication.failed), leave, close; the
// rtc.* events carry exactly contract A's data fields.
func TestRoomsOverHTTP(t *testing.T) {
	ts := controlnode.StartNode(t, "rooms", "", "")
	backend := ts.Token("rtc.manage")
	other := ts.Token("rtc.manage")
	create := func(tok string, body map[string]any) controlnode.Response {
		return ts.Do("POST", "/api/v2/rtc/rooms", tok, "application/json", jsonBody(t, body))
	}
	var room, again struct{ RoomID, Status, MediaServerID string }
	r := create(backend, map[string]any{"name": "Standup", "idempotencyKey": "standup-1"})
	r.JSON(t, &room)
	create(backend, map[string]any{"name": "Standup", "idempotencyKey": "standup-1"}).JSON(t, &again)
	if r.Status != 200 || room.RoomID == "" || room.RoomID != again.RoomID || room.Status != "Open" {
		t.Fatalf("idempotent creation: %d %s, again %+v", r.Status, r.Body, again)
	}
	checkErrorBody(t, create(backend, map[string]any{"name": "Other", "idempotencyKey": "standup-1"}), 409, "idempotency_conflict")
	var roomB struct{ RoomID string }
	create(backend, map[string]any{"name": "Board"}).JSON(t, &roomB)

	var list struct {
		Total int
		Rows  []struct{ RoomID string }
	}
	ts.Get("/api/v2/rtc/rooms?status=Open", backend).JSON(t, &list)
	if list.Total != 2 {
		t.Fatalf("the owner lists %d rooms, want 2", list.Total)
	}
	ts.Get("/api/v2/rtc/rooms", other).JSON(t, &list)
	if list.Total != 0 {
		t.Fatalf("another token lists %d rooms, want 0", list.Total)
	}
	checkErrorBody(t, ts.Get("/api/v2/rtc/rooms/"+room.RoomID, other), 404, "not_found")
	if r := ts.Get("/api/v2/rtc/rooms/"+room.RoomID, backend); r.Status != 200 {
		t.Fatalf("get: %d %s", r.Status, r.Body)
	}

	base := "/api/v2/rtc/rooms/" + room.RoomID
	dev := "/api/v2/rtc/session/rooms/" + room.RoomID
	ticket := func(tok, roomID string, body map[string]any) string {
		t.Helper()
		var tk struct{ AccessTicket string }
		r := ts.Do("POST", "/api/v2/rtc/rooms/"+roomID+"/access-tickets", tok, "application/json", jsonBody(t, body))
		if r.Status != 200 {
			t.Fatalf("access ticket: %d %s", r.Status, r.Body)
		}
		r.JSON(t, &tk)
		return tk.AccessTicket
	}
	checkErrorBody(t, ts.Do("POST", base+"/access-tickets", other, "application/json", jsonBody(t, map[string]any{"subjectIssuer": "crm", "subjectId": "x"})),
		404, "not_found")
	join := func(roomID, tk string) controlnode.Response {
		return device(ts, "POST", "/api/v2/rtc/session/rooms/"+roomID+"/join", "", false, "application/json", jsonBody(t, map[string]any{"accessTicket": tk,
			"displayName": "Alice", "platform": "browser", "micEnabled": true}))
	}
	type joined struct {
		ParticipantToken string
		AdmissionStatus  string
		Participant      struct {
			ParticipantID string
			Capabilities  []string
		}
	}
	all := []string{"camera.publish", "microphone.publish", "publications.subscribe"}
	aliceTicket := ticket(backend, room.RoomID, map[string]any{"subjectIssuer": "crm", "subjectId": "alice", "role": "member", "capabilities": all})
	// The ticket is not a participant token, nor an API token.
	checkErrorBody(t, device(ts, "POST", dev+"/heartbeat", aliceTicket, false, "", nil), 401, "rtc_token_invalid")
	checkErrorBody(t, ts.Get("/api/v2/rtc/rooms", aliceTicket), 401, "api_token_required")
	checkErrorBody(t, join(roomB.RoomID, aliceTicket), 401, "room_ticket_invalid")
	var alice joined
	r = join(room.RoomID, aliceTicket)
	r.JSON(t, &alice)
	if r.Status != 200 || alice.AdmissionStatus != "Admitted" || !strings.HasPrefix(alice.ParticipantToken, "rtc.") {
		t.Fatalf("join: %d %s", r.Status, r.Body)
	}
	checkErrorBody(t, join(room.RoomID, aliceTicket), 401, "room_ticket_consumed")
	// The token works in its room only, and never as an API token.
	if r := device(ts, "POST", dev+"/heartbeat", alice.ParticipantToken, false, "", nil); r.Status != 200 {
		t.Fatalf("heartbeat: %d %s", r.Status, r.Body)
	}
	checkErrorBody(t, device(ts, "POST", "/api/v2/rtc/session/rooms/"+roomB.RoomID+"/heartbeat", alice.ParticipantToken, false, "", nil), 401,
		"rtc_token_invalid")
	checkErrorBody(t, ts.Get("/api/v2/rtc/rooms", alice.ParticipantToken), 401, "api_token_required")
	checkErrorBody(t, device(ts, "POST", dev+"/heartbeat", alice.ParticipantToken, true, "", nil), 401, "rtc_token_invalid") // bearer only on SDP
	var refreshed struct {
		ParticipantToken string
		TokenVersion     int
	}
	device(ts, "POST", dev+"/token/refresh", alice.ParticipantToken, false, "", nil).JSON(t, &refreshed)
	if refreshed.TokenVersion != 2 {
		t.Fatalf("refresh: %+v", refreshed)
	}
	checkErrorBody(t, device(ts, "POST", dev+"/heartbeat", alice.ParticipantToken, false, "", nil), 401, "rtc_token_invalid")
	alice.ParticipantToken = refreshed.ParticipantToken

	var viewer, bob joined
	join(room.RoomID, ticket(backend, room.RoomID, map[string]any{"subjectIssuer": "crm", "subjectId": "vic", "role": "viewer",
		"capabilities": all})).JSON(t, &viewer)
	if slices.Contains(viewer.Participant.Capabilities, "camera.publish") {
		t.Fatalf("a viewer kept %v", viewer.Participant.Capabilities)
	}
	checkErrorBody(t, device(ts, "POST", dev+"/publications", viewer.ParticipantToken, false, "application/json",
		jsonBody(t, map[string]any{"mediaKinds": []string{"video"}})), 403, "permission_denied")
	join(room.RoomID, ticket(backend, room.RoomID, map[string]any{"subjectIssuer": "crm", "subjectId": "bob",
		"capabilities": []string{"microphone.publish", "publications.subscribe"}})).JSON(t, &bob)

	var pub struct {
		PublicationID string
		State         string
		MediaKinds    []string
		WhipURL       string
	}
	r = device(ts, "POST", dev+"/publications", alice.ParticipantToken, false, "application/json", []byte(`{}`))
	r.JSON(t, &pub)
	if r.Status != 200 || pub.State != "Pending" || len(pub.MediaKinds) != 2 || pub.WhipURL != dev+"/publications/"+pub.PublicationID+"/whip" {
		t.Fatalf("publication: %d %s", r.Status, r.Body)
	}
	// Bob may publish audio only: his video is filtered out.
	var bobPub struct{ MediaKinds []string }
	device(ts, "POST", dev+"/publications", bob.ParticipantToken, false, "application/json", []byte(`{"mediaKinds":["audio","video"]}`)).JSON(t, &bobPub)
	if strings.Join(bobPub.MediaKinds, ",") != "audio" {
		t.Fatalf("bob's publication carries %v, want audio", bobPub.MediaKinds)
	}
	offer := []byte("v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n")
	checkErrorBody(t, device(ts, "POST", pub.WhipURL, bob.ParticipantToken, true, "application/sdp", offer), 403, "permission_denied")
	checkErrorBody(t, device(ts, "POST", pub.WhipURL, alice.ParticipantToken, true, "text/plain", offer), 415, "unsupported_media_type")
	checkErrorBody(t, device(ts, "POST", dev+"/subscriptions", bob.ParticipantToken, false, "application/json",
		jsonBody(t, map[string]any{"publicationId": pub.PublicationID})), 409, "publication_not_active")
	checkErrorBody(t, device(ts, "POST", dev+"/playback-ticket", bob.ParticipantToken, false, "application/json",
		jsonBody(t, map[string]any{"publicationId": pub.PublicationID})), 409, "publication_not_active")
	// No media server is enrolled: the publication fails.
	checkErrorBody(t, device(ts, "POST", pub.WhipURL, alice.ParticipantToken, true, "application/sdp", offer), 503, "unavailable")
	checkErrorBody(t, device(ts, "POST", pub.WhipURL, alice.ParticipantToken, true, "application/sdp", offer), 409, "conflict")

	if r := device(ts, "POST", dev+"/leave", bob.ParticipantToken, false, "", nil); r.Status != 200 {
		t.Fatalf("leave: %d %s", r.Status, r.Body)
	}
	checkErrorBody(t, device(ts, "POST", dev+"/heartbeat", bob.ParticipantToken, false, "", nil), 401, "rtc_token_invalid")
	var closed struct{ Status string }
	ts.Do("POST", base+"/close", backend, "", nil).JSON(t, &closed)
	if closed.Status != "Closed" {
		t.Fatalf("close: %+v", closed)
	}
	checkErrorBody(t, device(ts, "POST", dev+"/heartbeat", alice.ParticipantToken, false, "", nil), 401, "rtc_token_invalid")
	checkErrorBody(t, ts.Do("POST", base+"/access-tickets", backend, "application/json", jsonBody(t, map[string]any{"subjectIssuer": "crm", "subjectId": "x"})),
		409, "room_closed")

	var names []string
	for _, ev := range rtcEvents(t, ts) {
		names = append(names, ev.EventName)
		var d map[string]any
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			t.Fatal(err)
		}
		var keys []string
		for k := range d {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		want := "EventType,ParticipantId,RoomId,Sequence,TargetParticipantId,occurredAtUtc"
		if ev.EventName == events.RTCRoomCreated {
			want = "MediaServerId,Name,RoomId,RoomType,ScheduledEndAtUtc,ScheduledStartAtUtc,Status"
		}
		if strings.Join(keys, ",") != want {
			t.Fatalf("%s carries %v, want %s", ev.EventName, keys, want)
		}
		if s := string(ev.Data); strings.Contains(s, "Alice") || strings.Contains(s, "alice") || strings.Contains(s, "http") {
			t.Fatalf("%s carries a name or URL: %s", ev.EventName, s)
		}
	}
	want := "rtc.room.created,rtc.room.created,rtc.participant.joined,rtc.participant.joined,rtc.participant.joined,rtc.publication.failed," +
		"rtc.participant.left,rtc.room.closed"
	if strings.Join(names, ",") != want {
		t.Fatalf("events\n  %s\nwant\n  %s", strings.Join(names, ","), want)
	}
}

// TestWaitingRoomAndHandOver: a member waits in the waiting room and may
// only heartbeat until the host admits it (rtc.participant.joined names
// the host and the admitted participant); the host hands over, and the
// former host is refused host operations (403) while the new one starts
// the recording.
func TestWaitingRoomAndHandOver(t *testing.T) {
	ts := controlnode.StartNode(t, "waiting", "", "")
	backend := ts.Token("rtc.manage")
	var room struct{ RoomID string }
	ts.Do("POST", "/api/v2/rtc/rooms", backend, "application/json", jsonBody(t, map[string]any{"name": "Board", "waitingRoom": true})).JSON(t, &room)
	base, dev := "/api/v2/rtc/rooms/"+room.RoomID, "/api/v2/rtc/session/rooms/"+room.RoomID
	if r := ts.Do("PUT", base+"/recording-policy", backend, "application/json", []byte(`{"enabled":true}`)); r.Status != 200 {
		t.Fatalf("policy: %d %s", r.Status, r.Body)
	}
	type joined struct {
		ParticipantToken, AdmissionStatus string
		Participant                       struct{ ParticipantID, Role string }
	}
	join := func(role string) joined {
		var tk struct{ AccessTicket string }
		ts.Do("POST", base+"/access-tickets", backend, "application/json", jsonBody(t, map[string]any{"subjectIssuer": "crm", "subjectId": role,
			"role": role, "capabilities": []string{"camera.publish", "microphone.publish"}})).JSON(t, &tk)
		var j joined
		r := device(ts, "POST", dev+"/join", "", false, "application/json", jsonBody(t, map[string]any{"accessTicket": tk.AccessTicket}))
		r.JSON(t, &j)
		return j
	}
	host, member := join("host"), join("member")
	if host.AdmissionStatus != "Admitted" || member.AdmissionStatus != "Waiting" {
		t.Fatalf("host %s, member %s", host.AdmissionStatus, member.AdmissionStatus)
	}
	checkErrorBody(t, device(ts, "POST", dev+"/publications", member.ParticipantToken, false, "application/json", []byte(`{}`)), 403, "permission_denied")
	checkErrorBody(t, device(ts, "POST", dev+"/participants/"+member.Participant.ParticipantID+"/admit", member.ParticipantToken, false, "", nil), 403,
		"permission_denied")
	if r := device(ts, "POST", dev+"/heartbeat", member.ParticipantToken, false, "", nil); r.Status != 200 {
		t.Fatalf("a waiting participant's heartbeat: %d %s", r.Status, r.Body)
	}
	var roster struct {
		Items []struct{ AdmissionStatus string }
	}
	device(ts, "GET", dev+"/participants", host.ParticipantToken, false, "", nil).JSON(t, &roster)
	if len(roster.Items) != 2 {
		t.Fatalf("roster: %+v", roster)
	}
	var admitted struct{ AdmissionStatus string }
	device(ts, "POST", dev+"/participants/"+member.Participant.ParticipantID+"/admit", host.ParticipantToken, false, "", nil).JSON(t, &admitted)
	if admitted.AdmissionStatus != "Admitted" {
		t.Fatalf("admit: %+v", admitted)
	}
	evs := rtcEvents(t, ts)
	last := evs[len(evs)-1]
	if last.EventName != events.RTCParticipantJoined || !strings.Contains(string(last.Data), `"ParticipantId":"`+host.Participant.ParticipantID+`"`) ||
		!strings.Contains(string(last.Data), `"TargetParticipantId":"`+member.Participant.ParticipantID+`"`) {
		t.Fatalf("admission event %s %s", last.EventName, last.Data)
	}
	if r := device(ts, "POST", dev+"/publications", member.ParticipantToken, false, "application/json", []byte(`{}`)); r.Status != 200 {
		t.Fatalf("an admitted member's publication: %d %s", r.Status, r.Body)
	}
	var newHost struct{ Role string }
	device(ts, "POST", dev+"/participants/"+member.Participant.ParticipantID+"/host", host.ParticipantToken, false, "", nil).JSON(t, &newHost)
	if newHost.Role != "host" {
		t.Fatalf("hand over: %+v", newHost)
	}
	checkErrorBody(t, device(ts, "POST", dev+"/recording/continuous/start", host.ParticipantToken, false, "", nil), 403, "permission_denied")
	var rec struct{ RecordingID, State string }
	r := device(ts, "POST", dev+"/recording/continuous/start", member.ParticipantToken, false, "", nil)
	r.JSON(t, &rec)
	if r.Status != 200 || rec.State != "Recording" {
		t.Fatalf("the new host's start: %d %s", r.Status, r.Body)
	}
	checkErrorBody(t, device(ts, "POST", dev+"/recording/continuous/"+rec.RecordingID+"/stop", host.ParticipantToken, false, "", nil), 403,
		"permission_denied")
	var cur struct{ Recording *struct{ RecordingID string } }
	device(ts, "GET", dev+"/recording/continuous/current", host.ParticipantToken, false, "", nil).JSON(t, &cur)
	if cur.Recording == nil || cur.Recording.RecordingID != rec.RecordingID {
		t.Fatalf("current for a member: %+v", cur)
	}
}
