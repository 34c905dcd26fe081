package server

import (
	"bytes"
	"context"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// pages are the dashboard's templates, each parsed with the layout.
var pages = func() map[string]*template.Template {
	funcs := template.FuncMap{"pathEscape": url.PathEscape, "stateLabel": stateLabel,
		"pageSizes": pageSizes}
	m := map[string]*template.Template{}
	for _, name := range []string{"signin.html", "endpoints.html", "endpoint.html", "event.html", "error.html", "events.html",
		"register.html", "settings.html", "secret.html", "portal.html"} {
		m[name] = template.Must(template.New(name).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name))
	}
	return m
}()

// pageHandler is a dashboard handler for a signed-in principal. Its ctx is the request's,
// bounded by Options.RequestTimeout for calls to Temporal.
type pageHandler func(ctx context.Context, w http.ResponseWriter, r *http.Request, p principal) error

// page requires a session (redirecting to the sign-in form otherwise) and, for a POST, the
// session's CSRF token.
func (s *Server) page(h pageHandler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		p, ok := s.session(r)
		if !ok {
			if r.Method == http.MethodGet && r.URL.Query().Get("fragment") == "" {
				http.Redirect(w, r, "/signin?next="+url.QueryEscape(r.URL.Path), http.StatusSeeOther)
				return
			}
			s.errorPage(w, r, principal{}, http.StatusUnauthorized, "Your session has ended: sign in again.")
			return
		}
		if r.Method == http.MethodPost {
			r.Body = http.MaxBytesReader(w, r.Body, maxBody)
			if formTooLarge(r) {
				s.errorPage(w, r, p, http.StatusRequestEntityTooLarge, fmt.Sprintf("This form is larger than %d KiB, the limit of a dashboard form: nothing was changed. Go back and send less.", maxBody>>10))
				return
			}
			if !s.checkCSRF(r, p) {
				s.errorPage(w, r, p, http.StatusForbidden, "This form did not come from this page (CSRF check failed): go back, reload the page and try again.")
				return
			}
		}
		ctx, cancel := s.ctx(r)
		defer cancel()
		if err := h(ctx, w, r, p); err != nil {
			code := errStatus(err)
			msg := cleanMessage(err.Error())
			switch code {
			case http.StatusServiceUnavailable:
				msg = unavailableMessage
			case http.StatusInternalServerError:
				s.opts.Logger.Error("dashboard request failed", "path", r.URL.Path, "error", err)
				msg = "Something went wrong on our side; the server log has the details."
			}
			s.errorPage(w, r, p, code, msg)
		}
	}
}

// view is what every page template gets.
type view struct {
	Title string
	// Nav is the main navigation's current entry: endpoints or events.
	Nav      string
	Who      string
	Operator bool
	SignedIn bool
	CSRF     string
	Refresh  int // milliseconds; 0: the page does not refresh itself
	Flash    string
	Error    string
	Next     string
	Banners  []string
	// Zone names the time zone of the page's times.
	Zone string

	Endpoints   []endpointView
	Listing     endpointsView
	Endpoint    endpointView
	Deliveries  []deliveryView
	Chart       chartView
	DeadLetters []deadLetterView
	// BlockedKeys are the ordering keys the endpoint's dead letters hold, each with the
	// dead letter that holds it.
	BlockedKeys []deadLetterView
	Event       eventView
	Events      eventsView
	// Self is what the self-service pages show (selfservice.go).
	Self *selfView
	// CanRegister is set when the principal may register endpoints (not a session scoped
	// to one endpoint).
	CanRegister bool
	// FilterTest is the answer of the endpoint page's sample event test (filtertest.go).
	FilterTest *filterTestView
}

func (s *Server) newView(p principal, title string) view {
	v := view{Title: title, Refresh: int(s.opts.RefreshInterval / time.Millisecond), Zone: s.opts.Now().In(s.opts.Location).Format("MST")}
	if p.token.ID != "" {
		v.SignedIn, v.Who, v.Operator, v.CSRF = true, p.who(), p.operator(), s.csrfToken(p)
		v.CanRegister = p.endpoint == ""
	}
	return v
}

// render writes a page, or only its live part when the page polls for it (?fragment=live).
func (s *Server) render(w http.ResponseWriter, r *http.Request, code int, name string, v view) {
	t := pages[name]
	which := "layout"
	if r.URL.Query().Get("fragment") == "live" && t.Lookup("live") != nil {
		which = "live"
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, which, v); err != nil {
		s.opts.Logger.Error("render page", "page", name, "error", err)
		http.Error(w, "could not render the page", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

func (s *Server) errorPage(w http.ResponseWriter, r *http.Request, p principal, code int, msg string) {
	v := s.newView(p, http.StatusText(code))
	v.Error, v.Refresh = msg, 0
	s.render(w, r, code, "error.html", v)
}

func (s *Server) home(_ context.Context, w http.ResponseWriter, r *http.Request, _ principal) error {
	http.Redirect(w, r, "/endpoints", http.StatusSeeOther)
	return nil
}

// flash is the message of a form just submitted, from the redirect's query.
func flash(r *http.Request) string {
	q := r.URL.Query()
	switch q.Get("done") {
	case "replayed":
		return "Replay of " + q.Get("event") + " started: it is being delivered again with the same id."
	case "cancelled":
		return "Delivery of " + q.Get("event") + " cancelled: nothing more is sent."
	case "bulk":
		return "Bulk replay started (" + q.Get("wf") + "): the dead letters are being delivered again."
	case "reset":
		return "The circuit is closed: deliveries resume."
	case "disabled":
		return "The endpoint is disabled: nothing is sent to it until it is enabled."
	case "enabled":
		return "The endpoint is enabled: new deliveries go to it. Replay the dead letters it parked while disabled."
	case "types":
		return "Subscriptions saved: events sent to the tenant from now on reach this endpoint if their type matches."
	}
	return settingsFlashes[q.Get("done")]
}

func withQuery(path string, q url.Values) string {
	if strings.Contains(path, "?") {
		path = path[:strings.Index(path, "?")]
	}
	return path + "?" + q.Encode()
}

// clock is a time of day on the dashboard ("12:03:04"), or "–".
func (s *Server) clock(t time.Time) string {
	if t.IsZero() {
		return "–"
	}
	return t.In(s.opts.Location).Format("15:04:05")
}

// stamp is a date and time on the dashboard.
func (s *Server) stamp(t time.Time) string {
	if t.IsZero() {
		return "–"
	}
	return t.In(s.opts.Location).Format("2006-01-02 15:04:05 MST")
}

// shortDuration rounds d for people: 12ms, 1.2s, 3m0s.
func shortDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "–"
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
