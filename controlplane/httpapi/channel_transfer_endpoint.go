package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/channels"
)

// Asset transfer (export and import) and the answers of parts that are
// not installed yet (PTZ device integrations, recording search).

// convertJSON copies between the contract's transfer document and the
// domain's, which share their JSON form (the contract is generated with
// optional fields as pointers).
func convertJSON[T any](from any) (*T, error) {
	raw, err := json.Marshal(from)
	if err != nil {
		return nil, err
	}
	var to T
	if err := json.Unmarshal(raw, &to); err != nil {
		return nil, fmt.Errorf("%w: %w", channels.ErrInvalid, err)
	}
	return &to, nil
}

func (e *channelEndpoints) ExportChannelAssets(ctx context.Context, _ contract.ExportChannelAssetsRequestObject) (contract.ExportChannelAssetsResponseObject, error) {
	doc, err := e.channels.Export(requestContext(ctx))
	if err != nil {
		return nil, err
	}
	out, err := convertJSON[contract.ChannelTransferDocument](doc)
	if err != nil {
		return nil, err
	}
	return contract.ExportChannelAssets200JSONResponse(*out), nil
}

func (e *channelEndpoints) ImportChannelAssets(ctx context.Context, r contract.ImportChannelAssetsRequestObject) (contract.ImportChannelAssetsResponseObject, error) {
	doc, err := convertJSON[channels.TransferDocument](r.Body.Document)
	if err != nil {
		return nil, err
	}
	res, err := e.channels.Import(requestContext(ctx), actor(ctx).Actor, doc, channels.ImportOptions{
		Preview: deref(r.Body.Preview, true), Activation: channels.Activation(opt(r.Body.ActivationState)),
	})
	if err != nil {
		if res != nil && res.Failed > 0 {
			return nil, importRejected(err, res)
		}
		return nil, err
	}
	out, err := convertJSON[contract.ChannelImportResult](res)
	if err != nil {
		return nil, err
	}
	return contract.ImportChannelAssets200JSONResponse(*out), nil
}

// importRejected says how many items are invalid and names the first, so
// a caller sees why without another call; a preview lists them all.
func importRejected(err error, res *channels.ImportResult) error {
	if !errors.Is(err, channels.ErrImportRejected) || res == nil {
		return err
	}
	e := toError(err)
	e.Details = map[string]string{"failed": fmt.Sprint(res.Failed)}
	for _, it := range res.Items {
		if it.Action == channels.ImportError {
			e.Details["firstError"] = it.Kind + " " + it.Key + ": " + it.Reason
			break
		}
	}
	e.Message = fmt.Sprintf("%d item(s) of the document are invalid and nothing was applied; run a preview to see every item", res.Failed)
	return e
}

func (e *channelEndpoints) GetChannelRecordingSearchCapability(
	context.Context,
	contract.GetChannelRecordingSearchCapabilityRequestObject,
) (contract.GetChannelRecordingSearchCapabilityResponseObject, error) {
	return contract.GetChannelRecordingSearchCapability200JSONResponse{Available: false, Editable: false,
		Reason: "recording semantic search is not installed on this platform yet, so channels have no search options to edit"}, nil
}
