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

// Full exports of meeting recordings (rtcEndpoints, continued).

func toExport(e *rooms.Export) contract.RtcFullExport {
	out := contract.RtcFullExport{ExportId: mustUUID(e.ExportID), RecordingId: mustUUID(e.RecordingID), StartMilliseconds: e.StartMs,
		EndMilliseconds: e.EndMs, State: contract.RtcExportState(e.State), Attempts: int32(e.Attempts), CreatedAtUtc: e.CreatedAt,
		Files: []contract.RtcFullExportFile{}}
	for _, p := range e.Parts {
		out.Files = append(out.Files, contract.RtcFullExportFile{FileId: mustUUID(p.CutID), ParticipantId: mustUUID(string(p.ParticipantID)),
			DeviceSessionId: mustUUID(p.PublicationID), State: p.State})
	}
	return out
}

func (e *rtcEndpoints) CreateRtcFullExport(ctx context.Context, req contract.CreateRtcFullExportRequestObject) (contract.CreateRtcFullExportResponseObject,
	error) {
	x, err := e.rooms.CreateExport(requestContext(ctx), roomCaller(ctx), roomID(req.RoomId), req.RecordingId, req.Body.StartMilliseconds,
		req.Body.EndMilliseconds)
	if err != nil {
		return nil, err
	}
	return contract.CreateRtcFullExport200JSONResponse(toExport(x)), nil
}

func (e *rtcEndpoints) RetryRtcFullExport(ctx context.Context, req contract.RetryRtcFullExportRequestObject) (contract.RetryRtcFullExportResponseObject, error) {
	x, err := e.rooms.RetryExport(requestContext(ctx), roomCaller(ctx), roomID(req.RoomId), req.RecordingId, req.ExportId.String())
	if err != nil {
		return nil, err
	}
	return contract.RetryRtcFullExport200JSONResponse(toExport(x)), nil
}

func (e *rtcEndpoints) ListRtcFullExports(ctx context.Context, req contract.ListRtcFullExportsRequestObject) (contract.ListRtcFullExportsResponseObject, error) {
	all, err := e.rooms.Exports(requestContext(ctx), roomID(req.RoomId), archiveTicket(ctx, req.Params.RtcArchiveToken), req.RecordingId)
	if err != nil {
		return nil, err
	}
	out := contract.RtcFullExportList{Items: []contract.RtcFullExport{}}
	for i := range all {
		out.Items = append(out.Items, toExport(&all[i]))
	}
	return contract.ListRtcFullExports200JSONResponse(out), nil
}

// exportFile relays one export file from its engine.
type exportFile struct{ engineFile }

func (f exportFile) VisitGetRtcFullExportMediaResponse(w http.ResponseWriter) error {
	return f.relay(w)
}

func (e *rtcEndpoints) GetRtcFullExportMedia(ctx context.Context, req contract.GetRtcFullExportMediaRequestObject) (contract.GetRtcFullExportMediaResponseObject,
	error) {
	_, files, err := e.rooms.ExportFiles(requestContext(ctx), roomID(req.RoomId), archiveTicket(ctx, req.Params.RtcArchiveToken), req.RecordingId,
		req.ExportId.String(), rooms.ActionPlay)
	if err != nil {
		return nil, err
	}
	pick := files[0]
	if req.Params.FileId != nil {
		found := false
		for _, f := range files {
			if f.Part.CutID == req.Params.FileId.String() {
				pick, found = f, true
			}
		}
		if !found {
			return nil, newError(http.StatusNotFound, "not_found", "the export has no such file")
		}
	}
	f, err := readEngine(ctx, pick.URL, "export_not_available", "the export's file cannot be played")
	if err != nil {
		return nil, err
	}
	return exportFile{f}, nil
}

// exportZIP streams an export as a ZIP: its manifest, then each file
// read from its engine as it is written (stored, not compressed: MP4
// does not shrink), so nothing is staged on disk.
type exportZIP struct {
	ctx      context.Context
	manifest []byte
	name     string
	files    []rooms.ExportFile
}

func (z exportZIP) VisitDownloadRtcFullExportResponse(w http.ResponseWriter) error {
	w.Header().Set("Content-Type", "application/zip")
	w.Header().Set("Content-Disposition", `attachment; filename="`+z.name+`"`)
	w.WriteHeader(http.StatusOK)
	zw := zip.NewWriter(w)
	if err := writeZipEntry(zw, "manifest.json", z.manifest); err != nil {
		return err
	}
	for _, f := range z.files {
		if err := z.copyFile(zw, f); err != nil {
			// The status is sent: the ZIP ends without its directory,
			// which a client reports as a broken download.
			return err
		}
	}
	return zw.Close()
}

func writeZipEntry(zw *zip.Writer, name string, b []byte) error {
	w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Store, Modified: time.Now()})
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

func (z exportZIP) copyFile(zw *zip.Writer, f rooms.ExportFile) error {
	req, err := http.NewRequestWithContext(z.ctx, http.MethodGet, f.URL, nil)
	if err != nil {
		return err
	}
	resp, err := mediaClient.Do(req)
	if err != nil {
		return fmt.Errorf("export file %s: the media server cannot be reached", f.Part.CutID)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("export file %s: the media server answered %d", f.Part.CutID, resp.StatusCode)
	}
	w, err := zw.CreateHeader(&zip.FileHeader{Name: f.Part.PublicationID + ".mp4", Method: zip.Store, Modified: time.Now()})
	if err != nil {
		return err
	}
	_, err = io.Copy(w, resp.Body)
	return err
}

// exportManifest is the ZIP's manifest.json.
type exportManifest struct {
	ExportID          string    `json:"exportId"`
	RecordingID       string    `json:"recordingId"`
	RoomID            string    `json:"roomId"`
	StartMilliseconds int64     `json:"startMilliseconds"`
	EndMilliseconds   int64     `json:"endMilliseconds"`
	CreatedAtUtc      time.Time `json:"createdAtUtc"`
	Files             []struct {
		Name            string `json:"name"`
		FileID          string `json:"fileId"`
		ParticipantID   string `json:"participantId"`
		DeviceSessionID string `json:"deviceSessionId"`
	} `json:"files"`
}

func (e *rtcEndpoints) DownloadRtcFullExport(ctx context.Context, req contract.DownloadRtcFullExportRequestObject) (contract.DownloadRtcFullExportResponseObject,
	error) {
	x, files, err := e.rooms.ExportFiles(requestContext(ctx), roomID(req.RoomId), archiveTicket(ctx, req.Params.RtcArchiveToken), req.RecordingId,
		req.ExportId.String(), rooms.ActionDownload)
	if err != nil {
		return nil, err
	}
	m := exportManifest{ExportID: x.ExportID, RecordingID: x.RecordingID, RoomID: string(x.RoomID), StartMilliseconds: x.StartMs,
		EndMilliseconds: x.EndMs, CreatedAtUtc: x.CreatedAt}
	for _, f := range files {
		m.Files = append(m.Files, struct {
			Name            string `json:"name"`
			FileID          string `json:"fileId"`
			ParticipantID   string `json:"participantId"`
			DeviceSessionID string `json:"deviceSessionId"`
		}{f.Part.PublicationID + ".mp4", f.Part.CutID, string(f.Part.ParticipantID), f.Part.PublicationID})
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	return exportZIP{ctx: requestContext(ctx), manifest: b, name: "export-" + x.ExportID + ".zip", files: files}, nil
}
