package server

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strings"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/starter"
)

// maxBulkBody bounds the body of POST /v1/endpoints: starter.MaxPutEndpoints lines of
// 1.6 KiB on average (a line is at most herald.MaxEndpointLineBytes).
const maxBulkBody = 16 << 20

// bulkMediaTypes are the media types a bulk put's body may be sent as (JSON Lines).
var bulkMediaTypes = []string{"application/x-ndjson", "application/jsonl", "application/x-jsonlines", "application/json-lines"}

// bulkLineResult is one line's result in the answer to POST /v1/endpoints.
type bulkLineResult struct {
	Line int `json:"line"`
	// ID is the endpoint the line names (empty when it names none that can be read).
	ID string `json:"id,omitempty"`
	// Outcome is created, updated, unchanged or failed.
	Outcome starter.BulkOutcome `json:"outcome"`
	Tenant  string              `json:"tenant,omitempty"`
	Version int                 `json:"version,omitempty"`
	// Secret is the generated signing secret of an endpoint this line registered without
	// one: shown once.
	Secret string `json:"secret,omitempty"`
	Error  string `json:"error,omitempty"`
}

// bulkPutResponse answers POST /v1/endpoints.
type bulkPutResponse struct {
	Created   int              `json:"created"`
	Updated   int              `json:"updated"`
	Unchanged int              `json:"unchanged"`
	Failed    int              `json:"failed"`
	Results   []bulkLineResult `json:"results"`
}

// apiPutEndpoints registers or changes many endpoints (operator tokens only, as a single
// put): a JSON Lines body, one herald.EndpointLine per line. Each line gets its own result;
// a line that cannot be read or is refused fails alone. The call's time is
// Options.BulkTimeout: lines not sent by then fail with that reason (send them again:
// lines already done are reported unchanged).
func (s *Server) apiPutEndpoints(ctx context.Context, w http.ResponseWriter, r *http.Request, p principal) (int, any, error) {
	if !p.operator() {
		return 0, nil, fmt.Errorf("%w: registering or changing endpoints needs an operator token; ask your Herald operator", errForbidden)
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, params, err := mime.ParseMediaType(ct)
		if err != nil || !slices.Contains(bulkMediaTypes, mt) {
			return 0, nil, fmt.Errorf("%w: Content-Type is %q: send JSON Lines, one endpoint put per line, as application/x-ndjson", errMediaType, ct)
		}
		if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
			return 0, nil, fmt.Errorf("%w: Content-Type charset is %q: send utf-8", errMediaType, cs)
		}
	}
	lines, err := herald.ParseEndpointLines(http.MaxBytesReader(w, r.Body, maxBulkBody), starter.MaxPutEndpoints)
	if err != nil {
		if errors.Is(err, herald.ErrTooManyLines) {
			return 0, nil, fmt.Errorf("%w: %v (at most %d per request)", starter.ErrInvalid, err, starter.MaxPutEndpoints)
		}
		return 0, nil, err
	}
	if len(lines) == 0 {
		return 0, nil, fmt.Errorf("%w: the request body holds no line: send one endpoint put per line, e.g. {\"id\":\"acme\",\"url\":\"https://...\"}", starter.ErrInvalid)
	}
	out := bulkPutResponse{Results: make([]bulkLineResult, len(lines))}
	var reqs []herald.PutEndpointRequest
	var at []int // reqs[k] is lines[at[k]]
	for i, l := range lines {
		out.Results[i] = bulkLineResult{Line: l.Line, ID: l.Request.ID}
		if l.Err != nil {
			out.Results[i].Outcome, out.Results[i].Error = starter.BulkFailed, l.Err.Error()
			continue
		}
		reqs = append(reqs, l.Request)
		at = append(at, i)
	}
	results, err := s.opts.Starter.PutEndpoints(ctx, reqs, nil)
	if err != nil {
		return 0, nil, err
	}
	for k, res := range results {
		o := &out.Results[at[k]]
		o.Outcome = res.Outcome
		if res.Err != nil {
			o.Error = cleanMessage(res.Err.Error())
			continue
		}
		o.Tenant, o.Version = herald.TenantOrDefault(res.Result.Endpoint.Tenant), res.Result.Endpoint.Version
		if res.Result.SecretGenerated {
			o.Secret = string(res.Result.Endpoint.Secret)
		}
	}
	for _, o := range out.Results {
		switch o.Outcome {
		case starter.BulkCreated:
			out.Created++
		case starter.BulkUpdated:
			out.Updated++
		case starter.BulkUnchanged:
			out.Unchanged++
		default:
			out.Failed++
		}
	}
	return http.StatusOK, out, nil
}
