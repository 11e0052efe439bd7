package httpapi

import (
	"bytes"
	"context"
	"errors"
	"net/url"
	"time"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/identity"
	"github.com/svcplatform/svc/controlplane/snapshots"
)

// snapshotEndpoints serves channel snapshots: the overview, the image, the
// access tickets and the schedule.
type snapshotEndpoints struct {
	snaps *snapshots.Service
}

func imageURL(channelID, ticket string) string {
	return "/api/v2/channels/" + url.PathEscape(channelID) + "/snapshots/latest?ticket=" + url.QueryEscape(ticket)
}

func (e *snapshotEndpoints) GetChannelSnapshots(ctx context.Context, r contract.GetChannelSnapshotsRequestObject) (contract.GetChannelSnapshotsResponseObject, error) {
	rctx := requestContext(ctx)
	st, err := e.snaps.Settings(rctx, r.ChannelId)
	if err != nil {
		return nil, err
	}
	out := contract.GetChannelSnapshots200JSONResponse{ChannelId: r.ChannelId, Enabled: st.Enabled, IntervalSeconds: int32(st.IntervalSeconds)}
	if loc, err := e.snaps.Playback.Streams.Locate(rctx, r.ChannelId); err == nil {
		out.StreamOnline = loc.Online
	}
	img, err := e.snaps.Latest(rctx, r.ChannelId)
	if err == nil {
		w, h, size := int32(img.Width), int32(img.Height), int32(len(img.JPEG))
		out.LatestAt, out.Width, out.Height, out.SizeBytes = &img.TakenAt, &w, &h, &size
		for _, a := range []string{snapshots.ActionView, snapshots.ActionDownload} {
			tok, _, err := e.snaps.Ticket(r.ChannelId, a, snapshots.DefaultTicketTTL*time.Second)
			if err != nil {
				return nil, err
			}
			u := imageURL(r.ChannelId, tok)
			if a == snapshots.ActionView {
				out.PreviewUrl = &u
			} else {
				out.DownloadUrl = &u
			}
		}
	} else if !errors.Is(err, snapshots.ErrNotFound) {
		return nil, err
	}
	return out, nil
}

func (e *snapshotEndpoints) GetChannelSnapshot(ctx context.Context, r contract.GetChannelSnapshotRequestObject) (contract.GetChannelSnapshotResponseObject, error) {
	rctx := requestContext(ctx)
	download := deref(r.Params.Download, false)
	if id := identity.From(rctx); id.Kind == identity.KindSnapshotTicket {
		// The guard admitted the ticket for this path's channel; its action
		// decides how the image is answered.
		action, err := e.snaps.CheckTicket(r.ChannelId, deref(r.Params.Ticket, ""))
		if err != nil {
			return nil, err
		}
		download = action == snapshots.ActionDownload
	}
	img, err := e.snaps.Latest(rctx, r.ChannelId)
	if err != nil {
		return nil, err
	}
	c := ginContext(ctx)
	c.Header("Cache-Control", "private, max-age=5")
	disposition := "inline"
	if download {
		disposition = "attachment"
	}
	c.Header("Content-Disposition", disposition+`; filename="`+r.ChannelId+"-"+img.TakenAt.Format("20060102T150405Z")+`.jpg"`)
	return contract.GetChannelSnapshot200ImagejpegResponse{Body: bytes.NewReader(img.JPEG), ContentLength: int64(len(img.JPEG))}, nil
}

func (e *snapshotEndpoints) CreateChannelSnapshotAccess(
	ctx context.Context,
	r contract.CreateChannelSnapshotAccessRequestObject,
) (contract.CreateChannelSnapshotAccessResponseObject, error) {
	if _, err := e.snaps.Settings(requestContext(ctx), r.ChannelId); err != nil {
		return nil, err
	}
	ttl := int(deref(r.Body.TtlSeconds, snapshots.DefaultTicketTTL))
	tok, exp, err := e.snaps.Ticket(r.ChannelId, string(r.Body.Action), time.Duration(ttl)*time.Second)
	if err != nil {
		return nil, err
	}
	return contract.CreateChannelSnapshotAccess200JSONResponse{Ticket: tok, Action: string(r.Body.Action), Url: imageURL(r.ChannelId, tok), ExpiresAt: exp}, nil
}

func (e *snapshotEndpoints) SaveChannelSnapshotSettings(
	ctx context.Context,
	r contract.SaveChannelSnapshotSettingsRequestObject,
) (contract.SaveChannelSnapshotSettingsResponseObject, error) {
	var interval *int
	if r.Body.IntervalSeconds != nil {
		v := int(*r.Body.IntervalSeconds)
		interval = &v
	}
	st, err := e.snaps.SaveSettings(requestContext(ctx), r.ChannelId, r.Body.Enabled, interval)
	if err != nil {
		return nil, err
	}
	return contract.SaveChannelSnapshotSettings200JSONResponse{
		ChannelId:       st.ChannelID,
		Enabled:         st.Enabled,
		IntervalSeconds: int32(st.IntervalSeconds),
		UpdatedAt:       &st.UpdatedAt,
	}, nil
}
