package gate

import (
	"cmp"
	"context"
	"errors"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/heraldhq/herald"
)

// Endpoints are the calls a gate makes: to the endpoint workflows (a read of the admission
// view, a lease update, three signals) and to the stats shards. Temporal makes them in a
// worker; tests give a fake.
type Endpoints interface {
	// Admission reads endpoint id's configuration and limiter snapshot
	// (herald.ReadAdmission); an endpoint that is not registered is herald.ErrNoEndpoint.
	Admission(ctx context.Context, id string) (herald.AdmissionView, error)
	// Lease sends a lease request to endpoint id's workflow (herald.UpdateLease) and
	// returns its reply.
	Lease(ctx context.Context, id string, req herald.LeaseRequest) (herald.LeaseReply, error)
	// Wait queues r's waiters, deliveries' workflow ids, at endpoint id (herald.SignalWait).
	Wait(ctx context.Context, id string, r herald.WaitRequest) error
	// Dones returns deliveries' own permits to endpoint id (herald.SignalDones).
	Dones(ctx context.Context, id string, dones []herald.Done) error
	// Outcomes reports outcomes of attempts admitted without a lease (herald.SignalOutcomes).
	Outcomes(ctx context.Context, id string, r herald.OutcomeReport) error
	// Counts adds attempt counts to the stats shard shard (herald.SignalStats), starting it
	// if needed (with the capacity and budget Temporal was given).
	Counts(ctx context.Context, shard string, counts []herald.EndpointCounts) error
}

// Temporal returns the Endpoints that make the calls through c; queue is the endpoint
// workflows' task queue, where a stats shard starts, and stats the input a shard it starts
// takes (its Capacity and Budget; zero values: herald.StatsBudget alone).
//
// Its calls to an endpoint workflow name the run its last read of that endpoint found
// (runs): the history service then takes the run from its cache, where a call by workflow
// id alone first reads the id's current run from the database (one transaction more per
// call). A call to a run that has ended (the endpoint continued as new) is made again
// without it, and the run forgotten until the next read.
func Temporal(c client.Client, queue string, stats herald.StatsInput) Endpoints {
	return temporalEndpoints{c: c, queue: queue, stats: herald.StatsInput{Capacity: stats.Capacity, Budget: stats.Budget}, runs: &runs{}}
}

type temporalEndpoints struct {
	c     client.Client
	queue string
	stats herald.StatsInput
	runs  *runs
}

// MaxRuns is the most endpoints whose current run a worker's gate remembers; past it,
// it forgets them all and learns them again at their next reads (each forgotten one costs
// its calls the database read of the current run until then).
const MaxRuns = 100_000

// runs remembers each endpoint workflow's run, as its last read found it.
type runs struct {
	max int // 0: MaxRuns
	by  capped[string]
}

func (r *runs) get(id string) string {
	run, _ := r.by.get(id)
	return run
}

// set remembers run as id's; "" forgets id's.
func (r *runs) set(id, run string) {
	if run == "" {
		r.by.take(id)
		return
	}
	r.by.put(id, run, cmp.Or(r.max, MaxRuns), nil, nil)
}

// size is how many runs are remembered.
func (r *runs) size() int { return r.by.size() }

// noteRun remembers run as endpoint id's, as a read the process made found it.
func (t temporalEndpoints) noteRun(id, run string) { t.runs.set(id, run) }

// onRun makes call to endpoint id's remembered run, and again to its current run when
// that one has ended (NotFound: "workflow execution already completed").
func (t temporalEndpoints) onRun(id string, call func(run string) error) error {
	run := t.runs.get(id)
	err := call(run)
	var nf *serviceerror.NotFound
	if run != "" && errors.As(err, &nf) {
		t.runs.set(id, "")
		err = call("")
	}
	return err
}

func (t temporalEndpoints) Admission(ctx context.Context, id string) (herald.AdmissionView, error) {
	v, run, err := herald.ReadAdmissionRun(ctx, t.c, id, t.runs.get(id))
	t.runs.set(id, run)
	return v, err
}

func (t temporalEndpoints) Lease(ctx context.Context, id string, req herald.LeaseRequest) (herald.LeaseReply, error) {
	var reply herald.LeaseReply
	err := t.onRun(id, func(run string) error {
		h, err := t.c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
			WorkflowID:   herald.EndpointWorkflowID(id),
			RunID:        run,
			UpdateName:   herald.UpdateLease,
			Args:         []any{req},
			WaitForStage: client.WorkflowUpdateStageCompleted,
		})
		if err == nil {
			err = h.Get(ctx, &reply)
		}
		return err
	})
	if err != nil {
		return reply, herald.EndpointError(id, "lease", err)
	}
	return reply, nil
}

func (t temporalEndpoints) signal(ctx context.Context, id, name string, arg any) error {
	return t.onRun(id, func(run string) error {
		return t.c.SignalWorkflow(ctx, herald.EndpointWorkflowID(id), run, name, arg)
	})
}

func (t temporalEndpoints) Wait(ctx context.Context, id string, r herald.WaitRequest) error {
	return t.signal(ctx, id, herald.SignalWait, r)
}

func (t temporalEndpoints) Dones(ctx context.Context, id string, dones []herald.Done) error {
	return t.signal(ctx, id, herald.SignalDones, dones)
}

func (t temporalEndpoints) Outcomes(ctx context.Context, id string, r herald.OutcomeReport) error {
	if err := t.signal(ctx, id, herald.SignalOutcomes, r); err != nil {
		return herald.EndpointError(id, "report", err)
	}
	return nil
}

func (t temporalEndpoints) Counts(ctx context.Context, shard string, counts []herald.EndpointCounts) error {
	_, err := t.c.SignalWithStartWorkflow(ctx, shard, herald.SignalStats, counts, client.StartWorkflowOptions{
		ID: shard, TaskQueue: t.queue, StaticSummary: "attempt counts of the endpoints of " + shard,
	}, herald.StatsWorkflow, t.stats)
	return err
}
