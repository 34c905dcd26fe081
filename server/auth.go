package server

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/starter"
)

// principal is who a request speaks for.
type principal struct {
	token   Token
	session string // the session cookie's value, for the CSRF token; empty for the API
	// endpoint limits a portal link's session to one endpoint of its tenant; empty: every
	// endpoint of the tenant.
	endpoint string
	// portal is set for a session opened with a portal link.
	portal bool
	// nonce and expires identify a dashboard session, to end it at sign-out.
	nonce   string
	expires time.Time
}

func (p principal) operator() bool { return p.token.Operator }

// who says whom the principal speaks for, as the dashboard's header shows it.
func (p principal) who() string {
	w := p.token.Who()
	if p.endpoint != "" {
		w += ", endpoint " + p.endpoint
	}
	if p.portal {
		w += " (portal link)"
	}
	return w
}

// canSeeEndpoint reports whether p may see endpoint id of tenant: canSee, and for a
// session scoped to one endpoint, that endpoint only.
func (p principal) canSeeEndpoint(tenant, id string) bool {
	return p.canSee(tenant) && (p.endpoint == "" || p.endpoint == id)
}

// notFoundFor is the error a tenant gets for another tenant's resource: the same words as
// for one that does not exist.
func notFoundFor(kind, id string) error {
	return fmt.Errorf("%w: %s %s does not exist (or your token may not see it)", starter.ErrNotFound, kind, id)
}

// canSee reports whether p may see resources of tenant.
func (p principal) canSee(tenant string) bool {
	if tenant == "" {
		tenant = herald.DefaultTenant
	}
	return p.token.Operator || p.token.Tenant == tenant
}

// bearer authenticates an API request from its Authorization header.
func (s *Server) bearer(r *http.Request) (principal, int, string) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return principal{}, http.StatusUnauthorized, "missing token: send Authorization: Bearer <token> (create one with herald token create)"
	}
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return principal{}, http.StatusUnauthorized, "Authorization must be \"Bearer <token>\""
	}
	t, ok := s.opts.Tokens.Lookup(tok)
	if !ok {
		return principal{}, http.StatusUnauthorized, "the token is unknown or revoked: check it, or create one with herald token create"
	}
	return principal{token: t}, 0, ""
}

// endpointFor returns endpoint id's state if p may see it, else a not-found error.
func (s *Server) endpointFor(ctx context.Context, p principal, id string) (herald.EndpointState, error) {
	st, err := s.opts.Starter.GetEndpoint(ctx, id)
	if err != nil {
		if errors.Is(err, starter.ErrNotFound) {
			return st, notFoundFor("endpoint", id)
		}
		return st, err
	}
	if !p.canSeeEndpoint(st.Tenant, st.ID) {
		return herald.EndpointState{}, notFoundFor("endpoint", id)
	}
	return st, nil
}

// eventTenant is the tenant whose event ids a request names: a tenant token's own; for an
// operator, the "tenant" query parameter (default: the default tenant).
func eventTenant(p principal, r *http.Request) (string, error) {
	if !p.operator() {
		return p.token.Tenant, nil
	}
	t := r.URL.Query().Get("tenant")
	if t == "" {
		return herald.DefaultTenant, nil
	}
	if err := herald.ValidateTenant(t); err != nil {
		return "", fmt.Errorf("%w: %v", starter.ErrInvalid, err)
	}
	return t, nil
}

// pathEndpoint returns the id the request's path names ({id}) and that endpoint's state,
// if p may see it (endpointFor).
func (s *Server) pathEndpoint(ctx context.Context, r *http.Request, p principal) (string, herald.EndpointState, error) {
	id := r.PathValue("id")
	e, err := s.endpointFor(ctx, p, id)
	return id, e, err
}

// eventFor returns the status of tenant's event id if p may see it, else not found: its
// delivery to endpoint for an event sent to the tenant; with endpoint empty, the delivery
// of an event sent to one endpoint (if it is p's) or an event sent to the tenant with its
// deliveries (starter.Report.Fanout). Event ids are scoped to the tenant: another tenant's
// events are never looked up.
func (s *Server) eventFor(ctx context.Context, p principal, tenant, endpoint, id string) (starter.Report, error) {
	rep, err := s.opts.Starter.Status(ctx, starter.Ref{Tenant: tenant, EventID: id, Endpoint: endpoint})
	if err != nil {
		if errors.Is(err, starter.ErrNotFound) {
			return rep, notFoundFor("event", id)
		}
		return rep, err
	}
	// The ref names the tenant that sent the event (its workflow id carries it), so the
	// event is that tenant's wherever its endpoint went since; a session scoped to one
	// endpoint sees that endpoint's deliveries only.
	if p.endpoint != "" && (rep.Fanout != nil || rep.Status.Event.EndpointID != p.endpoint) {
		return starter.Report{}, notFoundFor("event", id)
	}
	return rep, nil
}

