// Package server is Herald's HTTP face: a JSON API under /v1 for producers in any language,
// and a server-rendered dashboard where customers (tenant tokens) and operators see their
// endpoints' circuits, deliveries and dead letters, and replay them. It is one http.Handler,
// served by `herald serve` and by `herald dev`.
package server

import (
	"cmp"
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/heraldhq/herald/expr"
	"github.com/heraldhq/herald/starter"
	"github.com/heraldhq/herald/tracing"
)

//go:embed openapi.json
var openAPI []byte

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Cookie security modes of Options.CookieSecure.
const (
	// CookieSecureAuto marks the session cookie Secure when the request came over https
	// (directly, or through a proxy that says so in X-Forwarded-Proto).
	CookieSecureAuto = "auto"
	// CookieSecureAlways always marks it Secure (browsers then send it only over https).
	CookieSecureAlways = "always"
	// CookieSecureNever never marks it Secure (plain http, e.g. on 127.0.0.1).
	CookieSecureNever = "never"
)

// Options configure a Server.
type Options struct {
	// Starter is Herald's Go API; required.
	Starter *starter.Client
	// Client is the Temporal client behind Starter, for the visibility queries of the
	// dashboard's recent deliveries; required.
	Client client.Client
	// Tokens holds the bearer tokens; required.
	Tokens *TokenStore
	// Namespace is the Temporal namespace, for links to the Temporal UI.
	Namespace string
	// TemporalUI is the base URL of the Temporal Web UI (e.g. http://127.0.0.1:8233);
	// empty: no links. Only operators see the links.
	TemporalUI string
	// CookieSecure is CookieSecureAuto (default), CookieSecureAlways or CookieSecureNever.
	CookieSecure string
	// SessionTTL is how long a dashboard session lasts; default 12h.
	SessionTTL time.Duration
	// RequestTimeout bounds each request's calls to Temporal; default 15s.
	RequestTimeout time.Duration
	// BulkTimeout bounds a bulk put's calls to Temporal (POST /v1/endpoints, up to
	// starter.MaxPutEndpoints lines); default 10m.
	BulkTimeout time.Duration
	// RefreshInterval is how often an open dashboard page refreshes its live part; default 3s.
	RefreshInterval time.Duration
	// Location is the time zone of times on the dashboard; default time.Local.
	Location *time.Location
	// Logger receives unexpected errors; default slog.Default().
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// PublicURL is the base URL people open the dashboard at (e.g.
	// https://herald.example.com), for the portal links the API mints; empty: the URL of
	// the request that mints the link.
	PublicURL string
	// FrameAncestors are the origins (https://app.example.com, or https://*.example.com)
	// whose pages may show the dashboard in a frame, to embed the portal; empty: no page
	// may frame it. When set, portal links' session cookies are SameSite=None, Secure and
	// Partitioned, so that they reach the frame.
	FrameAncestors []string
	// Tracing, if set, gives each request a server span named after its route ("POST
	// /v1/events"), continuing the caller's traceparent; the calls to Temporal it makes
	// carry the trace when the client has the tracing interceptor.
	Tracing *tracing.Tracing
}

// Server serves the JSON API and the dashboard.
type Server struct {
	opts Options
	mux  *http.ServeMux
	// handler is serve, traced when Options.Tracing is set.
	handler http.Handler
	// rates caches endpoints' delivery counts (see deliveryRate).
	rates struct {
		sync.Mutex
		m map[string]rateCount
	}
}

// route is one method+path the server answers.
type route struct {
	method, path string
	api          bool // under /v1 and documented in openapi.json
	h            http.HandlerFunc
}

