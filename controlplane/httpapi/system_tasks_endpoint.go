package httpapi

import (
	"context"

	"github.com/svcplatform/svc/api/contract"
)

// The built-in tasks of this node (controlplane/tasks): the two listings
// and an operator's run.

func (e *systemEndpoints) ListBackgroundTasks(_ context.Context, _ contract.ListBackgroundTasksRequestObject) (contract.ListBackgroundTasksResponseObject, error) {
	out := contract.BackgroundTaskList{NodeId: e.svc.NodeID(), Rows: []contract.BackgroundTask{}}
	for _, st := range e.tasks.List() {
		out.Rows = append(out.Rows, contract.BackgroundTask{
			Name: st.Name, Description: st.Description, LeaderOnly: st.LeaderOnly, Running: st.Running,
			IntervalSeconds: int32(st.Interval.Seconds()), LastRunAt: st.LastRunAt,
			LastDurationMs: st.LastDuration.Milliseconds(), LastError: st.LastError, RunCount: st.Runs,
		})
	}
	return contract.ListBackgroundTasks200JSONResponse(out), nil
}

func (e *systemEndpoints) ListSystemTasks(_ context.Context, _ contract.ListSystemTasksRequestObject) (contract.ListSystemTasksResponseObject, error) {
	out := contract.SystemTaskList{Rows: []contract.SystemTask{}}
	for _, st := range e.tasks.List() {
		out.Rows = append(out.Rows, contract.SystemTask{
			TaskName: st.Name, Description: st.Description, Runnable: st.Runnable,
			SupportsPreview: st.Preview, LeaderOnly: st.LeaderOnly, Running: st.Running,
			LastRunAt: st.LastRunAt, LastResult: st.LastResult, LastError: st.LastError,
		})
	}
	return contract.ListSystemTasks200JSONResponse(out), nil
}

func (e *systemEndpoints) RunSystemTask(ctx context.Context, r contract.RunSystemTaskRequestObject) (contract.RunSystemTaskResponseObject, error) {
	ctx = requestContext(ctx)
	res, err := e.tasks.RunNow(ctx, r.TaskName, deref(r.Body.Preview, false))
	if err != nil {
		return nil, err
	}
	return contract.RunSystemTask200JSONResponse(contract.SystemTaskRunResult{TaskName: res.TaskName, Preview: res.Preview, StartedAt: res.StartedAt,
		FinishedAt: res.FinishedAt, Succeeded: res.Succeeded, Summary: res.Summary, Details: res.Details}), nil
}
