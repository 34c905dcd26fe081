package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/signature"
	"github.com/heraldhq/herald/starter"
)

// Tenant self-service: a tenant (signed in with its token or a portal link) or an operator
// acting for one registers endpoints, rotates their signing secrets and sends them test
// events from the dashboard (their filters, transformations and authentication: see
// endpointsettings.go). Choosing event types and disabling/enabling use the endpoint
// page's forms (typesForm, disableForm, enableForm), which come back here when told to.
//
// Signing secrets are never read back: Herald keeps them only inside the endpoint
// workflow (encrypted in Temporal), and no query returns them. A secret is shown once,
// when it is made: on registration, and on rotation, which is how a tenant that lost its
// secret gets one it can read.

// TestEventType is the default type of the test events sent from the dashboard.
const TestEventType = "herald.test"

// graceChoice is a choice of how long the old secret keeps signing after a rotation.
type graceChoice struct {
	Value, Label string
	d            time.Duration
}

// graceChoices are the rotation form's choices, the default first.
var graceChoices = []graceChoice{
	{"24h", "24 hours (recommended)", 24 * time.Hour},
	{"1h", "1 hour", time.Hour},
	{"168h", "7 days", 7 * 24 * time.Hour},
	{"0", "no grace: the old secret stops signing at once", 0},
}

// selfView is what the self-service pages show.
type selfView struct {
	// Tenant is the tenant an endpoint is registered for; AnyTenant lets an operator name it.
	Tenant    string
	AnyTenant bool
	// Form echoes the register form after an error.
	FormID, FormURL, FormTypes string
	// Secret is a signing secret shown once; SecretNote says how it came to be.
	Secret     string
	SecretNote string
	// Rotating is when the previous secret stops signing, while it does.
	Rotating string
	Graces   []graceChoice
	// Catalog lists the registered event types, for the test event's type.
	Catalog []string
	// TestType is the test event's default type.
	TestType string
	// TestEvent and TestEventURL name the test event just sent.
	TestEvent, TestEventURL string
	// Edit is what the filter, transformation and authentication forms show
	// (endpointsettings.go).
	Edit *settingsEdit
}

// formBack is where an endpoint form goes once done: the endpoint's settings when the
// form came from there (back=settings), else the endpoint's page.
func formBack(r *http.Request, id string) string {
	page := "/endpoints/" + url.PathEscape(id)
	if r.PostFormValue("back") == "settings" {
		return page + "/settings"
	}
	return page
}

// mayRegister refuses a session scoped to one endpoint.
func mayRegister(p principal) error {
	if p.endpoint != "" {
		return fmt.Errorf("%w: this portal session is for endpoint %s only: it cannot register endpoints", errForbidden, p.endpoint)
	}
	return nil
}

func (s *Server) registerPage(_ context.Context, w http.ResponseWriter, r *http.Request, p principal) error {
	if err := mayRegister(p); err != nil {
		return err
	}
	v := s.newView(p, "Register an endpoint")
	v.Refresh = 0
	v.Self = &selfView{Tenant: p.token.Tenant, AnyTenant: p.operator(), FormTypes: "*"}
	if p.operator() {
		v.Self.Tenant = r.URL.Query().Get("tenant")
	}
	s.render(w, r, http.StatusOK, "register.html", v)
	return nil
}

