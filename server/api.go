package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/duration"
	"github.com/heraldhq/herald/policy"
	"github.com/heraldhq/herald/starter"
)

// Request body limits.
const (
	// maxEventBody bounds the body of POST /v1/events. The data limit applies to the data
	// compacted (starter.ValidateEvent); this leaves room for whitespace around it.
	maxEventBody = 4*herald.MaxDataBytes + 16<<10
	// maxBody bounds every other request body.
	maxBody = 64 << 10
)

// apiHandler is an API handler: it returns the status and value to answer with, or an
// error. Its ctx is the request's, bounded by Options.RequestTimeout for calls to Temporal.
type apiHandler func(ctx context.Context, w http.ResponseWriter, r *http.Request, p principal) (int, any, error)

// api authenticates the bearer token and writes the handler's answer or error as JSON.
func (s *Server) api(h apiHandler) http.HandlerFunc {
	return s.apiWithin(func() time.Duration { return s.opts.RequestTimeout }, h)
}

// apiWithin is api for a handler whose calls to Temporal may take timeout() instead of
// Options.RequestTimeout (a bulk put).
func (s *Server) apiWithin(timeout func() time.Duration, h apiHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		p, code, msg := s.bearer(r)
		if code != 0 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="herald"`)
			writeError(w, code, msg)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), timeout())
		defer cancel()
		status, v, err := h(ctx, w, r, p)
		if err != nil {
			s.writeErr(w, r, err)
			return
		}
		writeJSON(w, status, v)
	}
}

// writeErr answers with err's status and a message that says what to fix.
func (s *Server) writeErr(w http.ResponseWriter, r *http.Request, err error) {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		what := "event data may be at most 256 KiB compacted; send a reference to large content instead"
		switch {
		case strings.HasPrefix(r.URL.Path, "/v1/event-types"):
			what = "an event type's schema may be at most 64 KiB compacted"
		case r.URL.Path == "/v1/endpoints":
			what = fmt.Sprintf("a bulk put may be at most %d MiB: split the lines into several requests", maxBulkBody>>20)
		}
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body is larger than %d bytes: %s", tooLarge.Limit, what))
		return
	}
	code := errStatus(err)
	msg := err.Error()
	switch code {
	case http.StatusServiceUnavailable:
		msg = unavailableMessage
	case http.StatusInternalServerError:
		s.opts.Logger.Error("request failed", "method", r.Method, "path", r.URL.Path, "error", err)
	}
	out := apiError{Error: cleanMessage(msg)}
	var schemaErr *policy.SchemaError
	if code == http.StatusBadRequest && errors.As(err, &schemaErr) {
		out.Violations = schemaErr.Violations
	}
	writeJSON(w, code, out)
}

// cleanMessage drops the sentinel prefixes ("invalid input: ", "not found: ") that wrap starter errors.
func cleanMessage(m string) string {
	for _, p := range []string{starter.ErrInvalid.Error() + ": ", starter.ErrTooLarge.Error() + ": ", starter.ErrNotFound.Error() + ": ", starter.ErrConflict.Error() + ": ", errForbidden.Error() + ": ", errMediaType.Error() + ": "} {
		m = strings.TrimPrefix(m, p)
	}
	return m
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // served as application/json with nosniff, never as HTML
	_ = enc.Encode(v)
}

// apiError is the body of every error answer.
type apiError struct {
	Error string `json:"error"`
	// Violations lists how event data fails its type's JSON Schema, when that is the error.
	Violations []policy.Violation `json:"violations,omitempty"`
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, apiError{Error: msg})
}

// decode reads a JSON body of at most limit bytes into v, refusing unknown fields and
// trailing data.
func decode(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		// The media type is case-insensitive and may carry parameters; JSON is UTF-8.
		mt, params, err := mime.ParseMediaType(ct)
		if err != nil || mt != "application/json" {
			return fmt.Errorf("%w: Content-Type is %q: send application/json", errMediaType, ct)
		}
		if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
			return fmt.Errorf("%w: Content-Type charset is %q: send application/json in utf-8 (charset=utf-8, or no charset)", errMediaType, cs)
		}
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("%w: the request body is empty: send a JSON object", starter.ErrInvalid)
		}
		return fmt.Errorf("%w: the request body is not the JSON expected: %v", starter.ErrInvalid, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: the request body has data after the JSON object", starter.ErrInvalid)
	}
	if err := duration.RequireUnits(body, v); err != nil {
		return fmt.Errorf("%w: %v", starter.ErrInvalid, err)
	}
	return nil
}

func (s *Server) apiOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openAPI)
}

// sendRequest is the body of POST /v1/events: to one endpoint (endpoint_id) or to every
// endpoint of a tenant subscribed to the type (tenant).
type sendRequest struct {
	EndpointID string          `json:"endpoint_id,omitempty"`
	Tenant     string          `json:"tenant,omitempty"`
	ID         string          `json:"id,omitempty"`
	Type       string          `json:"type"`
	Data       json.RawMessage `json:"data"`
	// DeliverAt (RFC 3339) schedules the first attempt (starter.SendOptions).
	DeliverAt time.Time `json:"deliver_at,omitzero"`
	// OrderingKey orders the delivery after the earlier ones to the same endpoint with
	// the same key (herald.ValidateOrderingKey).
	OrderingKey string `json:"ordering_key,omitempty"`
}

// sendResponse answers POST /v1/events sent to one endpoint.
type sendResponse struct {
	ID         string    `json:"id"`
	WorkflowID string    `json:"workflow_id"`
	DeliverAt  time.Time `json:"deliver_at,omitzero"`
}

// publishResponse answers POST /v1/events sent to a tenant.
type publishResponse struct {
	ID     string `json:"id"`
	Tenant string `json:"tenant"`
	Type   string `json:"type"`
	// NoDestination is set when no endpoint of the tenant subscribes to the type.
	NoDestination bool                     `json:"no_destination"`
	Deliveries    []starter.FanoutDelivery `json:"deliveries"`
	// Filtered are the subscribed endpoints whose filter kept the event from them.
	Filtered  []starter.FilteredEndpoint `json:"filtered,omitempty"`
	DeliverAt time.Time                  `json:"deliver_at,omitzero"`
}

func (s *Server) apiSend(ctx context.Context, w http.ResponseWriter, r *http.Request, p principal) (int, any, error) {
	var req sendRequest
	if err := decode(w, r, maxEventBody, &req); err != nil {
		return 0, nil, err
	}
	switch {
	case req.EndpointID == "" && req.Tenant == "":
		return 0, nil, fmt.Errorf("%w: endpoint_id is missing: name the endpoint to deliver to, or give tenant to deliver to every endpoint of the tenant subscribed to the type", starter.ErrInvalid)
	case req.EndpointID != "" && req.Tenant != "":
		return 0, nil, fmt.Errorf("%w: give either tenant (every subscribed endpoint) or endpoint_id (one endpoint), not both", starter.ErrInvalid)
	case req.Tenant != "":
		if !p.canSee(req.Tenant) {
			return 0, nil, fmt.Errorf("%w: this token may send only to its own tenant's endpoints, not to tenant %s", errForbidden, req.Tenant)
		}
		res, err := s.opts.Starter.PublishWith(ctx, req.Tenant, starter.Event{ID: req.ID, Type: req.Type, Data: req.Data, OrderingKey: req.OrderingKey}, starter.SendOptions{DeliverAt: req.DeliverAt})
		if err != nil {
			return 0, nil, err
		}
		return http.StatusAccepted, publishResponse{ID: res.EventID, Tenant: res.Tenant, Type: res.Type, NoDestination: res.NoDestination, Deliveries: res.Deliveries, Filtered: res.Filtered, DeliverAt: res.DeliverAt}, nil
	}
	if !p.operator() {
		if _, err := s.endpointFor(ctx, p, req.EndpointID); err != nil {
			return 0, nil, err
		}
	}
	// Event ids are scoped to the endpoint's tenant: a reused id can only name one of the
	// same tenant's events (ErrConflict if it differs), never reveal another tenant's.
	res, err := s.opts.Starter.SendWith(ctx, starter.Event{ID: req.ID, EndpointID: req.EndpointID, Type: req.Type, Data: req.Data, OrderingKey: req.OrderingKey}, starter.SendOptions{DeliverAt: req.DeliverAt})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusAccepted, sendResponse{ID: res.EventID, WorkflowID: res.WorkflowID, DeliverAt: res.DeliverAt}, nil
}

func (s *Server) apiEvent(ctx context.Context, _ http.ResponseWriter, r *http.Request, p principal) (int, any, error) {
	_, rep, err := s.pathEvent(ctx, r, p)
	if err != nil {
		return 0, nil, err
	}
	if rep.Fanout != nil { // sent to the tenant: the event and its deliveries
		return http.StatusOK, rep.Fanout, nil
	}
	st := rep.Status
	if st.Attempts == nil {
		st.Attempts = []herald.AttemptRecord{}
	}
	return http.StatusOK, st, nil
}

// replayResponse answers a replay of one event.
type replayResponse struct {
	ID       string `json:"id"`
	Replayed bool   `json:"replayed"`
	// Endpoints are the endpoints whose delivery was replayed, for an event sent to a tenant.
	Endpoints []string `json:"endpoints,omitempty"`
}

func (s *Server) apiReplay(ctx context.Context, _ http.ResponseWriter, r *http.Request, p principal) (int, any, error) {
	id := r.PathValue("id")
	only := r.URL.Query().Get("endpoint")
	// With endpoint: that delivery of an event sent to the tenant; else the delivery of an
	// event sent to one endpoint.
	tenant, rep, err := s.pathEvent(ctx, r, p)
	if err != nil {
		return 0, nil, err
	}
	if err := s.mayReplay(ctx, p, rep); err != nil {
		return 0, nil, err
	}
	// An event sent to the tenant, named without an endpoint: every dead-lettered delivery.
	done, err := s.opts.Starter.Replay(ctx, starter.Ref{Tenant: tenant, EventID: id, Endpoint: only})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusAccepted, replayResponse{ID: id, Replayed: rep.Fanout == nil || len(done.Endpoints) > 0, Endpoints: done.Endpoints}, nil
}

func (s *Server) apiGetEndpoint(ctx context.Context, _ http.ResponseWriter, r *http.Request, p principal) (int, any, error) {
	st, err := s.endpointFor(ctx, p, r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, forViewer(p, st), nil
}

// forViewer drops what only operators see from an endpoint's state: the leases, which name
// Herald's workers.
func forViewer(p principal, st herald.EndpointState) herald.EndpointState {
	if !p.operator() {
		st.Leases = nil
	}
	return st
}

// putEndpointResponse answers PUT /v1/endpoints/{id}.
type putEndpointResponse struct {
	ID      string `json:"id"`
	Tenant  string `json:"tenant"`
	URL     string `json:"url"`
	Version int    `json:"version"`
	Created bool   `json:"created"`
	// Types are the event types the endpoint subscribes to; empty means every type.
	Types []string `json:"types"`
	// Filter and Transform are the endpoint's CEL expressions, when it has them.
	Filter    string `json:"filter,omitempty"`
	Transform string `json:"transform,omitempty"`
	// Secret is the generated signing secret, present only when Herald generated one (once).
	Secret string `json:"secret,omitempty"`
}

func (s *Server) apiPutEndpoint(ctx context.Context, w http.ResponseWriter, r *http.Request, p principal) (int, any, error) {
	return s.putEndpoint(ctx, w, r, p, r.PathValue("id"), s.opts.Starter.PutEndpoint)
}

// apiPutOpsEndpoint registers or changes the operational endpoint (herald.OpsEndpointID),
// which receives Herald's operational events.
func (s *Server) apiPutOpsEndpoint(ctx context.Context, w http.ResponseWriter, r *http.Request, p principal) (int, any, error) {
	return s.putEndpoint(ctx, w, r, p, herald.OpsEndpointID, s.opts.Starter.PutOpsEndpoint)
}

// putEndpoint reads a put's body for endpoint id and sends it with put (operator tokens only).
func (s *Server) putEndpoint(ctx context.Context, w http.ResponseWriter, r *http.Request, p principal, id string,
	put func(context.Context, herald.PutEndpointRequest) (herald.PutEndpointResult, error)) (int, any, error) {
	if !p.operator() {
		return 0, nil, fmt.Errorf("%w: registering or changing endpoints needs an operator token; ask your Herald operator", errForbidden)
	}
	// The body is a herald.EndpointPut, read and translated as a line of a bulk put is.
	var body herald.EndpointPut
	if err := decode(w, r, maxBody, &body); err != nil {
		return 0, nil, err
	}
	if id == herald.OpsEndpointID && body.Tenant != "" && body.Tenant != herald.OpsTenant {
		return 0, nil, fmt.Errorf("%w: tenant: the operational endpoint belongs to tenant %s; leave tenant out", starter.ErrInvalid, herald.OpsTenant)
	}
	req, err := body.Request(id)
	if err != nil {
		return 0, nil, fmt.Errorf("%w: %v", starter.ErrInvalid, err)
	}
	res, err := put(ctx, req)
	if err != nil {
		return 0, nil, err
	}
	out := putEndpointResponse{ID: res.Endpoint.ID, Tenant: res.Endpoint.Tenant, URL: res.Endpoint.URL, Version: res.Endpoint.Version, Created: res.Created, Types: res.Endpoint.Types,
		Filter: res.Endpoint.Filter, Transform: res.Endpoint.Transform}
	if out.Types == nil {
		out.Types = []string{}
	}
	if res.SecretGenerated {
		out.Secret = string(res.Endpoint.Secret)
	}
	if out.Tenant == "" {
		out.Tenant = herald.DefaultTenant
	}
	code := http.StatusOK
	if res.Created {
		code = http.StatusCreated
	}
	return code, out, nil
}

func (s *Server) apiReset(ctx context.Context, _ http.ResponseWriter, r *http.Request, p principal) (int, any, error) {
	return s.endpointAction(ctx, r, p, s.opts.Starter.ResetCircuit)
}

// endpointAction runs act on the endpoint of the request's path, which p must be allowed to
// see (the operator, or the tenant that owns it), and answers with its state.
func (s *Server) endpointAction(ctx context.Context, r *http.Request, p principal,
	act func(ctx context.Context, id string) (herald.EndpointState, error)) (int, any, error) {
	id, _, err := s.pathEndpoint(ctx, r, p)
	if err != nil {
		return 0, nil, err
	}
	st, err := act(ctx, id)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, forViewer(p, st), nil
}

// disableRequest is the body of POST /v1/endpoints/{id}/disable (optional).
type disableRequest struct {
	Reason string `json:"reason,omitempty"`
}

// apiDisable disables an endpoint: the operator, or the tenant that owns it.
func (s *Server) apiDisable(ctx context.Context, w http.ResponseWriter, r *http.Request, p principal) (int, any, error) {
	var body disableRequest
	if r.ContentLength != 0 {
		if err := decode(w, r, maxBody, &body); err != nil {
			return 0, nil, err
		}
	}
	return s.endpointAction(ctx, r, p, func(ctx context.Context, id string) (herald.EndpointState, error) {
		return s.opts.Starter.DisableEndpoint(ctx, id, body.Reason)
	})
}

// apiEnable enables a disabled endpoint again: the operator, or the tenant that owns it.
func (s *Server) apiEnable(ctx context.Context, _ http.ResponseWriter, r *http.Request, p principal) (int, any, error) {
	return s.endpointAction(ctx, r, p, s.opts.Starter.EnableEndpoint)
}

// bulkReplayRequest is the body of POST /v1/endpoints/{id}/replay; times are RFC 3339.
type bulkReplayRequest struct {
	Since time.Time `json:"since,omitzero"`
	Until time.Time `json:"until,omitzero"`
	At    time.Time `json:"at,omitzero"`
}

// bulkReplayResponse answers a bulk replay: with its result once it has run.
type bulkReplayResponse struct {
	EndpointID string                   `json:"endpoint_id"`
	WorkflowID string                   `json:"workflow_id"`
	At         time.Time                `json:"at,omitzero"`
	Result     *herald.BulkReplayResult `json:"result,omitempty"`
}

func (s *Server) apiBulkReplay(ctx context.Context, w http.ResponseWriter, r *http.Request, p principal) (int, any, error) {
	var body bulkReplayRequest
	if r.ContentLength != 0 {
		if err := decode(w, r, maxBody, &body); err != nil {
			return 0, nil, err
		}
	}
	id, e, err := s.pathEndpoint(ctx, r, p)
	if err != nil {
		return 0, nil, err
	}
	wf, err := s.opts.Starter.BulkReplay(ctx, herald.BulkReplayInput{
		Filter: herald.DeadLetterFilter{EndpointID: id, Tenant: herald.TenantOrDefault(e.Tenant), Since: body.Since, Until: body.Until},
		At:     body.At,
	})
	if err != nil {
		return 0, nil, err
	}
	out := bulkReplayResponse{EndpointID: id, WorkflowID: wf, At: body.At}
	if body.At.After(s.opts.Now()) {
		return http.StatusAccepted, out, nil
	}
	// A replay that runs now is waited for, within half the request's time, so the
	// answer can say how many it replayed; a longer one is answered 202 and runs on.
	wctx, cancel := context.WithTimeout(ctx, s.opts.RequestTimeout/2)
	defer cancel()
	res, err := s.opts.Starter.WaitBulkReplay(wctx, wf)
	if err != nil {
		if wctx.Err() != nil && ctx.Err() == nil {
			return http.StatusAccepted, out, nil
		}
		return 0, nil, err
	}
	out.Result = &res
	return http.StatusOK, out, nil
}

// deadLetterList answers GET /v1/dead-letters.
type deadLetterList struct {
	DeadLetters []starter.DeadLetter `json:"dead_letters"`
}

func (s *Server) apiDeadLetters(ctx context.Context, _ http.ResponseWriter, r *http.Request, p principal) (int, any, error) {
	list, err := s.deadLetters(ctx, p, r.URL.Query().Get("endpoint"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, deadLetterList{DeadLetters: list}, nil
}

// deadLetters lists the dead letters p may see, of one endpoint or of all.
func (s *Server) deadLetters(ctx context.Context, p principal, endpoint string) ([]starter.DeadLetter, error) {
	f := herald.DeadLetterFilter{EndpointID: endpoint}
	if !p.operator() {
		// The events its tenant sent (HeraldTenant), wherever their endpoint went since.
		f.Tenant = herald.TenantOrDefault(p.token.Tenant)
		if endpoint == "" {
			f.EndpointID = p.endpoint // a session scoped to one endpoint sees its own only
		}
	}
	if f.EndpointID != "" {
		e, err := s.endpointFor(ctx, p, f.EndpointID)
		if err != nil {
			return nil, err
		}
		if !p.operator() {
			f.Tenant = herald.TenantOrDefault(e.Tenant)
		}
	}
	list, err := s.opts.Starter.ListDeadLetters(ctx, f)
	if err != nil {
		return nil, err
	}
	if list == nil {
		list = []starter.DeadLetter{}
	}
	return list, nil
}
