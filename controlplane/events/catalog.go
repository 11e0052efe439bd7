package events

import (
	"fmt"
	"strings"
)

// Standard event names of the catalog not declared in event.go. Append-only.
const (
	DeviceGB28181Registered   = "device.gb28181.registered"
	DeviceGB28181Unregistered = "device.gb28181.unregistered"
	DeviceGB28181Offline      = "device.gb28181.offline"
	DeviceGB28181Recovered    = "device.gb28181.recovered"
	DeviceGB28181AuthFailed   = "device.gb28181.auth_failed"
	RTCRoomCreated            = "rtc.room.created"
	RTCRoomClosed             = "rtc.room.closed"
	RTCParticipantJoined      = "rtc.participant.joined"
	RTCParticipantLeft        = "rtc.participant.left"
	RTCParticipantTimedOut    = "rtc.participant.timed_out"
	RTCPublicationStarted     = "rtc.publication.started"
	RTCPublicationStopped     = "rtc.publication.stopped"
	RTCPublicationFailed      = "rtc.publication.failed"
	RTCRecordingFailed        = "rtc.recording.failed"
)

// CatalogEvent is one entry of the standard event catalog.
type CatalogEvent struct {
	Name, Trigger string
	Source        Source
}

// CatalogGroup is a family of events that one `prefix.*` selects, with the
// permission a runtime-state WebSocket client needs to see them.
type CatalogGroup struct {
	Name, Description, Wildcard, Permission string
	Events                                  []CatalogEvent
}

// EngineHooks are the engine hooks the platform's engine sends, in catalog
// form; plans may also name any other well-formed hook.
var EngineHooks = []string{"OnPublish", "OnPlay", "OnStreamChanged", "OnStreamNoneReader", "OnStreamNotFound",
	"OnRecordMp4", "OnFlowReport", "OnRtpServerTimeout", "OnServerKeepalive", "OnServerStarted"}

// Catalog is contract A's standard event catalog, grouped by prefix.
func Catalog() []CatalogGroup {
	hooks := make([]CatalogEvent, 0, len(EngineHooks))
	for _, h := range EngineHooks {
		hooks = append(hooks, CatalogEvent{EngineWebhookPrefix + h, "the media engine posted its " + h + " hook (RawJson holds the upstream JSON)", SourceEngine})
	}
	return []CatalogGroup{
		{Name: "media.server", Description: "media-server lifecycle", Wildcard: "media.server.*", Permission: "nodes.view", Events: []CatalogEvent{
			{MediaServerStarted, "media-server lifecycle goes from non-online to online", SourceMedia},
			{MediaServerStopped, "managed stop or lifecycle transition to offline", SourceMedia},
			{MediaServerCrashed, "the managed process disappears unexpectedly", SourceMedia},
			{MediaServerStartFailed, "automatic startup does not remain running", SourceMedia},
			{MediaServerRecovered, "a previously offline server becomes online again", SourceMedia},
		}},
		{Name: "media.stream", Description: "stream registration", Wildcard: "media.stream.*", Permission: "streams.view", Events: []CatalogEvent{
			{MediaStreamOnline, "stream registration (separate notifications may occur per protocol track)", SourceMedia},
			{MediaStreamOffline, "stream deregistration", SourceMedia},
		}},
		{Name: "recording", Description: "recording files", Wildcard: "recording.*", Permission: "recordings.view", Events: []CatalogEvent{
			{RecordingFileCompleted, "an MP4 segment is finalized (file name only, no absolute path)", SourceRecording},
		}},
		{Name: "device.gb28181", Description: "GB28181 device registration and presence", Wildcard: "device.gb28181.*", Permission: "devices.view", Events: []CatalogEvent{
			{DeviceGB28181Registered, "first successful REGISTER creates the device record", SourceGB28181},
			{DeviceGB28181Unregistered, "explicit unregister completes channel and session convergence", SourceGB28181},
			{DeviceGB28181Offline, "online state becomes offline after the heartbeat window", SourceGB28181},
			{DeviceGB28181Recovered, "an offline device REGISTERs or sends keep-alive successfully", SourceGB28181},
			{DeviceGB28181AuthFailed, "digest authentication fails", SourceGB28181},
		}},
		{Name: "rtc", Description: "meeting rooms, participants, publications and room recording", Wildcard: "rtc.*", Permission: "rtc.manage", Events: []CatalogEvent{
			{RTCRoomCreated, "room persisted", SourceRTC},
			{RTCRoomClosed, "room closed and media released", SourceRTC},
			{RTCParticipantJoined, "secure admission completes", SourceRTC},
			{RTCParticipantLeft, "explicit leave", SourceRTC},
			{RTCParticipantTimedOut, "heartbeat-timeout governance completes", SourceRTC},
			{RTCPublicationStarted, "WHIP or RTMP publication starts", SourceRTC},
			{RTCPublicationStopped, "WHIP or RTMP publication stops", SourceRTC},
			{RTCPublicationFailed, "WHIP or RTMP publication fails", SourceRTC},
			{RTCRecordingFailed, "room recording start or stop fails", SourceRTC},
		}},
		{
			Name:        "engine.webhook",
			Description: "raw media-engine hooks (authentication, keep-alive, play, publish, flow report)",
			Wildcard:    "engine.webhook.*",
			Permission:  "system.logs.view",
			Events:      hooks,
		},
		{
			Name:        "system.webhook",
			Description: "operator tests of a delivery plan; delivered only to the selected plan",
			Wildcard:    "system.webhook.*",
			Permission:  "system.view",
			Events: []CatalogEvent{
				{SystemWebhookTest, "operator test; delivered only to the selected plan", SourceWebhookTest},
			},
		},
	}
}