// registerForm registers a new endpoint for the principal's tenant (an operator names the
// tenant) and shows its generated signing secret once. It never changes an endpoint that
// exists: the put is create-only, checked by the endpoint workflow.
func (s *Server) registerForm(ctx context.Context, w http.ResponseWriter, r *http.Request, p principal) error {
	if err := mayRegister(p); err != nil {
		return err
	}
	id := strings.TrimSpace(r.PostFormValue("id"))
	u := strings.TrimSpace(r.PostFormValue("url"))
	typesIn := r.PostFormValue("types")
	tenant := p.token.Tenant
	if p.operator() {
		tenant = strings.TrimSpace(r.PostFormValue("tenant"))
	}
	again := func(code int, msg string) error {
		v := s.newView(p, "Register an endpoint")
		v.Refresh, v.Error = 0, msg
		v.Self = &selfView{Tenant: tenant, AnyTenant: p.operator(), FormID: id, FormURL: u, FormTypes: typesIn}
		s.render(w, r, code, "register.html", v)
		return nil
	}
	switch {
	case id == "":
		return again(http.StatusBadRequest, "Give the endpoint an id, such as orders-prod: it names the endpoint in the dashboard and the API.")
	case u == "":
		return again(http.StatusBadRequest, "Give the URL Herald should POST events to, such as https://example.com/webhooks.")
	case tenant == "":
		return again(http.StatusBadRequest, "Name the tenant the endpoint belongs to, such as acme.")
	}
	// The same change as herald endpoint put and PUT /v1/endpoints/{id}: checked by
	// herald.EndpointChange and the starter, never here.
	c := herald.EndpointChange{Types: splitTypes(typesIn)}
	o, err := c.Overrides()
	if err != nil {
		return again(http.StatusBadRequest, cleanMessage(err.Error()))
	}
	if _, err := s.opts.Starter.GetEndpoint(ctx, id); err == nil {
		return again(http.StatusConflict, "The endpoint id "+id+" is taken: choose another id.")
	}
	res, err := s.opts.Starter.PutEndpoint(ctx, herald.PutEndpointRequest{ID: id, URL: u, Tenant: tenant, Overrides: o, Types: c.Types, CreateOnly: true})
	switch {
	case err != nil && res.Endpoint.Version > 0:
		// Saved, but not yet in the tenant's directory: show the secret (it cannot be shown
		// later) and say how to finish.
		s.opts.Logger.Error("register an endpoint: subscriptions not recorded", "endpoint", id, "error", err)
		return s.showSecret(w, r, p, res.Endpoint, string(res.Endpoint.Secret), "unsubscribed")
	case err != nil:
		if code := errStatus(err); code == http.StatusBadRequest || code == http.StatusConflict {
			return again(code, cleanMessage(err.Error())+".")
		}
		return err
	}
	return s.showSecret(w, r, p, res.Endpoint, string(res.Endpoint.Secret), "registered")
}

