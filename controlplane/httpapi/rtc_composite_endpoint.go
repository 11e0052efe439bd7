package httpapi

import (
	"context"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/rooms"
)

// Meeting composites (rtcEndpoints, continued).

func toComposite(c *rooms.Composite) contract.RtcComposite {
	out := contract.RtcComposite{CompositeId: mustUUID(c.CompositeID), Kind: contract.RtcCompositeKind(c.Kind), State: contract.RtcExportState(c.State),
		Attempts: int32(c.Attempts), DurationMilliseconds: c.DurationMs, CreatedAtUtc: c.CreatedAt, CompletedAtUtc: c.CompletedAt}
	if c.ParticipantID != "" {
		p := mustUUID(string(c.ParticipantID))
		out.ParticipantId = &p
	}
	if c.LastError != "" {
		out.LastError = &c.LastError
	}
	if c.FileSize > 0 {
		out.FileSize = &c.FileSize
	}
	return out
}

func (e *rtcEndpoints) RetryRtcComposite(ctx context.Context, req contract.RetryRtcCompositeRequestObject) (contract.RetryRtcCompositeResponseObject, error) {
	c, err := e.rooms.RetryComposite(requestContext(ctx), roomCaller(ctx), roomID(req.RoomId), req.RecordingId, req.CompositeId.String())
	if err != nil {
		return nil, err
	}
	return contract.RetryRtcComposite200JSONResponse(toComposite(c)), nil
}
