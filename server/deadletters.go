package server

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/starter"
)

// deadLetterView is one dead letter on an endpoint's page.
type deadLetterView struct {
	EventID, Type, SentAt string
	// TenantQuery is "?tenant=T" for another tenant than the default, for links.
	TenantQuery string
	// HoldsKey is the ordering key the dead letter holds (empty: none).
	HoldsKey string
}

// deadLetterRows lists endpoint id's dead letters of events its tenant sent, newest first.
func (s *Server) deadLetterRows(ctx context.Context, id, tenant string) ([]deadLetterView, error) {
	dls, err := s.opts.Starter.ListDeadLetters(ctx, herald.DeadLetterFilter{EndpointID: id, Tenant: herald.TenantOrDefault(tenant)})
	if err != nil {
		return nil, err
	}
	out := make([]deadLetterView, 0, len(dls))
	for i := len(dls) - 1; i >= 0; i-- {
		out = append(out, deadLetterView{EventID: dls[i].EventID, TenantQuery: deliveryQuery(dls[i].WorkflowID), Type: dls[i].Type, SentAt: s.clock(dls[i].SentAt), HoldsKey: dls[i].HoldsKey})
	}
	return out, nil
}

// sinceChoices are the "Replay all since …" choices of an endpoint's page.
var sinceChoices = map[string]time.Duration{"1h": time.Hour, "6h": 6 * time.Hour, "24h": 24 * time.Hour, "7d": 7 * 24 * time.Hour, "all": 0}

func (s *Server) bulkReplayForm(ctx context.Context, w http.ResponseWriter, r *http.Request, p principal) error {
	id, e, err := s.pathEndpoint(ctx, r, p)
	if err != nil {
		return err
	}
	d, ok := sinceChoices[r.PostFormValue("since")]
	if !ok {
		return fmt.Errorf("%w: choose how far back to replay: 1h, 6h, 24h, 7d or all", starter.ErrInvalid)
	}
	f := herald.DeadLetterFilter{EndpointID: id, Tenant: herald.TenantOrDefault(e.Tenant)}
	if d > 0 {
		f.Since = s.opts.Now().Add(-d)
	}
	wf, err := s.opts.Starter.BulkReplay(ctx, herald.BulkReplayInput{Filter: f})
	if err != nil {
		return err
	}
	http.Redirect(w, r, withQuery("/endpoints/"+url.PathEscape(id), url.Values{"done": {"bulk"}, "wf": {wf}}), http.StatusSeeOther)
	return nil
}