// splitTypes reads a list of event types separated by commas or spaces; none is every type.
func splitTypes(in string) []string {
	types := strings.FieldsFunc(in, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
	if len(types) == 0 {
		return []string{"*"}
	}
	return types
}

func (s *Server) settingsPage(ctx context.Context, w http.ResponseWriter, r *http.Request, p principal) error {
	id, e, err := s.pathEndpoint(ctx, r, p)
	if err != nil {
		return err
	}
	s.render(w, r, http.StatusOK, "settings.html", s.settingsView(ctx, r, p, id, e))
	return nil
}

// settingsView is the settings page of endpoint e (id), with the flash of the form that
// came back to it.
func (s *Server) settingsView(ctx context.Context, r *http.Request, p principal, id string, e herald.EndpointState) view {
	v := s.newView(p, "Settings of "+id)
	v.Refresh = 0
	v.Endpoint = s.endpointView(e)
	v.Flash = flash(r)
	self := &selfView{Graces: graceChoices, TestType: TestEventType}
	if !e.Rotating.IsZero() && e.Rotating.After(s.opts.Now()) {
		self.Rotating = s.stamp(e.Rotating)
	}
	if q := r.URL.Query(); q.Get("done") == "test" {
		ev := q.Get("event")
		self.TestEvent = ev
		self.TestEventURL = "/events/" + url.PathEscape(ev) + tenantQuery(e.Tenant)
		v.Flash = "Test event " + ev + " sent to " + id + " only."
		if at, err := time.Parse(time.RFC3339, q.Get("at")); err == nil {
			v.Flash = "Test event " + ev + " scheduled for " + s.stamp(at) + ", to " + id + " only."
		}
	}
	if cat, err := s.opts.Starter.EventTypes(ctx); err == nil {
		for _, t := range cat.Types {
			self.Catalog = append(self.Catalog, t.Name)
		}
	}
	self.Edit = newSettingsEdit(e)
	v.Self = self
	return v
}

// rotateForm makes a new signing secret current and shows it once; the old one keeps
// signing for the grace period chosen (as herald endpoint rotate-secret --grace).
func (s *Server) rotateForm(ctx context.Context, w http.ResponseWriter, r *http.Request, p principal) error {
	id, _, err := s.pathEndpoint(ctx, r, p)
	if err != nil {
		return err
	}
	grace, ok := time.Duration(0), false
	for _, g := range graceChoices {
		if g.Value == r.PostFormValue("grace") {
			grace, ok = g.d, true
		}
	}
	if !ok {
		return fmt.Errorf("%w: choose how long the old secret keeps signing: 24 hours, 1 hour, 7 days or no grace", starter.ErrInvalid)
	}
	sec, err := signature.GenerateSecret()
	if err != nil {
		return err
	}
	req := herald.PutEndpointRequest{ID: id, RotateTo: sec, RotateGrace: herald.Duration(grace)}
	if grace == 0 {
		req = herald.PutEndpointRequest{ID: id, Secret: sec} // replaced at once, no previous secret
	}
	res, err := s.opts.Starter.PutEndpoint(ctx, req)
	if err != nil && res.Endpoint.Version == 0 {
		return err
	}
	if err != nil { // the new secret is saved and signs: it must be shown now or never
		s.opts.Logger.Error("rotate a secret: subscriptions not recorded", "endpoint", id, "error", err)
	}
	return s.showSecret(w, r, p, res.Endpoint, string(sec), "rotated")
}

// showSecret answers a form that made a signing secret with the secret, shown this once
// (the answer is not stored: Cache-Control no-store).
func (s *Server) showSecret(w http.ResponseWriter, r *http.Request, p principal, e herald.Endpoint, secret, how string) error {
	v := s.newView(p, "Signing secret of "+e.ID)
	v.Refresh = 0
	v.Endpoint = s.endpointView(herald.EndpointState{ID: e.ID, Tenant: e.Tenant, URL: e.URL, Types: e.Types})
	self := &selfView{Secret: secret}
	switch {
	case how == "registered":
		self.SecretNote = "Endpoint " + e.ID + " is registered. Herald signs every event it sends to it with this secret; your receiver verifies the webhook-signature header with it."
	case how == "unsubscribed":
		self.SecretNote = "Endpoint " + e.ID + " is registered and signed with this secret, but its event types could not be recorded for events sent to tenant " + e.Tenant + " (Temporal did not answer in time): open its settings and save its event types again."
	case e.PreviousSecret != "" && e.PreviousUntil.After(s.opts.Now()):
		self.SecretNote = "The new secret signs from now on. The old secret also signs until " + s.stamp(e.PreviousUntil) + ": switch your receiver to the new one before then."
	default:
		self.SecretNote = "The new secret signs from now on; the old one no longer does. Switch your receiver to the new one now: until then it rejects Herald's events."
	}
	v.Self = self
	s.render(w, r, http.StatusOK, "secret.html", v)
	return nil
}

// testData is the data of a test event.
type testData struct {
	Test     bool   `json:"test"`
	Message  string `json:"message"`
	Endpoint string `json:"endpoint"`
}

// testEventForm sends a test event to one endpoint only (never to the tenant's other
// endpoints), now or after the delay chosen (testDelay), and goes back to its settings,
// which link to the event's page.
func (s *Server) testEventForm(ctx context.Context, w http.ResponseWriter, r *http.Request, p principal) error {
	id, _, err := s.pathEndpoint(ctx, r, p)
	if err != nil {
		return err
	}
	typ := strings.TrimSpace(r.PostFormValue("type"))
	if typ == "" {
		typ = TestEventType
	}
	delay, err := testDelay(r)
	if err != nil {
		return err
	}
	var o starter.SendOptions
	if delay > 0 {
		o.DeliverAt = s.opts.Now().Add(delay)
	}
	data, _ := json.Marshal(testData{Test: true, Message: "A test event sent from the Herald dashboard.", Endpoint: id})
	res, err := s.opts.Starter.SendWith(ctx, starter.Event{EndpointID: id, Type: typ, Data: data}, o)
	if err != nil {
		return err
	}
	back := url.Values{"done": {"test"}, "event": {res.EventID}}
	if !res.DeliverAt.IsZero() {
		back.Set("at", res.DeliverAt.UTC().Format(time.RFC3339))
	}
	http.Redirect(w, r, withQuery("/endpoints/"+url.PathEscape(id)+"/settings", back), http.StatusSeeOther)
	return nil
}
