package httpapi

import (
	"archive/zip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/rooms"
)

// A recording's attachments, package and runs read with an archive ticket
// (rtcEndpoints, continued).

// attachmentBody answers an attachment, inline or as a file.
type attachmentBody struct {
	a        *rooms.Attachment
	download bool
}

func (b attachmentBody) write(w http.ResponseWriter) error {
	w.Header().Set("Content-Type", b.a.ContentType)
	w.Header().Set("Cache-Control", "private, no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	disp := "inline"
	if b.download {
		disp = "attachment"
	}
	w.Header().Set("Content-Disposition", disp+`; filename="`+b.a.Name+`"`)
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(b.a.Body)
	return err
}

func (b attachmentBody) VisitGetRtcRecordingAttachmentContentResponse(w http.ResponseWriter) error {
	return b.write(w)
}
func (b attachmentBody) VisitDownloadRtcRecordingAttachmentResponse(w http.ResponseWriter) error {
	return b.write(w)
}

func (e *rtcEndpoints) GetRtcRecordingAttachmentContent(ctx context.Context, req contract.GetRtcRecordingAttachmentContentRequestObject) (
	contract.GetRtcRecordingAttachmentContentResponseObject, error) {
	a, err := e.rooms.RecordingAttachment(requestContext(ctx), roomID(req.RoomId), archiveTicket(ctx, req.Params.RtcArchiveToken), req.RecordingId,
		req.AttachmentId, rooms.ActionView)
	if err != nil {
		return nil, err
	}
	return attachmentBody{a: a}, nil
}

func (e *rtcEndpoints) DownloadRtcRecordingAttachment(ctx context.Context, req contract.DownloadRtcRecordingAttachmentRequestObject) (
	contract.DownloadRtcRecordingAttachmentResponseObject, error) {
	a, err := e.rooms.RecordingAttachment(requestContext(ctx), roomID(req.RoomId), archiveTicket(ctx, req.Params.RtcArchiveToken), req.RecordingId,
		req.AttachmentId, rooms.ActionDownload)
	if err != nil {
		return nil, err
	}
	return attachmentBody{a: a, download: true}, nil
}

// packageZIP streams a recording's package: manifest.json, the
// attachments, then each media file read from its engine as it is
// written (stored: MP4 does not shrink), so nothing is staged on disk.
type packageZIP struct {
	ctx      context.Context
	name     string
	manifest []byte
	p        *rooms.Package
}

func (z packageZIP) VisitDownloadRtcRecordingPackageResponse(w http.ResponseWriter) error {
	w.Header().Set("Content-Type", "application/zip")
	w.Header().Set("Content-Disposition", `attachment; filename="`+z.name+`"`)
	w.WriteHeader(http.StatusOK)
	zw := zip.NewWriter(w)
	if err := writeZipEntry(zw, "manifest.json", z.manifest); err != nil {
		return err
	}
	for _, a := range z.p.Attachments {
		if err := writeZipEntry(zw, "attachments/"+a.Name, a.Body); err != nil {
			return err
		}
	}
	for _, f := range z.p.Files {
		if err := z.copy(zw, f); err != nil {
			// The status is sent: the ZIP ends without its directory,
			// which a client reports as a broken download.
			return err
		}
	}
	return zw.Close()
}

func (z packageZIP) copy(zw *zip.Writer, f rooms.PackageFile) error {
	req, err := http.NewRequestWithContext(z.ctx, http.MethodGet, f.URL, nil)
	if err != nil {
		return err
	}
	resp, err := mediaClient.Do(req)
	if err != nil {
		return fmt.Errorf("package file %s: the media server cannot be reached", f.Name)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("package file %s: the media server answered %d", f.Name, resp.StatusCode)
	}
	w, err := zw.CreateHeader(&zip.FileHeader{Name: f.Name, Method: zip.Store, Modified: time.Now()})
	if err != nil {
		return err
	}
	_, err = io.Copy(w, resp.Body)
	return err
}

func (e *rtcEndpoints) DownloadRtcRecordingPackage(ctx context.Context, req contract.DownloadRtcRecordingPackageRequestObject) (
	contract.DownloadRtcRecordingPackageResponseObject, error) {
	p, err := e.rooms.RecordingPackage(requestContext(ctx), roomID(req.RoomId), archiveTicket(ctx, req.Params.RtcArchiveToken), req.RecordingId)
	if err != nil {
		return nil, err
	}
	m, err := toManifest(p.Manifest)
	if err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	return packageZIP{ctx: requestContext(ctx), name: "recording-" + p.Manifest.Recording.RecordingID + ".zip", manifest: b, p: p}, nil
}

func (e *rtcEndpoints) ListRtcRecordingRunsWithTicket(ctx context.Context, req contract.ListRtcRecordingRunsWithTicketRequestObject) (
	contract.ListRtcRecordingRunsWithTicketResponseObject, error) {
	page, size := 1, 20
	if req.Params.Page != nil {
		page = int(*req.Params.Page)
	}
	if req.Params.PageSize != nil {
		size = int(*req.Params.PageSize)
	}
	list, total, err := e.rooms.RecordingRunsWithTicket(requestContext(ctx), roomID(req.RoomId), archiveTicket(ctx, req.Params.RtcArchiveToken), page, size)
	if err != nil {
		return nil, err
	}
	out := contract.RtcRecordingList{Total: total, Page: int32(page), PageSize: int32(size), Items: []contract.RtcRecording{}}
	for i := range list {
		out.Items = append(out.Items, toRecording(&list[i]))
	}
	return contract.ListRtcRecordingRunsWithTicket200JSONResponse(out), nil
}
