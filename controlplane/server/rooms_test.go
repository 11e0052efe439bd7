package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/svcplatform/svc/controlplane/events"
	"github.com/svcplatform/svc/controlplane/httpapi"
	"github.com/svcplatform/svc/controlplane/store"
)

// device sends a meeting device's request with its participant token in
// X-Svc-RTC-Token (or as a bearer).
func (ts *testServer) device(method, path, token string, bearer bool, contentType string, body []byte) response {
	ts.t.Helper()
	req, err := http.NewRequest(method, ts.url+path, bytes.NewReader(body))
	if err != nil {
		ts.t.Fatal(err)
	}
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
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		ts.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: data}
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
func rtcEvents(t *testing.T, ts *testServer) []events.Envelope {
	t.Helper()
	resp, err := ts.s.Node.Range(context.Background(), events.OutboxPrefix, store.RangeOptions{End: store.PrefixEnd(events.OutboxPrefix)})
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
	ts := startServer(t, "rooms", "", "")
	backend := ts.token("rtc.manage")
	other := ts.token("rtc.manage")
	create := func(tok string, body map[string]any) response {
		return ts.do("POST", "/api/v2/rtc/rooms", tok, "application/json", jsonBody(t, body))
	}
	var room, again struct{ RoomID, Status, MediaServerID string }
	r := create(backend, map[string]any{"name": "Standup", "idempotencyKey": "standup-1"})
	r.json(t, &room)
	create(backend, map[string]any{"name": "Standup", "idempotencyKey": "standup-1"}).json(t, &again)
	if r.status != 200 || room.RoomID == "" || room.RoomID != again.RoomID || room.Status != "Open" {
		t.Fatalf("idempotent creation: %d %s, again %+v", r.status, r.body, again)
	}
	checkErrorBody(t, create(backend, map[string]any{"name": "Other", "idempotencyKey": "standup-1"}), 409, "idempotency_conflict")
	var roomB struct{ RoomID string }
	create(backend, map[string]any{"name": "Board"}).json(t, &roomB)

	var list struct {
		Total int
		Rows  []struct{ RoomID string }
	}
	ts.get("/api/v2/rtc/rooms?status=Open", backend).json(t, &list)
	if list.Total != 2 {
		t.Fatalf("the owner lists %d rooms, want 2", list.Total)
	}
	ts.get("/api/v2/rtc/rooms", other).json(t, &list)
	if list.Total != 0 {
		t.Fatalf("another token lists %d rooms, want 0", list.Total)
	}
	checkErrorBody(t, ts.get("/api/v2/rtc/rooms/"+room.RoomID, other), 404, "not_found")
	if r := ts.get("/api/v2/rtc/rooms/"+room.RoomID, backend); r.status != 200 {
		t.Fatalf("get: %d %s", r.status, r.body)
	}

	base := "/api/v2/rtc/rooms/" + room.RoomID
	dev := "/api/v2/rtc/session/rooms/" + room.RoomID
	ticket := func(tok, roomID string, body map[string]any) string {
		t.Helper()
		var tk struct{ AccessTicket string }
		r := ts.do("POST", "/api/v2/rtc/rooms/"+roomID+"/access-tickets", tok, "application/json", jsonBody(t, body))
		if r.status != 200 {
			t.Fatalf("access ticket: %d %s", r.status, r.body)
		}
		r.json(t, &tk)
		return tk.AccessTicket
	}
	checkErrorBody(t, ts.do("POST", base+"/access-tickets", other, "application/json", jsonBody(t, map[string]any{"subjectIssuer": "crm", "subjectId": "x"})),
		404, "not_found")
	join := func(roomID, tk string) response {
		return ts.device("POST", "/api/v2/rtc/session/rooms/"+roomID+"/join", "", false, "application/json", jsonBody(t, map[string]any{"accessTicket": tk,
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
	checkErrorBody(t, ts.device("POST", dev+"/heartbeat", aliceTicket, false, "", nil), 401, "rtc_token_invalid")
	checkErrorBody(t, ts.get("/api/v2/rtc/rooms", aliceTicket), 401, "api_token_required")
	checkErrorBody(t, join(roomB.RoomID, aliceTicket), 401, "room_ticket_invalid")
	var alice joined
	r = join(room.RoomID, aliceTicket)
	r.json(t, &alice)
	if r.status != 200 || alice.AdmissionStatus != "Admitted" || !strings.HasPrefix(alice.ParticipantToken, "rtc.") {
		t.Fatalf("join: %d %s", r.status, r.body)
	}
	checkErrorBody(t, join(room.RoomID, aliceTicket), 401, "room_ticket_consumed")
	// The token works in its room only, and never as an API token.
	if r := ts.device("POST", dev+"/heartbeat", alice.ParticipantToken, false, "", nil); r.status != 200 {
		t.Fatalf("heartbeat: %d %s", r.status, r.body)
	}
	checkErrorBody(t, ts.device("POST", "/api/v2/rtc/session/rooms/"+roomB.RoomID+"/heartbeat", alice.ParticipantToken, false, "", nil), 401,
		"rtc_token_invalid")
	checkErrorBody(t, ts.get("/api/v2/rtc/rooms", alice.ParticipantToken), 401, "api_token_required")
	checkErrorBody(t, ts.device("POST", dev+"/heartbeat", alice.ParticipantToken, true, "", nil), 401, "rtc_token_invalid") // bearer only on SDP
	var refreshed struct {
		ParticipantToken string
		TokenVersion     int
	}
	ts.device("POST", dev+"/token/refresh", alice.ParticipantToken, false, "", nil).json(t, &refreshed)
	if refreshed.TokenVersion != 2 {
		t.Fatalf("refresh: %+v", refreshed)
	}
	checkErrorBody(t, ts.device("POST", dev+"/heartbeat", alice.ParticipantToken, false, "", nil), 401, "rtc_token_invalid")
	alice.ParticipantToken = refreshed.ParticipantToken

	var viewer, bob joined
	join(room.RoomID, ticket(backend, room.RoomID, map[string]any{"subjectIssuer": "crm", "subjectId": "vic", "role": "viewer",
		"capabilities": all})).json(t, &viewer)
	if slices.Contains(viewer.Participant.Capabilities, "camera.publish") {
		t.Fatalf("a viewer kept %v", viewer.Participant.Capabilities)
	}
	checkErrorBody(t, ts.device("POST", dev+"/publications", viewer.ParticipantToken, false, "application/json",
		jsonBody(t, map[string]any{"mediaKinds": []string{"video"}})), 403, "permission_denied")
	join(room.RoomID, ticket(backend, room.RoomID, map[string]any{"subjectIssuer": "crm", "subjectId": "bob",
		"capabilities": []string{"microphone.publish", "publications.subscribe"}})).json(t, &bob)

	var pub struct {
		PublicationID string
		State         string
		MediaKinds    []string
		WhipURL       string
	}
	r = ts.device("POST", dev+"/publications", alice.ParticipantToken, false, "application/json", []byte(`{}`))
	r.json(t, &pub)
	if r.status != 200 || pub.State != "Pending" || len(pub.MediaKinds) != 2 || pub.WhipURL != dev+"/publications/"+pub.PublicationID+"/whip" {
		t.Fatalf("publication: %d %s", r.status, r.body)
	}
	// Bob may publish audio only: his video is filtered out.
	var bobPub struct{ MediaKinds []string }
	ts.device("POST", dev+"/publications", bob.ParticipantToken, false, "application/json", []byte(`{"mediaKinds":["audio","video"]}`)).json(t, &bobPub)
	if strings.Join(bobPub.MediaKinds, ",") != "audio" {
		t.Fatalf("bob's publication carries %v, want audio", bobPub.MediaKinds)
	}
	offer := []byte("v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n")
	checkErrorBody(t, ts.device("POST", pub.WhipURL, bob.ParticipantToken, true, "application/sdp", offer), 403, "permission_denied")
	checkErrorBody(t, ts.device("POST", pub.WhipURL, alice.ParticipantToken, true, "text/plain", offer), 415, "unsupported_media_type")
	checkErrorBody(t, ts.device("POST", dev+"/subscriptions", bob.ParticipantToken, false, "application/json",
		jsonBody(t, map[string]any{"publicationId": pub.PublicationID})), 409, "publication_not_active")
	checkErrorBody(t, ts.device("POST", dev+"/playback-ticket", bob.ParticipantToken, false, "application/json",
		jsonBody(t, map[string]any{"publicationId": pub.PublicationID})), 409, "publication_not_active")
	// No media server is enrolled: the publication fails.
	checkErrorBody(t, ts.device("POST", pub.WhipURL, alice.ParticipantToken, true, "application/sdp", offer), 503, "unavailable")
	checkErrorBody(t, ts.device("POST", pub.WhipURL, alice.ParticipantToken, true, "application/sdp", offer), 409, "conflict")

	if r := ts.device("POST", dev+"/leave", bob.ParticipantToken, false, "", nil); r.status != 200 {
		t.Fatalf("leave: %d %s", r.status, r.body)
	}
	checkErrorBody(t, ts.device("POST", dev+"/heartbeat", bob.ParticipantToken, false, "", nil), 401, "rtc_token_invalid")
	var closed struct{ Status string }
	ts.do("POST", base+"/close", backend, "", nil).json(t, &closed)
	if closed.Status != "Closed" {
		t.Fatalf("close: %+v", closed)
	}
	checkErrorBody(t, ts.device("POST", dev+"/heartbeat", alice.ParticipantToken, false, "", nil), 401, "rtc_token_invalid")
	checkErrorBody(t, ts.do("POST", base+"/access-tickets", backend, "application/json", jsonBody(t, map[string]any{"subjectIssuer": "crm", "subjectId": "x"})),
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