// New returns the server. Mount it at "/" (it owns /v1/, /static/ and the dashboard's pages).
func New(o Options) (*Server, error) {
	if o.Starter == nil || o.Client == nil {
		return nil, errors.New("server: Options.Starter and Options.Client are required")
	}
	if o.Tokens == nil {
		return nil, errors.New("server: Options.Tokens is required")
	}
	switch o.CookieSecure {
	case "":
		o.CookieSecure = CookieSecureAuto
	case CookieSecureAuto, CookieSecureAlways, CookieSecureNever:
	default:
		return nil, errors.New("cookie security " + o.CookieSecure + " is unknown: use auto, always or never")
	}
	o.Namespace = cmp.Or(o.Namespace, "default")
	o.TemporalUI = strings.TrimRight(o.TemporalUI, "/")
	o.SessionTTL = cmp.Or(o.SessionTTL, 12*time.Hour)
	o.RequestTimeout = cmp.Or(o.RequestTimeout, 15*time.Second)
	o.BulkTimeout = cmp.Or(o.BulkTimeout, 10*time.Minute)
	o.RefreshInterval = cmp.Or(o.RefreshInterval, 3*time.Second)
	o.Location = cmp.Or(o.Location, time.Local)
	o.Logger = cmp.Or(o.Logger, slog.Default())
	if o.Now == nil {
		o.Now = time.Now
	}
	for _, a := range o.FrameAncestors {
		if err := validateFrameAncestor(a); err != nil {
			return nil, err
		}
	}
	if o.PublicURL != "" {
		if u, err := url.Parse(o.PublicURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("public URL %q: give the base URL people open the dashboard at, such as https://herald.example.com", o.PublicURL)
		}
		o.PublicURL = strings.TrimRight(o.PublicURL, "/")
	}
	s := &Server{opts: o, mux: http.NewServeMux()}
	for _, rt := range s.routes() {
		s.mux.HandleFunc(rt.method+" "+rt.path, rt.h)
	}
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, err
	}
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	s.mux.HandleFunc("/v1/", s.noRoute)
	s.handler = http.HandlerFunc(s.serve)
	if o.Tracing.Enabled() {
		s.handler = o.Tracing.Handler(s.handler)
	}
	return s, nil
}

// routes lists every route; the API ones must match openapi.json (a test checks).
func (s *Server) routes() []route {
	return []route{
		{"GET", "/v1/openapi.json", true, s.apiOpenAPI},
		{"POST", "/v1/events", true, s.api(s.apiSend)},
		{"GET", "/v1/events/{id}", true, s.api(s.apiEvent)},
		{"POST", "/v1/events/{id}/replay", true, s.api(s.apiReplay)},
		{"POST", "/v1/events/{id}/cancel", true, s.api(s.apiCancel)},
		{"GET", "/v1/endpoints", true, s.api(s.apiListEndpoints)},
		{"GET", "/v1/endpoints/{id}", true, s.api(s.apiGetEndpoint)},
		{"PUT", "/v1/endpoints/{id}", true, s.api(s.apiPutEndpoint)},
		{"POST", "/v1/endpoints", true, s.apiWithin(func() time.Duration { return s.opts.BulkTimeout }, s.apiPutEndpoints)},
		{"POST", "/v1/endpoints/{id}/reset", true, s.api(s.apiReset)},
		{"POST", "/v1/endpoints/{id}/disable", true, s.api(s.apiDisable)},
		{"PUT", "/v1/ops-endpoint", true, s.api(s.apiPutOpsEndpoint)},
		{"POST", "/v1/endpoints/{id}/enable", true, s.api(s.apiEnable)},
		{"POST", "/v1/endpoints/{id}/replay", true, s.api(s.apiBulkReplay)},
		{"GET", "/v1/dead-letters", true, s.api(s.apiDeadLetters)},
		{"GET", "/v1/event-types", true, s.api(s.apiListEventTypes)},
		{"POST", "/v1/event-types", true, s.api(s.apiPostEventType)},
		{"GET", "/v1/event-types/{name}", true, s.api(s.apiGetEventType)},
		{"PUT", "/v1/event-types/{name}", true, s.api(s.apiPutEventType)},
		{"GET", "/v1/settings", true, s.api(s.apiGetSettings)},
		{"PUT", "/v1/settings", true, s.api(s.apiPutSettings)},

		// Self-service and portal links (selfservice.go, portallink.go).
		{"POST", "/v1/portal-links", true, s.api(s.apiPortalLink)},
		{"GET", PortalPath, false, s.portalSignin},
		{"GET", "/register", false, s.page(s.registerPage)},
		{"POST", "/register", false, s.page(s.registerForm)},
		{"GET", "/endpoints/{id}/settings", false, s.page(s.settingsPage)},
		{"POST", "/endpoints/{id}/secret", false, s.page(s.rotateForm)},
		{"POST", "/endpoints/{id}/test", false, s.page(s.testEventForm)},
		{"POST", "/endpoints/{id}/filter", false, s.page(s.expressionForm(expr.KindFilter))},
		{"POST", "/endpoints/{id}/transform", false, s.page(s.expressionForm(expr.KindTransform))},
		{"POST", "/endpoints/{id}/auth", false, s.page(s.authForm)},

		{"GET", "/{$}", false, s.page(s.home)},
		{"GET", "/signin", false, s.signinForm},
		{"POST", "/signin", false, s.signin},
		{"POST", "/signout", false, s.page(s.signout)},
		{"GET", "/endpoints", false, s.page(s.endpointsPage)},
		{"GET", "/endpoints/{id}", false, s.page(s.endpointPage)},
		{"POST", "/endpoints/{id}/reset", false, s.page(s.resetForm)},
		{"POST", "/endpoints/{id}/disable", false, s.page(s.disableForm)},
		{"POST", "/endpoints/{id}/enable", false, s.page(s.enableForm)},
		{"POST", "/endpoints/{id}/replay", false, s.page(s.bulkReplayForm)},
		{"POST", "/endpoints/{id}/types", false, s.page(s.typesForm)},
		{"POST", "/endpoints/{id}/filter-test", false, s.page(s.filterTestForm)},
		{"GET", "/events/{id}", false, s.page(s.eventPage)},
		{"POST", "/events/{id}/replay", false, s.page(s.replayForm)},
		{"POST", "/events/{id}/cancel", false, s.page(s.cancelForm)},

		// The portal: the event list and its API, the favicon.
		{"GET", "/v1/events", true, s.api(s.apiListEvents)},
		{"GET", "/events", false, s.page(s.eventsPage)},
		{"GET", "/favicon.ico", false, s.favicon},
	}
}

