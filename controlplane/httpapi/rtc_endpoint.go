package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/gin-gonic/gin"
	openapi_types "github.com/oapi-codegen/runtime/types"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/identity"
	"github.com/svcplatform/svc/controlplane/playback"
	"github.com/svcplatform/svc/controlplane/rooms"
)

// rtcEndpoints serves meeting rooms: the business backend's rooms and
// access tickets, and the devices' join, heartbeat, leave, publications
// (WHIP) and subscriptions (WHEP) with their participant tokens.
type rtcEndpoints struct {
	rooms *rooms.Service
}

func init() {
	// SDP offers and trickle fragments are text the engine parses; the
	// contract only bounds them.
	openapi3filter.RegisterBodyDecoder("application/sdp", openapi3filter.PlainBodyDecoder)
	openapi3filter.RegisterBodyDecoder("application/trickle-ice-sdpfrag", openapi3filter.PlainBodyDecoder)
}

// RTCTokenHeader carries the participant token.
const RTCTokenHeader = "X-Svc-RTC-Token"

// maxSDP bounds an SDP offer or trickle fragment, as the engine does.
const maxSDP = 64 << 10

func roomCaller(ctx context.Context) rooms.Caller {
	id := identity.From(requestContext(ctx))
	if id == nil {
		return rooms.Caller{}
	}
	if id.Kind == identity.KindSession {
		return rooms.Caller{TokenID: playback.SessionCredential + id.CredentialID}
	}
	return rooms.Caller{TokenID: id.CredentialID}
}

// participantToken reads the participant token of a device request: the
// header, or (on the WHIP/WHEP operations, bearer true) a bearer
// credential, which standard WHIP clients send. Anything else there (an
// API token, a ticket) simply fails the room's check.
func participantToken(ctx context.Context, bearer bool) string {
	c, ok := ctx.(*gin.Context)
	if !ok {
		return ""
	}
	if t := c.GetHeader(RTCTokenHeader); t != "" {
		return t
	}
	if bearer {
		scheme, cred, ok := strings.Cut(c.GetHeader("Authorization"), " ")
		if ok && strings.EqualFold(scheme, "Bearer") {
			return strings.TrimSpace(cred)
		}
	}
	return ""
}

func roomID(id openapi_types.UUID) rooms.RoomID { return rooms.RoomID(id.String()) }

func toRoom(r *rooms.Room) contract.RtcRoom {
	id, _ := parseUUID(string(r.RoomID))
	return contract.RtcRoom{RoomId: id, Name: r.Name, RoomType: r.RoomType, MediaServerId: r.MediaServerID, Status: contract.RtcRoomStatus(r.Status),
		WaitingRoom: r.WaitingRoom, ScheduledStartAtUtc: r.ScheduledFrom, ScheduledEndAtUtc: r.ScheduledTo, CreatedAt: r.CreatedAt, ClosedAt: r.ClosedAt}
}

func parseUUID(s string) (openapi_types.UUID, error) {
	var u openapi_types.UUID
	err := u.UnmarshalText([]byte(s))
	return u, err
}

func mustUUID(s string) openapi_types.UUID {
	u, _ := parseUUID(s)
	return u
}

func (e *rtcEndpoints) CreateRtcRoom(ctx context.Context, req contract.CreateRtcRoomRequestObject) (contract.CreateRtcRoomResponseObject, error) {
	b := req.Body
	r, _, err := e.rooms.CreateRoom(requestContext(ctx), roomCaller(ctx), rooms.CreateRequest{Name: b.Name, RoomType: orZero(b.RoomType),
		MediaServerID: orZero(b.MediaServerId), WaitingRoom: b.WaitingRoom != nil && *b.WaitingRoom, ScheduledFrom: b.ScheduledStartAtUtc,
		ScheduledTo: b.ScheduledEndAtUtc, IdempotencyKey: orZero(b.IdempotencyKey)})
	if err != nil {
		return nil, err
	}
	return contract.CreateRtcRoom200JSONResponse(toRoom(r)), nil
}

// orZero is *p, or the zero value.
func orZero[T any](p *T) T {
	var zero T
	return deref(p, zero)
}

func (e *rtcEndpoints) ListRtcRooms(ctx context.Context, req contract.ListRtcRoomsRequestObject) (contract.ListRtcRoomsResponseObject, error) {
	page, size := 1, 20
	if req.Params.Page != nil {
		page = int(*req.Params.Page)
	}
	if req.Params.PageSize != nil {
		size = int(*req.Params.PageSize)
	}
	rs, total, err := e.rooms.ListRooms(requestContext(ctx), roomCaller(ctx), string(orZero(req.Params.Status)), page, size)
	if err != nil {
		return nil, err
	}
	out := contract.RtcRoomList{Page: int32(page), PageSize: int32(size), Total: total, Rows: make([]contract.RtcRoom, 0, len(rs))}
	for i := range rs {
		out.Rows = append(out.Rows, toRoom(&rs[i]))
	}
	return contract.ListRtcRooms200JSONResponse(out), nil
}

