package httpapi

import (
	"context"
	"net/http"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/transcoder"
)

// transcoderEndpoints serves the transcoder templates.
type transcoderEndpoints struct {
	templates *transcoder.Service
}

func toTemplate(t *transcoder.Template) contract.TranscoderTemplate {
	return contract.TranscoderTemplate{TemplateName: t.TemplateName, MediaServerId: t.MediaServerID, Description: t.Description,
		VideoCodec: contract.TranscoderTemplateVideoCodec(t.VideoCodec), AudioCodec: contract.TranscoderTemplateAudioCodec(t.AudioCodec),
		Width: int32(t.Width), Height: int32(t.Height), FrameRate: int32(t.FrameRate), VideoBitrateKbps: int32(t.VideoBitrateKbps),
		AudioBitrateKbps: int32(t.AudioBitrateKbps), ExtraArgs: t.ExtraArgs, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt, UpdatedBy: t.UpdatedBy}
}

func fromTemplateRequest(b *contract.SaveFfmpegTemplateRequest) transcoder.Template {
	return transcoder.Template{TemplateName: b.TemplateName, MediaServerID: deref(b.MediaServerId, ""), Description: deref(b.Description, ""),
		VideoCodec: string(b.VideoCodec), AudioCodec: string(b.AudioCodec), Width: int(deref(b.Width, 0)), Height: int(deref(b.Height, 0)),
		FrameRate: int(deref(b.FrameRate, 0)), VideoBitrateKbps: int(deref(b.VideoBitrateKbps, 0)), AudioBitrateKbps: int(deref(b.AudioBitrateKbps, 0)),
		ExtraArgs: deref(b.ExtraArgs, nil)}
}

func (e *transcoderEndpoints) ListTranscoderTemplates(
	ctx context.Context,
	r contract.ListTranscoderTemplatesRequestObject,
) (contract.ListTranscoderTemplatesResponseObject, error) {
	ctx = requestContext(ctx)
	list, err := e.templates.List(ctx, deref(r.Params.MediaServerId, ""))
	if err != nil {
		return nil, err
	}
	out := contract.ListTranscoderTemplates200JSONResponse{Rows: []contract.TranscoderTemplate{}}
	for i := range list {
		out.Rows = append(out.Rows, toTemplate(&list[i]))
	}
	return out, nil
}

func (e *transcoderEndpoints) CreateTranscoderTemplate(
	ctx context.Context,
	r contract.CreateTranscoderTemplateRequestObject,
) (contract.CreateTranscoderTemplateResponseObject, error) {
	ctx = requestContext(ctx)
	t, err := e.templates.Save(ctx, auditActor(ctx), fromTemplateRequest(r.Body), true)
	if err != nil {
		return nil, err
	}
	return contract.CreateTranscoderTemplate200JSONResponse(toTemplate(t)), nil
}

func (e *transcoderEndpoints) UpdateTranscoderTemplate(
	ctx context.Context,
	r contract.UpdateTranscoderTemplateRequestObject,
) (contract.UpdateTranscoderTemplateResponseObject, error) {
	ctx = requestContext(ctx)
	if r.Body.TemplateName != r.TemplateName {
		return nil, &Error{Status: http.StatusBadRequest, Code: "invalid_body", Message: "templateName in the body must match the path", Retryable: retryable(false)}
	}
	t, err := e.templates.Save(ctx, auditActor(ctx), fromTemplateRequest(r.Body), false)
	if err != nil {
		return nil, err
	}
	return contract.UpdateTranscoderTemplate200JSONResponse(toTemplate(t)), nil
}

func (e *transcoderEndpoints) DeleteTranscoderTemplate(
	ctx context.Context,
	r contract.DeleteTranscoderTemplateRequestObject,
) (contract.DeleteTranscoderTemplateResponseObject, error) {
	ctx = requestContext(ctx)
	t, err := e.templates.Delete(ctx, auditActor(ctx), deref(r.Params.MediaServerId, ""), r.TemplateName)
	if err != nil {
		return nil, err
	}
	return contract.DeleteTranscoderTemplate200JSONResponse(toTemplate(t)), nil
}
