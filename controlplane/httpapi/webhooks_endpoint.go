package httpapi

import (
	"context"
	"net/http"

	"github.com/svcplatform/svc/api/contract"
	"github.com/svcplatform/svc/controlplane/events"
	"github.com/svcplatform/svc/controlplane/webhooks"
)

// webhookEndpoints serves delivery plans, deliveries and their status.
type webhookEndpoints struct {
	plans *webhooks.Service
	// dispatcher reports whether the dispatcher runs here and its load.
	dispatcher func() (running bool, inFlight int64)
}

func toSubscription(p *webhooks.Plan) contract.OutboundWebhookSubscription {
	state := contract.OutboundWebhookSubscriptionStateActive
	if p.Archived {
		state = contract.OutboundWebhookSubscriptionStateArchived
	}
	return contract.OutboundWebhookSubscription{Id: string(p.ID), Name: p.Name, Description: p.Description, Endpoint: p.Endpoint,
		Enabled: p.Enabled, Events: append([]string{}, p.Events...), AllowHttp: p.AllowHTTP, TimeoutSeconds: int32(p.TimeoutSeconds),
		MaxAttempts: int32(p.MaxAttempts), State: state, HasSecret: p.SealedSecret != "", SecretUpdatedAt: p.SecretUpdatedAt,
		CreatedAt: p.CreatedAt, CreatedBy: p.CreatedBy, UpdatedAt: p.UpdatedAt, UpdatedBy: p.UpdatedBy, ArchivedAt: p.ArchivedAt}
}

func toDelivery(d *webhooks.Delivery) contract.OutboundWebhookDelivery {
	var status *int32
	if d.LastHTTPStatus != nil {
		s := int32(*d.LastHTTPStatus)
		status = &s
	}
	return contract.OutboundWebhookDelivery{Id: string(d.ID), SubscriptionId: string(d.SubscriptionID), EventId: d.EventID,
		EventName: d.EventName, Attempts: int32(d.Attempts), LastHttpStatus: status, State: contract.WebhookDeliveryState(d.State),
		CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt, ErrorSummary: d.ErrorSummary, NextAttemptAt: d.NextAttemptAt, LastAttemptAt: d.LastAttemptAt}
}

func planInput(b *contract.OutboundWebhookSubscriptionRequest) webhooks.PlanInput {
	return webhooks.PlanInput{Name: b.Name, Description: deref(b.Description, ""), Endpoint: b.Endpoint, Secret: deref(b.Secret, ""),
		Enabled: b.Enabled, Events: b.Events, AllowHTTP: deref(b.AllowHttp, false), TimeoutSeconds: int(b.TimeoutSeconds), MaxAttempts: int(b.MaxAttempts)}
}

func (e *webhookEndpoints) GetWebhookStatus(ctx context.Context, _ contract.GetWebhookStatusRequestObject) (contract.GetWebhookStatusResponseObject, error) {
	st, err := e.plans.Status(requestContext(ctx))
	if err != nil {
		return nil, err
	}
	out := contract.GetWebhookStatus200JSONResponse{ActivePlans: int32(st.ActivePlans), EnabledPlans: int32(st.EnabledPlans),
		ArchivedPlans: int32(st.ArchivedPlans), OldestOpenAt: st.OldestOpenAt, NextRetryAt: st.NextRetryAt,
		FanoutRevision: st.FanoutRevision, StoreRevision: st.StoreRevision}
	d := st.Deliveries
	out.Deliveries.Pending, out.Deliveries.Delivering, out.Deliveries.Completed = d[webhooks.StatePending], d[webhooks.StateDelivering], d[webhooks.StateCompleted]
	out.Deliveries.WaitingRetry, out.Deliveries.Failed, out.Deliveries.Canceled = d[webhooks.StateWaitingRetry], d[webhooks.StateFailed], d[webhooks.StateCanceled]
	if e.dispatcher != nil {
		running, inFlight := e.dispatcher()
		out.DispatcherOnThisNode, out.InFlight = running, int32(inFlight)
	}
	return out, nil
}

func (e *webhookEndpoints) GetWebhookEventCatalog(context.Context, contract.GetWebhookEventCatalogRequestObject) (contract.GetWebhookEventCatalogResponseObject, error) {
	out := contract.GetWebhookEventCatalog200JSONResponse{Groups: []contract.OutboundWebhookEventGroup{}}
	for _, g := range events.Catalog() {
		grp := contract.OutboundWebhookEventGroup{Name: g.Name, Description: g.Description, Wildcard: g.Wildcard, Events: []contract.OutboundWebhookCatalogEvent{}}
		for _, ev := range g.Events {
			grp.Events = append(grp.Events, contract.OutboundWebhookCatalogEvent{Name: ev.Name, Trigger: ev.Trigger, Source: string(ev.Source)})
		}
		out.Groups = append(out.Groups, grp)
	}
	return out, nil
}

func (e *webhookEndpoints) ListWebhookSubscriptions(
	ctx context.Context,
	r contract.ListWebhookSubscriptionsRequestObject,
) (contract.ListWebhookSubscriptionsResponseObject, error) {
	plans, err := e.plans.ListPlans(requestContext(ctx), deref(r.Params.IncludeArchived, false))
	if err != nil {
		return nil, err
	}
	out := contract.ListWebhookSubscriptions200JSONResponse{Rows: []contract.OutboundWebhookSubscription{}}
	for i := range plans {
		out.Rows = append(out.Rows, toSubscription(&plans[i]))
	}
	return out, nil
}

