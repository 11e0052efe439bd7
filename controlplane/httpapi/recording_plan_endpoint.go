package httpapi

import (
	"context"
	"time"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/recording"
)

// The recording plan operations of module 06.

func recordPlanInput(b *contract.SaveRecordPlanRequest) recording.PlanInput {
	in := recording.PlanInput{Name: b.Name, Description: deref(b.Description, ""), TimeZone: b.TimeZone, Enabled: b.Enabled,
		SegmentSeconds: int(deref(b.SegmentSeconds, 0)), RetentionDays: int(deref(b.RetentionDays, 0))}
	if b.ChannelIds != nil {
		in.ChannelIDs = *b.ChannelIds
	}
	for _, s := range b.Weekly {
		in.Weekly = append(in.Weekly, recording.Slot{Day: string(s.Day), Start: s.Start, End: s.End})
	}
	return in
}

func toPlan(p *recording.Plan, err error) (contract.RecordPlan, error) {
	if err != nil {
		return contract.RecordPlan{}, err
	}
	return convert[contract.RecordPlan](p)
}

func (e *recordingEndpoints) ListRecordPlans(ctx context.Context, r contract.ListRecordPlansRequestObject) (contract.ListRecordPlansResponseObject, error) {
	plans, err := e.recording.Plans(requestContext(ctx), deref(r.Params.Name, ""))
	if err != nil {
		return nil, err
	}
	out := contract.ListRecordPlans200JSONResponse{Page: 1, PageSize: int32(len(plans)), Total: int64(len(plans)), Rows: []contract.RecordPlan{}}
	for i := range plans {
		c, err := toPlan(&plans[i], nil)
		if err != nil {
			return nil, err
		}
		out.Rows = append(out.Rows, c)
	}
	return out, nil
}

func (e *recordingEndpoints) CreateRecordPlan(ctx context.Context, r contract.CreateRecordPlanRequestObject) (contract.CreateRecordPlanResponseObject, error) {
	out, err := toPlan(e.recording.CreatePlan(requestContext(ctx), recordPlanInput(r.Body)))
	return contract.CreateRecordPlan200JSONResponse(out), err
}

func (e *recordingEndpoints) GetRecordPlan(ctx context.Context, r contract.GetRecordPlanRequestObject) (contract.GetRecordPlanResponseObject, error) {
	out, err := toPlan(e.recording.Plan(requestContext(ctx), r.PlanId))
	return contract.GetRecordPlan200JSONResponse(out), err
}

func (e *recordingEndpoints) UpdateRecordPlan(ctx context.Context, r contract.UpdateRecordPlanRequestObject) (contract.UpdateRecordPlanResponseObject, error) {
	out, err := toPlan(e.recording.UpdatePlan(requestContext(ctx), r.PlanId, recordPlanInput(r.Body)))
	return contract.UpdateRecordPlan200JSONResponse(out), err
}

func (e *recordingEndpoints) DeleteRecordPlan(ctx context.Context, r contract.DeleteRecordPlanRequestObject) (contract.DeleteRecordPlanResponseObject, error) {
	p, err := e.recording.Plan(requestContext(ctx), r.PlanId)
	if err == nil {
		err = e.recording.DeletePlan(requestContext(ctx), r.PlanId)
	}
	out, err := toPlan(p, err)
	return contract.DeleteRecordPlan200JSONResponse(out), err
}

func (e *recordingEndpoints) SetRecordPlanEnabled(ctx context.Context, r contract.SetRecordPlanEnabledRequestObject) (contract.SetRecordPlanEnabledResponseObject, error) {
	out, err := toPlan(e.recording.SetPlanEnabled(requestContext(ctx), r.PlanId, r.Params.Enabled))
	return contract.SetRecordPlanEnabled200JSONResponse(out), err
}

func (e *recordingEndpoints) EvaluateRecordPlan(ctx context.Context, r contract.EvaluateRecordPlanRequestObject) (contract.EvaluateRecordPlanResponseObject, error) {
	p, err := e.recording.Plan(requestContext(ctx), r.PlanId)
	if err != nil {
		return nil, err
	}
	at := time.Now()
	if r.Params.At != nil {
		at = *r.Params.At
	}
	out, err := convert[contract.RecordPlanEvaluation](p.Evaluate(at))
	return contract.EvaluateRecordPlan200JSONResponse(out), err
}

func (e *recordingEndpoints) GetRecordPlanTemplate(context.Context, contract.GetRecordPlanTemplateRequestObject) (contract.GetRecordPlanTemplateResponseObject, error) {
	t := recording.PlanTemplate()
	out, err := toPlan(&t, nil)
	return contract.GetRecordPlanTemplate200JSONResponse(out), err
}