// mayReplay refuses a tenant's replay of a delivery whose endpoint has moved to another
// tenant since: the replay would send the event to the other tenant's receiver. For an
// event sent to the tenant, every dead-lettered delivery (what the replay would resend) is
// checked, and one moved endpoint refuses the whole replay.
func (s *Server) mayReplay(ctx context.Context, p principal, rep starter.Report) error {
	if p.operator() {
		return nil
	}
	if rep.Fanout == nil {
		return s.mayReplayTo(ctx, p, rep.Status.Event.ID, rep.Status.Event.EndpointID)
	}
	for _, d := range rep.Fanout.Deliveries {
		if d.Status != nil && d.Status.State == herald.StateDeadLetter {
			if err := s.mayReplayTo(ctx, p, rep.Fanout.ID, d.EndpointID); err != nil {
				return err
			}
		}
	}
	return nil
}

// mayReplayTo is mayReplay for event id's delivery to endpoint.
func (s *Server) mayReplayTo(ctx context.Context, p principal, id, endpoint string) error {
	if endpoint == "" {
		return nil
	}
	if _, err := s.endpointFor(ctx, p, endpoint); err != nil {
		if errors.Is(err, starter.ErrNotFound) {
			return fmt.Errorf("%w: event %s went to endpoint %s, which no longer belongs to tenant %s: ask an operator to replay it", starter.ErrConflict, id, endpoint, p.token.Tenant)
		}
		return err
	}
	return nil
}

// Session cookies. A session is signed, not stored: the cookie holds the token id, an
// expiry and a random nonce, with an HMAC under the tokens file's session key, so every
// server sharing the file accepts it. Revoking the token ends the session; so does signing
// out, which records the nonce in the tokens file until the session's expiry (signout.go).
const (
	sessionCookie = "herald_session"
	signinCookie  = "herald_signin" // the sign-in form's CSRF token (double submit)
)

type sessionData struct {
	TokenID string `json:"t"`
	Expires int64  `json:"e"`
	Nonce   string `json:"n"`
	// Link is the id of the portal link that opened the session, with its scope: Tenant
	// and, when set, Endpoint. TokenID is then the operator token that minted the link, or
	// empty for one minted from the tokens file (herald portal-link).
	Link     string `json:"l,omitempty"`
	Tenant   string `json:"tn,omitempty"`
	Endpoint string `json:"ep,omitempty"`
}

func mac(key []byte, parts ...string) []byte {
	m := hmac.New(sha256.New, key)
	for _, p := range parts {
		m.Write([]byte(p))
		m.Write([]byte{0})
	}
	return m.Sum(nil)
}

func randomString(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// newSession returns a cookie value for token t.
func (s *Server) newSession(t Token) (string, error) {
	return s.signSession(sessionData{TokenID: t.ID})
}

// signSession fills in d's expiry and nonce and returns it signed, as a cookie value.
func (s *Server) signSession(d sessionData) (string, error) {
	key := s.opts.Tokens.sessionKey()
	if len(key) == 0 {
		return "", errors.New("the tokens file has no session key")
	}
	d.Expires, d.Nonce = s.opts.Now().Add(s.opts.SessionTTL).Unix(), randomString(12)
	b, _ := json.Marshal(d)
	payload := base64.RawURLEncoding.EncodeToString(b)
	return payload + "." + base64.RawURLEncoding.EncodeToString(mac(key, "session", payload)), nil
}

// session authenticates a dashboard request from its cookie.
func (s *Server) session(r *http.Request) (principal, bool) {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return principal{}, false
	}
	payload, sig, ok := strings.Cut(c.Value, ".")
	key := s.opts.Tokens.sessionKey()
	if !ok || len(key) == 0 {
		return principal{}, false
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, mac(key, "session", payload)) {
		return principal{}, false
	}
	b, err := base64.RawURLEncoding.DecodeString(payload)
	var d sessionData
	if err != nil || json.Unmarshal(b, &d) != nil || s.opts.Now().Unix() > d.Expires || d.Nonce == "" ||
		s.opts.Tokens.signedOut(d.Nonce) {
		return principal{}, false
	}
	var p principal
	if d.Link != "" {
		if p, ok = s.portalSession(d, c.Value); !ok {
			return principal{}, false
		}
	} else {
		t, ok := s.opts.Tokens.ByID(d.TokenID)
		if !ok {
			return principal{}, false
		}
		p = principal{token: t, session: c.Value}
	}
	p.nonce, p.expires = d.Nonce, time.Unix(d.Expires, 0)
	return p, true
}

// csrfToken is the per-session token every dashboard form carries in a hidden field.
func (s *Server) csrfToken(p principal) string {
	return base64.RawURLEncoding.EncodeToString(mac(s.opts.Tokens.sessionKey(), "csrf", p.session))
}

// checkCSRF reports whether a posted form carries the session's CSRF token.
func (s *Server) checkCSRF(r *http.Request, p principal) bool {
	got, err := base64.RawURLEncoding.DecodeString(r.PostFormValue("csrf"))
	if err != nil || p.session == "" || len(got) != sha256.Size {
		return false
	}
	return hmac.Equal(got, mac(s.opts.Tokens.sessionKey(), "csrf", p.session))
}

func (s *Server) setCookie(w http.ResponseWriter, r *http.Request, name, value string, maxAge int) {
	http.SetCookie(w, &http.Cookie{
		Name: name, Value: value, Path: "/", MaxAge: maxAge,
		Secure: s.secure(r), HttpOnly: true, SameSite: http.SameSiteStrictMode,
	})
}

// sessionMaxAge is the session cookie's lifetime in seconds.
func (s *Server) sessionMaxAge() int { return int(s.opts.SessionTTL / time.Second) }
