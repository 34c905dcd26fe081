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

	"github.com/heraldhq/herald/activities"
	"github.com/heraldhq/herald/policy"
	"github.com/heraldhq/herald/signature"
	"github.com/heraldhq/herald/starter"
	"github.com/heraldhq/herald/workflows"
)

// Request body limits.
const (
	// maxEventBody bounds the body of POST /v1/events. The data limit applies to the data
	// compacted (starter.ValidateEvent); this leaves room for whitespace around it.
	maxEventBody = 4*workflows.MaxDataBytes + 16<<10
	// maxBody bounds every other request body.
	maxBody = 64 << 10
)

// apiHandler is an API handler: it returns the status and value to answer with, or an error.
type apiHandler func(w http.ResponseWriter, r *http.Request, p principal) (int, any, error)

// api authenticates the bearer token and writes the handler's answer or error as JSON.
func (s *Server) api(h apiHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		p, code, msg := s.bearer(r)
		if code != 0 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="herald"`)
			writeError(w, code, msg)
			return
		}
		status, v, err := h(w, r, p)
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
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body is larger than %d bytes: event data may be at most 256 KiB compacted; send a reference to large content instead", tooLarge.Limit))
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
	writeError(w, code, cleanMessage(msg))
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
	return nil
}

func (s *Server) apiOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(openAPI)
}

// sendRequest is the body of POST /v1/events.
type sendRequest struct {
	EndpointID string          `json:"endpoint_id"`
	ID         string          `json:"id,omitempty"`
	Type       string          `json:"type"`
	Data       json.RawMessage `json:"data"`
}

// sendResponse answers POST /v1/events.
type sendResponse struct {
	ID         string `json:"id"`
	WorkflowID string `json:"workflow_id"`
}

func (s *Server) apiSend(w http.ResponseWriter, r *http.Request, p principal) (int, any, error) {
	var req sendRequest
	if err := decode(w, r, maxEventBody, &req); err != nil {
		return 0, nil, err
	}
	if req.EndpointID == "" {
		return 0, nil, fmt.Errorf("%w: endpoint_id is missing: name the endpoint to deliver to", starter.ErrInvalid)
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	if !p.operator() {
		if _, err := s.endpointFor(ctx, p, req.EndpointID); err != nil {
			return 0, nil, err
		}
	}
	// Event ids are scoped to the endpoint's tenant: a reused id can only name one of the
	// same tenant's events (ErrConflict if it differs), never reveal another tenant's.
	res, err := s.opts.Starter.Send(ctx, starter.Event{ID: req.ID, EndpointID: req.EndpointID, Type: req.Type, Data: req.Data})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusAccepted, sendResponse{ID: res.EventID, WorkflowID: res.WorkflowID}, nil
}

func (s *Server) apiEvent(_ http.ResponseWriter, r *http.Request, p principal) (int, any, error) {
	ctx, cancel := s.ctx(r)
	defer cancel()
	tenant, err := eventTenant(p, r)
	if err != nil {
		return 0, nil, err
	}
	st, err := s.eventFor(ctx, p, tenant, r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	if st.Attempts == nil {
		st.Attempts = []workflows.AttemptRecord{}
	}
	return http.StatusOK, st, nil
}

// replayResponse answers a replay of one event.
type replayResponse struct {
	ID       string `json:"id"`
	Replayed bool   `json:"replayed"`
}

func (s *Server) apiReplay(_ http.ResponseWriter, r *http.Request, p principal) (int, any, error) {
	ctx, cancel := s.ctx(r)
	defer cancel()
	id := r.PathValue("id")
	tenant, err := eventTenant(p, r)
	if err != nil {
		return 0, nil, err
	}
	if _, err := s.eventFor(ctx, p, tenant, id); err != nil {
		return 0, nil, err
	}
	if err := s.opts.Starter.ReplayOf(ctx, tenant, id); err != nil {
		return 0, nil, err
	}
	return http.StatusAccepted, replayResponse{ID: id, Replayed: true}, nil
}

// endpointList answers GET /v1/endpoints.
type endpointList struct {
	Endpoints []workflows.EndpointState `json:"endpoints"`
}

func (s *Server) apiListEndpoints(_ http.ResponseWriter, r *http.Request, p principal) (int, any, error) {
	ctx, cancel := s.ctx(r)
	defer cancel()
	list, err := s.visibleEndpoints(ctx, p)
	if err != nil {
		return 0, nil, err
	}
	for i := range list {
		list[i] = forViewer(p, list[i])
	}
	return http.StatusOK, endpointList{Endpoints: list}, nil
}

func (s *Server) apiGetEndpoint(_ http.ResponseWriter, r *http.Request, p principal) (int, any, error) {
	ctx, cancel := s.ctx(r)
	defer cancel()
	st, err := s.endpointFor(ctx, p, r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, forViewer(p, st), nil
}

// forViewer drops what only operators see from an endpoint's state: the leases, which name
// Herald's workers.
func forViewer(p principal, st workflows.EndpointState) workflows.EndpointState {
	if !p.operator() {
		st.Leases = nil
	}
	return st
}

// Duration is a JSON duration written as a Go duration string ("30s", "1h30m").
type Duration time.Duration

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("durations are strings like \"30s\" or \"2m\"")
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: use a form like \"30s\", \"2m\" or \"1h30m\"", s)
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes the duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// breakerRequest is a circuit-breaker override; missing fields take Herald's defaults. A
// field given is used as given: 0 is refused where the range starts at 1, never read as
// "the default".
type breakerRequest struct {
	ConsecutiveFailures *int      `json:"consecutive_failures,omitempty"`
	ConsecutiveWindow   *Duration `json:"consecutive_window,omitempty"`
	VolumeFailures      *int      `json:"volume_failures,omitempty"`
	VolumeWindow        *Duration `json:"volume_window,omitempty"`
	ProbeDelay          *Duration `json:"probe_delay,omitempty"`
	MaxProbeDelay       *Duration `json:"max_probe_delay,omitempty"`
	HalfOpenSuccesses   *int      `json:"half_open_successes,omitempty"`
	ProbeTimeout        *Duration `json:"probe_timeout,omitempty"`
}

func (b breakerRequest) config() (policy.BreakerConfig, error) {
	c := policy.DefaultBreakerConfig()
	setInt := func(dst *int, v *int) {
		if v != nil {
			*dst = *v
		}
	}
	setDur := func(dst *time.Duration, v *Duration) {
		if v != nil {
			*dst = time.Duration(*v)
		}
	}
	setInt(&c.ConsecutiveFailures, b.ConsecutiveFailures)
	setDur(&c.ConsecutiveWindow, b.ConsecutiveWindow)
	setInt(&c.VolumeFailures, b.VolumeFailures)
	setDur(&c.VolumeWindow, b.VolumeWindow)
	setDur(&c.ProbeDelay, b.ProbeDelay)
	setDur(&c.MaxProbeDelay, b.MaxProbeDelay)
	if c.MaxProbeDelay < c.ProbeDelay && b.MaxProbeDelay == nil {
		c.MaxProbeDelay = c.ProbeDelay
	}
	setInt(&c.HalfOpenSuccesses, b.HalfOpenSuccesses)
	setDur(&c.ProbeTimeout, b.ProbeTimeout)
	if err := c.Validate(); err != nil {
		return c, fmt.Errorf("%w: breaker: %v", starter.ErrInvalid, err)
	}
	return c, nil
}

// putEndpointRequest is the body of PUT /v1/endpoints/{id}; absent fields keep what is
// stored. A field given is used as given: 0 is refused where the range starts above 0,
// never read as "keep" or "the default".
type putEndpointRequest struct {
	URL         string          `json:"url,omitempty"`
	Secret      string          `json:"secret,omitempty"`
	Tenant      string          `json:"tenant,omitempty"`
	MaxInFlight *int            `json:"max_in_flight,omitempty"`
	Schedule    []Duration      `json:"schedule,omitempty"`
	Attempts    *int            `json:"attempts,omitempty"`
	Jitter      *float64        `json:"jitter,omitempty"`
	Timeout     *Duration       `json:"timeout,omitempty"`
	Retention   *Duration       `json:"retention,omitempty"`
	Breaker     *breakerRequest `json:"breaker,omitempty"`
	// ClearOverrides returns the endpoint to the worker's defaults before applying the rest.
	ClearOverrides bool `json:"clear_overrides,omitempty"`
}

// putEndpointResponse answers PUT /v1/endpoints/{id}.
type putEndpointResponse struct {
	ID      string `json:"id"`
	Tenant  string `json:"tenant"`
	URL     string `json:"url"`
	Version int    `json:"version"`
	Created bool   `json:"created"`
	// Secret is the generated signing secret, present only when Herald generated one (once).
	Secret string `json:"secret,omitempty"`
}

func (s *Server) apiPutEndpoint(w http.ResponseWriter, r *http.Request, p principal) (int, any, error) {
	if !p.operator() {
		return 0, nil, fmt.Errorf("%w: registering or changing endpoints needs an operator token; ask your Herald operator", errForbidden)
	}
	var body putEndpointRequest
	if err := decode(w, r, maxBody, &body); err != nil {
		return 0, nil, err
	}
	req := workflows.PutEndpointRequest{ID: r.PathValue("id"), URL: body.URL, Tenant: body.Tenant, ClearOverrides: body.ClearOverrides}
	if body.Secret != "" {
		sec, err := signature.ParseSecret(body.Secret)
		if err != nil {
			return 0, nil, fmt.Errorf("%w: secret: %v", starter.ErrInvalid, err)
		}
		req.Secret = sec
	}
	var o activities.Overrides
	set := false
	// Overrides read 0 as "keep": a 0 given here must be refused, not dropped.
	if body.Attempts != nil && *body.Attempts < 1 {
		return 0, nil, fmt.Errorf("%w: attempts %d: give 1 to %d, or leave attempts out to keep it", starter.ErrInvalid, *body.Attempts, policy.MaxAttempts)
	}
	if body.MaxInFlight != nil && (*body.MaxInFlight < policy.MinMaxInFlight || *body.MaxInFlight > policy.MaxMaxInFlight) {
		return 0, nil, fmt.Errorf("%w: max_in_flight %d is outside %d..%d", starter.ErrInvalid, *body.MaxInFlight, policy.MinMaxInFlight, policy.MaxMaxInFlight)
	}
	for _, f := range []struct {
		name string
		d    *Duration
	}{{"timeout", body.Timeout}, {"retention", body.Retention}} {
		if f.d != nil && *f.d <= 0 {
			return 0, nil, fmt.Errorf("%w: %s %s: give a positive duration, or leave %s out to keep it", starter.ErrInvalid, f.name, time.Duration(*f.d), f.name)
		}
	}
	if body.Schedule != nil || body.Attempts != nil || body.Jitter != nil {
		lo := policy.LadderOverride{Jitter: body.Jitter}
		if body.Attempts != nil {
			lo.Attempts = *body.Attempts
		}
		if body.Schedule != nil {
			lo.Delays = make([]time.Duration, len(body.Schedule))
			for i, d := range body.Schedule {
				lo.Delays[i] = time.Duration(d)
			}
		}
		o.Ladder, set = &lo, true
	}
	if body.MaxInFlight != nil {
		o.MaxInFlight, set = *body.MaxInFlight, true
	}
	if body.Timeout != nil {
		o.Timeout, set = time.Duration(*body.Timeout), true
	}
	if body.Retention != nil {
		o.Retention, set = time.Duration(*body.Retention), true
	}
	if body.Breaker != nil {
		c, err := body.Breaker.config()
		if err != nil {
			return 0, nil, err
		}
		// Missing fields take Herald's defaults: the API sets the breaker as a whole.
		full := c.Override()
		o.Breaker, set = &full, true
	}
	if set {
		req.Overrides = &o
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	res, err := s.opts.Starter.PutEndpoint(ctx, req)
	if err != nil {
		return 0, nil, err
	}
	out := putEndpointResponse{ID: res.Endpoint.ID, Tenant: res.Endpoint.Tenant, URL: res.Endpoint.URL, Version: res.Endpoint.Version, Created: res.Created}
	if res.SecretGenerated {
		out.Secret = string(res.Endpoint.Secret)
	}
	if out.Tenant == "" {
		out.Tenant = workflows.DefaultTenant
	}
	code := http.StatusOK
	if res.Created {
		code = http.StatusCreated
	}
	return code, out, nil
}

func (s *Server) apiReset(_ http.ResponseWriter, r *http.Request, p principal) (int, any, error) {
	ctx, cancel := s.ctx(r)
	defer cancel()
	id := r.PathValue("id")
	if _, err := s.endpointFor(ctx, p, id); err != nil {
		return 0, nil, err
	}
	st, err := s.opts.Starter.ResetCircuit(ctx, id)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, forViewer(p, st), nil
}

// bulkReplayRequest is the body of POST /v1/endpoints/{id}/replay; times are RFC 3339.
type bulkReplayRequest struct {
	Since time.Time `json:"since,omitzero"`
	Until time.Time `json:"until,omitzero"`
	At    time.Time `json:"at,omitzero"`
}

// bulkReplayResponse answers a bulk replay.
type bulkReplayResponse struct {
	EndpointID string    `json:"endpoint_id"`
	WorkflowID string    `json:"workflow_id"`
	At         time.Time `json:"at,omitzero"`
}

func (s *Server) apiBulkReplay(w http.ResponseWriter, r *http.Request, p principal) (int, any, error) {
	var body bulkReplayRequest
	if r.ContentLength != 0 {
		if err := decode(w, r, maxBody, &body); err != nil {
			return 0, nil, err
		}
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	id := r.PathValue("id")
	if _, err := s.endpointFor(ctx, p, id); err != nil {
		return 0, nil, err
	}
	wf, err := s.opts.Starter.BulkReplay(ctx, workflows.BulkReplayInput{
		Filter: activities.DeadLetterFilter{EndpointID: id, Since: body.Since, Until: body.Until},
		At:     body.At,
	})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusAccepted, bulkReplayResponse{EndpointID: id, WorkflowID: wf, At: body.At}, nil
}

// deadLetterList answers GET /v1/dead-letters.
type deadLetterList struct {
	DeadLetters []starter.DeadLetter `json:"dead_letters"`
}

func (s *Server) apiDeadLetters(_ http.ResponseWriter, r *http.Request, p principal) (int, any, error) {
	ctx, cancel := s.ctx(r)
	defer cancel()
	list, err := s.deadLetters(ctx, p, r.URL.Query().Get("endpoint"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, deadLetterList{DeadLetters: list}, nil
}

// deadLetters lists the dead letters p may see, of one endpoint or of all.
func (s *Server) deadLetters(ctx context.Context, p principal, endpoint string) ([]starter.DeadLetter, error) {
	visible := map[string]bool{}
	if endpoint != "" {
		if _, err := s.endpointFor(ctx, p, endpoint); err != nil {
			return nil, err
		}
		visible[endpoint] = true
	} else if !p.operator() {
		eps, err := s.visibleEndpoints(ctx, p)
		if err != nil {
			return nil, err
		}
		for _, e := range eps {
			visible[e.ID] = true
		}
	}
	list, err := s.opts.Starter.ListDeadLetters(ctx, activities.DeadLetterFilter{EndpointID: endpoint})
	if err != nil {
		return nil, err
	}
	out := make([]starter.DeadLetter, 0, len(list))
	for _, d := range list {
		if p.operator() || visible[d.EndpointID] {
			out = append(out, d)
		}
	}
	return out, nil
}