func (e *rtcEndpoints) GetRtcRoom(ctx context.Context, req contract.GetRtcRoomRequestObject) (contract.GetRtcRoomResponseObject, error) {
	r, err := e.rooms.Room(requestContext(ctx), roomCaller(ctx), roomID(req.RoomId))
	if err != nil {
		return nil, err
	}
	return contract.GetRtcRoom200JSONResponse(toRoom(r)), nil
}

func (e *rtcEndpoints) CloseRtcRoom(ctx context.Context, req contract.CloseRtcRoomRequestObject) (contract.CloseRtcRoomResponseObject, error) {
	r, err := e.rooms.CloseRoom(requestContext(ctx), roomCaller(ctx), roomID(req.RoomId))
	if err != nil {
		return nil, err
	}
	return contract.CloseRtcRoom200JSONResponse(toRoom(r)), nil
}

func (e *rtcEndpoints) CreateRtcAccessTicket(ctx context.Context, req contract.CreateRtcAccessTicketRequestObject) (contract.CreateRtcAccessTicketResponseObject,
	error) {
	b := req.Body
	tr := rooms.TicketRequest{SubjectIssuer: b.SubjectIssuer, SubjectID: b.SubjectId, DisplayName: orZero(b.DisplayName), Role: string(orZero(b.Role)),
		ExpiresInMinutes: int(orZero(b.ExpiresInMinutes)), BypassWaitingRoom: orZero(b.BypassWaitingRoom)}
	for _, c := range orZero(b.Capabilities) {
		tr.Capabilities = append(tr.Capabilities, string(c))
	}
	ticket, exp, err := e.rooms.IssueTicket(requestContext(ctx), roomCaller(ctx), roomID(req.RoomId), tr)
	if err != nil {
		return nil, err
	}
	return contract.CreateRtcAccessTicket200JSONResponse{AccessTicket: ticket, RoomId: req.RoomId, ExpiresAt: exp}, nil
}

func toParticipant(p *rooms.Participant) contract.RtcParticipant {
	caps := make([]contract.RtcCapability, 0, len(p.Capabilities))
	for _, c := range p.Capabilities {
		caps = append(caps, contract.RtcCapability(c))
	}
	return contract.RtcParticipant{ParticipantId: mustUUID(string(p.ParticipantID)), RoomId: mustUUID(string(p.RoomID)), DisplayName: p.DisplayName,
		Role: contract.RtcRole(p.Role), Capabilities: caps, AdmissionStatus: contract.RtcParticipantAdmissionStatus(p.State),
		TokenVersion: int32(p.TokenVersion), JoinedAt: p.JoinedAt}
}

func (e *rtcEndpoints) JoinRtcRoom(ctx context.Context, req contract.JoinRtcRoomRequestObject) (contract.JoinRtcRoomResponseObject, error) {
	b := req.Body
	j, err := e.rooms.Join(requestContext(ctx), roomID(req.RoomId), rooms.JoinRequest{AccessTicket: b.AccessTicket, DisplayName: orZero(b.DisplayName),
		Platform: orZero(b.Platform), ClientVersion: orZero(b.ClientVersion)})
	if err != nil {
		return nil, err
	}
	return contract.JoinRtcRoom200JSONResponse{ParticipantToken: j.Token, ExpiresAt: j.Participant.LastHeartbeatAt.Add(e.rooms.Timeout()),
		Participant: toParticipant(&j.Participant), AdmissionStatus: contract.RtcJoinResultAdmissionStatus(j.Participant.State)}, nil
}

func (e *rtcEndpoints) RefreshRtcToken(ctx context.Context, req contract.RefreshRtcTokenRequestObject) (contract.RefreshRtcTokenResponseObject, error) {
	tok, version, err := e.rooms.RefreshToken(requestContext(ctx), roomID(req.RoomId), participantToken(ctx, false))
	if err != nil {
		return nil, err
	}
	return contract.RefreshRtcToken200JSONResponse{ParticipantToken: tok, TokenVersion: int32(version)}, nil
}

func (e *rtcEndpoints) RtcHeartbeat(ctx context.Context, req contract.RtcHeartbeatRequestObject) (contract.RtcHeartbeatResponseObject, error) {
	if err := e.rooms.Heartbeat(requestContext(ctx), roomID(req.RoomId), participantToken(ctx, false)); err != nil {
		return nil, err
	}
	return contract.RtcHeartbeat200JSONResponse(done(contract.ActionResultActionHeartbeatReceived, req.RoomId.String(), "the participant is alive")), nil
}