// noRoute answers a request no API route takes: 405 with Allow when the path has routes for
// other methods, 404 otherwise.
func (s *Server) noRoute(w http.ResponseWriter, r *http.Request) {
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := s.mux.Handler(probe); pattern != "/v1/" {
			allow = append(allow, m)
		}
	}
	if len(allow) == 0 {
		writeError(w, http.StatusNotFound, "no API route "+r.Method+" "+r.URL.Path+": see /v1/openapi.json")
		return
	}
	w.Header().Set("Allow", strings.Join(allow, ", "))
	writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("%s does not take %s: use %s (see /v1/openapi.json)", r.URL.Path, r.Method, strings.Join(allow, " or ")))
}

// ServeHTTP serves r, in a span of its own when tracing is on.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// serve adds the security headers to every answer and routes the request.
func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	frames := "'none'"
	if len(s.opts.FrameAncestors) > 0 {
		frames = strings.Join(s.opts.FrameAncestors, " ")
	} else {
		h.Set("X-Frame-Options", "DENY") // for browsers without CSP frame-ancestors
	}
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors "+frames+"; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	if s.secure(r) {
		h.Set("Strict-Transport-Security", "max-age=31536000")
	}
	s.mux.ServeHTTP(w, r)
}

// validateFrameAncestor checks an origin that may frame the dashboard.
func validateFrameAncestor(a string) error {
	u, err := url.Parse(a)
	bad := err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || (u.Path != "" && u.Path != "/") ||
		u.RawQuery != "" || u.Fragment != "" || u.User != nil || strings.ContainsAny(a, " ;,'\"") || strings.Contains(strings.TrimPrefix(u.Host, "*."), "*")
	if bad {
		return fmt.Errorf("frame ancestor %q: give an origin such as https://app.example.com or https://*.example.com", a)
	}
	return nil
}

// secure reports whether the session cookie is marked Secure for r.
func (s *Server) secure(r *http.Request) bool {
	switch s.opts.CookieSecure {
	case CookieSecureAlways:
		return true
	case CookieSecureNever:
		return false
	}
	return r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https")
}

// ctx bounds a request's calls to Temporal.
func (s *Server) ctx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), s.opts.RequestTimeout)
}

// errStatus maps an error from starter or Temporal to an HTTP status.
func errStatus(err error) int {
	var unavailable *serviceerror.Unavailable
	var deadline *serviceerror.DeadlineExceeded
	switch {
	case errors.Is(err, errForbidden):
		return http.StatusForbidden
	case errors.Is(err, errMediaType):
		return http.StatusUnsupportedMediaType
	case errors.Is(err, starter.ErrTooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, starter.ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, starter.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, starter.ErrConflict):
		return http.StatusConflict
	case errors.As(err, &unavailable), errors.As(err, &deadline),
		errors.Is(err, context.DeadlineExceeded), strings.Contains(err.Error(), "connection refused"):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// errForbidden marks what a token may not do at all (as opposed to what it may not see).
var errForbidden = errors.New("forbidden")

// errMediaType marks a request body that is not application/json.
var errMediaType = errors.New("unsupported media type")

// unavailableMessage is the message of a 503.
const unavailableMessage = "Temporal is unreachable right now; retry shortly (if it lasts, the Herald server cannot reach its Temporal frontend: tell its operator)"