// PermissionFor is the permission needed to see an event on the
// runtime-state WebSocket: the permission of its catalog group, or `*` for
// a name outside the catalog.
func PermissionFor(eventName string) string {
	for _, g := range catalogGroups {
		if strings.HasPrefix(eventName, g.Name+".") {
			return g.Permission
		}
	}
	return "*"
}

var catalogGroups = Catalog()

// known reports whether name is an exact catalog name or a well-formed
// engine hook event.
func known(name string) bool {
	if hook, ok := strings.CutPrefix(name, EngineWebhookPrefix); ok {
		return hookNameRe.MatchString(hook) && !strings.Contains(hook, "_")
	}
	for _, g := range catalogGroups {
		for _, e := range g.Events {
			if e.Name == name {
				return true
			}
		}
	}
	return false
}

// ValidateSelector checks one entry of a plan's event scope after
// normalisation: an exact catalog name, an engine hook event, or a prefix
// ending in `.*` that selects at least one catalog event. Rejecting names
// the catalog does not know catches typos that would otherwise silently
// never match.
func ValidateSelector(sel string) error {
	if prefix, ok := strings.CutSuffix(sel, ".*"); ok {
		if prefix == "" || strings.Contains(prefix, "*") {
			return fmt.Errorf("%w: event selector %q: a wildcard is a prefix followed by .*", ErrInvalid, sel)
		}
		for _, g := range catalogGroups {
			if hasPrefixedEvent(g, prefix+".") {
				return nil
			}
		}
		return fmt.Errorf("%w: event selector %q selects no event of the catalog", ErrInvalid, sel)
	}
	if strings.Contains(sel, "*") {
		return fmt.Errorf("%w: event selector %q: a wildcard is a prefix followed by .*", ErrInvalid, sel)
	}
	if !known(sel) {
		return fmt.Errorf("%w: event %q is not in the event catalog (GET /api/v2/system/webhooks/catalog)", ErrInvalid, sel)
	}
	return nil
}

func hasPrefixedEvent(g CatalogGroup, prefix string) bool {
	for _, e := range g.Events {
		if strings.HasPrefix(e.Name, prefix) {
			return true
		}
	}
	return false
}

// Matches reports whether an event name is selected by any selector.
func Matches(selectors []string, name string) bool {
	for _, s := range selectors {
		if prefix, ok := strings.CutSuffix(s, "*"); ok {
			if strings.HasPrefix(name, prefix) {
				return true
			}
		} else if s == name {
			return true
		}
	}
	return false
}