func (e *rtcEndpoints) LeaveRtcRoom(ctx context.Context, req contract.LeaveRtcRoomRequestObject) (contract.LeaveRtcRoomResponseObject, error) {
	if err := e.rooms.Leave(requestContext(ctx), roomID(req.RoomId), participantToken(ctx, false)); err != nil {
		return nil, err
	}
	return contract.LeaveRtcRoom200JSONResponse(done(contract.ActionResultActionLeft, req.RoomId.String(), "the participant left the room")), nil
}

func sessionPath(roomID openapi_types.UUID, kind, id string) string {
	return "/api/v2/rtc/session/rooms/" + roomID.String() + "/" + kind + "/" + id
}

func toPublication(p *rooms.Publication) contract.RtcPublication {
	kinds := make([]contract.RtcMediaKind, 0, len(p.MediaKinds))
	for _, k := range p.MediaKinds {
		kinds = append(kinds, contract.RtcMediaKind(k))
	}
	whip := sessionPath(mustUUID(string(p.RoomID)), "publications", p.PublicationID) + "/whip"
	return contract.RtcPublication{PublicationId: mustUUID(p.PublicationID), RoomId: mustUUID(string(p.RoomID)),
		ParticipantId: mustUUID(string(p.ParticipantID)), Source: p.Source, MediaKinds: kinds, State: contract.RtcPublicationState(p.State),
		WhipUrl: &whip, CreatedAt: p.CreatedAt}
}

func (e *rtcEndpoints) CreateRtcPublication(ctx context.Context, req contract.CreateRtcPublicationRequestObject) (contract.CreateRtcPublicationResponseObject,
	error) {
	var pr rooms.PublicationRequest
	if b := req.Body; b != nil {
		pr.Source = string(orZero(b.Source))
		for _, k := range orZero(b.MediaKinds) {
			pr.MediaKinds = append(pr.MediaKinds, string(k))
		}
	}
	pub, err := e.rooms.CreatePublication(requestContext(ctx), roomID(req.RoomId), participantToken(ctx, false), pr)
	if err != nil {
		return nil, err
	}
	return contract.CreateRtcPublication200JSONResponse(toPublication(pub)), nil
}

func (e *rtcEndpoints) ListRtcPublications(ctx context.Context, req contract.ListRtcPublicationsRequestObject) (contract.ListRtcPublicationsResponseObject,
	error) {
	pubs, err := e.rooms.Publications(requestContext(ctx), roomID(req.RoomId), participantToken(ctx, false))
	if err != nil {
		return nil, err
	}
	out := contract.RtcPublicationList{Items: make([]contract.RtcPublication, 0, len(pubs))}
	for i := range pubs {
		out.Items = append(out.Items, toPublication(&pubs[i]))
	}
	return contract.ListRtcPublications200JSONResponse(out), nil
}

// readSDP reads an SDP body (its media type was checked by the guard
// against the contract), bounded like the engine's.
func readSDP(body io.Reader) ([]byte, error) {
	raw, err := io.ReadAll(io.LimitReader(body, maxSDP+1))
	if err != nil {
		return nil, fmt.Errorf("%w: the body could not be read", rooms.ErrSDPRefused)
	}
	if len(raw) > maxSDP {
		return nil, newError(413, "payload_too_large", fmt.Sprintf("SDP bodies are limited to %d bytes", maxSDP))
	}
	return raw, nil
}

// sdpAnswer is the 201 of a WHIP or WHEP offer.
func sdpAnswer(s *rooms.Session, location string) (io.Reader, int64, *string, *string) {
	var note *string
	if len(s.Notes) > 0 {
		n := strings.Join(s.Notes, "; ")
		note = &n
	}
	return bytes.NewReader(s.Answer), int64(len(s.Answer)), &location, note
}

func (e *rtcEndpoints) PublishRtcWhip(ctx context.Context, req contract.PublishRtcWhipRequestObject) (contract.PublishRtcWhipResponseObject, error) {
	sdp, err := readSDP(req.Body)
	if err != nil {
		return nil, err
	}
	s, err := e.rooms.Publish(requestContext(ctx), roomID(req.RoomId), participantToken(ctx, true), req.PublicationId, sdp)
	if err != nil {
		return nil, err
	}
	noStore(ctx)
	body, n, loc, note := sdpAnswer(s, sessionPath(req.RoomId, "publications", req.PublicationId)+"/whip/"+s.ID)
	return contract.PublishRtcWhip201ApplicationsdpResponse{Body: body, ContentLength: n,
		Headers: contract.PublishRtcWhip201ResponseHeaders{Location: loc, XSvcNote: note}}, nil
}

// noStore keeps SDP answers out of caches.
func noStore(ctx context.Context) {
	if c, ok := ctx.(*gin.Context); ok {
		c.Header("Cache-Control", "no-store")
	}
}