func (e *webhookEndpoints) CreateWebhookSubscription(
	ctx context.Context,
	r contract.CreateWebhookSubscriptionRequestObject,
) (contract.CreateWebhookSubscriptionResponseObject, error) {
	p, err := e.plans.Create(requestContext(ctx), actor(ctx).Actor, planInput(r.Body))
	if err != nil {
		return nil, err
	}
	return contract.CreateWebhookSubscription200JSONResponse(toSubscription(p)), nil
}

func (e *webhookEndpoints) UpdateWebhookSubscription(
	ctx context.Context,
	r contract.UpdateWebhookSubscriptionRequestObject,
) (contract.UpdateWebhookSubscriptionResponseObject, error) {
	p, err := e.plans.Update(requestContext(ctx), actor(ctx).Actor, webhooks.PlanID(r.Id), planInput(r.Body))
	if err != nil {
		return nil, err
	}
	return contract.UpdateWebhookSubscription200JSONResponse(toSubscription(p)), nil
}

func (e *webhookEndpoints) ArchiveWebhookSubscription(
	ctx context.Context,
	r contract.ArchiveWebhookSubscriptionRequestObject,
) (contract.ArchiveWebhookSubscriptionResponseObject, error) {
	p, err := e.plans.Archive(requestContext(ctx), actor(ctx).Actor, webhooks.PlanID(r.Id))
	if err != nil {
		return nil, err
	}
	return contract.ArchiveWebhookSubscription200JSONResponse(toSubscription(p)), nil
}

// test runs both test operations.
func (e *webhookEndpoints) test(ctx context.Context, id string, b *contract.OutboundWebhookTestRequest) (contract.OutboundWebhookTestResult, error) {
	entry, d, err := e.plans.Test(requestContext(ctx), actor(ctx).Actor, webhooks.PlanID(id), deref(b.Message, ""))
	if err != nil {
		return contract.OutboundWebhookTestResult{}, err
	}
	return contract.OutboundWebhookTestResult{EventId: entry.EventID, DeliveryId: string(d.ID), SubscriptionId: id, EventName: entry.EventName}, nil
}

func (e *webhookEndpoints) TestWebhookSubscription(ctx context.Context, r contract.TestWebhookSubscriptionRequestObject) (contract.TestWebhookSubscriptionResponseObject, error) {
	if r.Body.SubscriptionId != nil && *r.Body.SubscriptionId != string(r.Id) {
		return nil, &Error{Status: http.StatusBadRequest, Code: "invalid_body", Message: "subscriptionId differs from the plan in the path", Retryable: retryable(false)}
	}
	res, err := e.test(ctx, string(r.Id), r.Body)
	if err != nil {
		return nil, err
	}
	return contract.TestWebhookSubscription200JSONResponse(res), nil
}

func (e *webhookEndpoints) TestWebhook(ctx context.Context, r contract.TestWebhookRequestObject) (contract.TestWebhookResponseObject, error) {
	if r.Body.SubscriptionId == nil || *r.Body.SubscriptionId == "" {
		return nil, &Error{
			Status:    http.StatusBadRequest,
			Code:      "invalid_body",
			Message:   "subscriptionId is required: a test event goes to one plan only",
			Retryable: retryable(false),
		}
	}
	res, err := e.test(ctx, *r.Body.SubscriptionId, r.Body)
	if err != nil {
		return nil, err
	}
	return contract.TestWebhook200JSONResponse(res), nil
}

func (e *webhookEndpoints) ListWebhookDeliveries(ctx context.Context, r contract.ListWebhookDeliveriesRequestObject) (contract.ListWebhookDeliveriesResponseObject, error) {
	page, size := int(deref(r.Params.Page, 1)), int(deref(r.Params.PageSize, 50))
	q := webhooks.DeliveryQuery{Plan: webhooks.PlanID(r.Id), Page: page, PageSize: size}
	if r.Params.State != nil {
		q.State = webhooks.State(*r.Params.State)
	}
	list, total, err := e.plans.ListDeliveries(requestContext(ctx), q)
	if err != nil {
		return nil, err
	}
	out := contract.ListWebhookDeliveries200JSONResponse{Page: int32(page), PageSize: int32(size), Total: total, Rows: []contract.OutboundWebhookDelivery{}}
	for i := range list {
		out.Rows = append(out.Rows, toDelivery(&list[i]))
	}
	return out, nil
}

func (e *webhookEndpoints) RetryWebhookDelivery(ctx context.Context, r contract.RetryWebhookDeliveryRequestObject) (contract.RetryWebhookDeliveryResponseObject, error) {
	d, err := e.plans.Retry(requestContext(ctx), actor(ctx).Actor, webhooks.DeliveryID(r.Id))
	if err != nil {
		return nil, err
	}
	return contract.RetryWebhookDelivery200JSONResponse(toDelivery(d)), nil
}

func (e *webhookEndpoints) RetryWebhookOutboxEvent(ctx context.Context, r contract.RetryWebhookOutboxEventRequestObject) (contract.RetryWebhookOutboxEventResponseObject, error) {
	list, err := e.plans.RetryEvent(requestContext(ctx), actor(ctx).Actor, r.Id)
	if err != nil {
		return nil, err
	}
	out := contract.RetryWebhookOutboxEvent200JSONResponse{EventId: r.Id, Deliveries: []contract.OutboundWebhookDelivery{}}
	for i := range list {
		out.Deliveries = append(out.Deliveries, toDelivery(&list[i]))
	}
	return out, nil
}