func (e *rtcEndpoints) TrickleRtcWhip(ctx context.Context, req contract.TrickleRtcWhipRequestObject) (contract.TrickleRtcWhipResponseObject, error) {
	frag, err := readSDP(req.Body)
	if err != nil {
		return nil, err
	}
	if err := e.rooms.TricklePublication(requestContext(ctx), roomID(req.RoomId), participantToken(ctx, true), req.PublicationId, req.SessionId,
		frag); err != nil {
		return nil, err
	}
	return contract.TrickleRtcWhip204Response{}, nil
}

func (e *rtcEndpoints) DeleteRtcWhip(ctx context.Context, req contract.DeleteRtcWhipRequestObject) (contract.DeleteRtcWhipResponseObject, error) {
	if err := e.rooms.Unpublish(requestContext(ctx), roomID(req.RoomId), participantToken(ctx, true), req.PublicationId, req.SessionId); err != nil {
		return nil, err
	}
	return contract.DeleteRtcWhip200JSONResponse(done(contract.ActionResultActionReleased, req.PublicationId, "the publication stopped")), nil
}

func toRoomSubscription(s *rooms.Subscription) contract.RtcSubscription {
	return contract.RtcSubscription{SubscriptionId: mustUUID(s.SubscriptionID), RoomId: mustUUID(string(s.RoomID)),
		ParticipantId: mustUUID(string(s.ParticipantID)), PublicationId: mustUUID(s.PublicationID), State: contract.RtcSubscriptionState(s.State),
		WhepUrl: sessionPath(mustUUID(string(s.RoomID)), "subscriptions", s.SubscriptionID) + "/whep"}
}

func (e *rtcEndpoints) CreateRtcSubscription(ctx context.Context, req contract.CreateRtcSubscriptionRequestObject) (contract.CreateRtcSubscriptionResponseObject,
	error) {
	sub, err := e.rooms.CreateSubscription(requestContext(ctx), roomID(req.RoomId), participantToken(ctx, false), req.Body.PublicationId.String())
	if err != nil {
		return nil, err
	}
	return contract.CreateRtcSubscription200JSONResponse(toRoomSubscription(sub)), nil
}

func (e *rtcEndpoints) SubscribeRtcWhep(ctx context.Context, req contract.SubscribeRtcWhepRequestObject) (contract.SubscribeRtcWhepResponseObject, error) {
	sdp, err := readSDP(req.Body)
	if err != nil {
		return nil, err
	}
	s, err := e.rooms.Subscribe(requestContext(ctx), roomID(req.RoomId), participantToken(ctx, true), req.SubscriptionId, sdp)
	if err != nil {
		return nil, err
	}
	noStore(ctx)
	body, n, loc, note := sdpAnswer(s, sessionPath(req.RoomId, "subscriptions", req.SubscriptionId)+"/whep/"+s.ID)
	return contract.SubscribeRtcWhep201ApplicationsdpResponse{Body: body, ContentLength: n,
		Headers: contract.SubscribeRtcWhep201ResponseHeaders{Location: loc, XSvcNote: note}}, nil
}

func (e *rtcEndpoints) TrickleRtcWhep(ctx context.Context, req contract.TrickleRtcWhepRequestObject) (contract.TrickleRtcWhepResponseObject, error) {
	frag, err := readSDP(req.Body)
	if err != nil {
		return nil, err
	}
	if err := e.rooms.TrickleSubscription(requestContext(ctx), roomID(req.RoomId), participantToken(ctx, true), req.SubscriptionId, req.SessionId,
		frag); err != nil {
		return nil, err
	}
	return contract.TrickleRtcWhep204Response{}, nil
}

func (e *rtcEndpoints) DeleteRtcWhep(ctx context.Context, req contract.DeleteRtcWhepRequestObject) (contract.DeleteRtcWhepResponseObject, error) {
	if err := e.rooms.Unsubscribe(requestContext(ctx), roomID(req.RoomId), participantToken(ctx, true), req.SubscriptionId, req.SessionId); err != nil {
		return nil, err
	}
	return contract.DeleteRtcWhep200JSONResponse(done(contract.ActionResultActionReleased, req.SubscriptionId, "the media session was released")), nil
}

func (e *rtcEndpoints) CreateRtcPlaybackTicket(ctx context.Context, req contract.CreateRtcPlaybackTicketRequestObject) (
	contract.CreateRtcPlaybackTicketResponseObject, error) {
	url, exp, err := e.rooms.PlaybackTicket(requestContext(ctx), roomID(req.RoomId), participantToken(ctx, false), req.Body.PublicationId.String())
	if err != nil {
		return nil, err
	}
	return contract.CreateRtcPlaybackTicket200JSONResponse{Url: url, ExpiresAt: exp.Truncate(time.Second), Protocol: contract.RtcPlaybackTicketProtocolHttpFlv}, nil
}
