package server

import (
	"context"
	"crypto/hmac"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/duration"
	"github.com/heraldhq/herald/starter"
)

// Portal links. A portal link is a single-use sign-in URL scoped to one tenant (and
// optionally one endpoint of it), for a producer to give its customer the dashboard
// without a token: `herald portal-link` or POST /v1/portal-links mints one, and opening it
// (GET /portal?link=...) starts a dashboard session of that scope.
//
// The link carries its claims (a random id, the scope, the expiry) with an HMAC under the
// tokens file's session key, so it cannot be guessed or altered, and any server sharing
// the file accepts it. Opening it records its id in the tokens file (UsedLinks), under the
// file's lock, so it opens once across every server sharing the file; the record is pruned
// once the link has expired.
const (
	// MaxPortalLinkTTL is the longest a portal link stays valid (before it is opened).
	MaxPortalLinkTTL = 24 * time.Hour
	// DefaultPortalLinkTTL is how long a portal link stays valid unless told otherwise.
	DefaultPortalLinkTTL = time.Hour
	// PortalPath is the dashboard path a portal link opens.
	PortalPath = "/portal"
)

// PortalLink is a minted portal link.
type PortalLink struct {
	// URL signs whoever opens it in, once, until ExpiresAt.
	URL       string    `json:"url"`
	ExpiresAt time.Time `json:"expires_at"`
	Tenant    string    `json:"tenant"`
	// Endpoint, when set, limits the session to this endpoint of the tenant.
	Endpoint string `json:"endpoint,omitempty"`
}

// linkClaims are what a portal link says, signed.
type linkClaims struct {
	ID       string `json:"i"`
	Tenant   string `json:"tn"`
	Endpoint string `json:"ep,omitempty"`
	Expires  int64  `json:"x"`
	// By is the operator token that minted the link through the API; revoking it ends the
	// sessions the link opened. Empty for a link minted from the tokens file.
	By string `json:"b,omitempty"`
}

// usedLink is a portal link opened already, kept in the tokens file until it expires.
type usedLink struct {
	ID        string    `json:"id"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Why a portal link does not open.
var (
	errLinkInvalid = errors.New("this portal link is not valid: it is incomplete or was altered. Copy the whole link, or ask for a new one")
	errLinkExpired = errors.New("this portal link has expired")
	errLinkUsed    = errors.New("this portal link was used already: a link opens once. Ask for a new one (open the portal again from the product that sent you here)")
)

// ValidatePortalLinkTTL checks a portal link's lifetime: positive, at most MaxPortalLinkTTL.
func ValidatePortalLinkTTL(ttl time.Duration) error {
	switch {
	case ttl <= 0:
		return fmt.Errorf("ttl %s: give a positive duration such as 15m or 1h", duration.Duration(ttl))
	case ttl > MaxPortalLinkTTL:
		return fmt.Errorf("ttl %s is longer than a portal link may live (%s): give %s or less; mint links when they are needed rather than in advance", duration.Duration(ttl), duration.Duration(MaxPortalLinkTTL), duration.Duration(MaxPortalLinkTTL))
	}
	return nil
}

// MintPortalLink mints a portal link to the dashboard at baseURL (e.g.
// https://herald.example.com) for tenant, and when endpoint is set for that endpoint only,
// valid for ttl from now. by names the operator token minting it (empty from the CLI). It
// checks the names and the ttl, not that the endpoint exists or belongs to tenant.
func (s *TokenStore) MintPortalLink(baseURL, tenant, endpoint string, ttl time.Duration, now time.Time, by string) (PortalLink, error) {
	if err := herald.ValidateGrantedTenant(tenant); err != nil {
		return PortalLink{}, err
	}
	if endpoint != "" {
		if err := herald.ValidateEndpointID(endpoint); err != nil {
			return PortalLink{}, err
		}
	}
	if err := ValidatePortalLinkTTL(ttl); err != nil {
		return PortalLink{}, err
	}
	base, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" || base.RawQuery != "" || base.Fragment != "" {
		return PortalLink{}, fmt.Errorf("dashboard URL %q: give the base URL people open the dashboard at, such as https://herald.example.com", baseURL)
	}
	key := s.sessionKey()
	if len(key) == 0 { // a new tokens file: write it, with its session key
		if err := s.update(func(*tokensFile) error { return nil }); err != nil {
			return PortalLink{}, err
		}
		key = s.sessionKey()
	}
	expires := now.Add(ttl).Truncate(time.Second)
	b, _ := json.Marshal(linkClaims{ID: randomString(16), Tenant: tenant, Endpoint: endpoint, Expires: expires.Unix(), By: by})
	payload := base64.RawURLEncoding.EncodeToString(b)
	tok := payload + "." + base64.RawURLEncoding.EncodeToString(mac(key, "portal-link", payload))
	return PortalLink{
		URL:       base.String() + PortalPath + "?" + url.Values{"link": {tok}}.Encode(),
		ExpiresAt: expires.UTC(), Tenant: tenant, Endpoint: endpoint,
	}, nil
}

// openPortalLink checks the link token tok at now and marks it used: errLinkInvalid,
// errLinkExpired (wrapped, with when) or errLinkUsed when it does not open.
func (s *TokenStore) openPortalLink(tok string, now time.Time) (linkClaims, error) {
	var c linkClaims
	payload, sig, ok := strings.Cut(strings.TrimSpace(tok), ".")
	key := s.sessionKey()
	if !ok || len(key) == 0 {
		return c, errLinkInvalid
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil || !hmac.Equal(got, mac(key, "portal-link", payload)) {
		return c, errLinkInvalid
	}
	b, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil || json.Unmarshal(b, &c) != nil || c.ID == "" || herald.ValidateGrantedTenant(c.Tenant) != nil {
		return c, errLinkInvalid
	}
	expires := time.Unix(c.Expires, 0)
	if !now.Before(expires) {
		return c, fmt.Errorf("%w at %s", errLinkExpired, expires.UTC().Format("2006-01-02 15:04 MST"))
	}
	err = s.update(func(f *tokensFile) error {
		kept := f.UsedLinks[:0]
		for _, u := range f.UsedLinks {
			if u.ID == c.ID {
				return errLinkUsed
			}
			if now.Before(u.ExpiresAt) { // an expired link cannot open again: forget it
				kept = append(kept, u)
			}
		}
		f.UsedLinks = append(kept, usedLink{ID: c.ID, ExpiresAt: expires.UTC()})
		return nil
	})
	return c, err
}

// portalSession is the principal of a session a portal link opened (d.Link set).
func (s *Server) portalSession(d sessionData, cookie string) (principal, bool) {
	if herald.ValidateGrantedTenant(d.Tenant) != nil {
		return principal{}, false
	}
	if d.TokenID != "" { // minted with a token: revoking it ends the session
		if t, ok := s.opts.Tokens.ByID(d.TokenID); !ok || !t.Operator {
			return principal{}, false
		}
	}
	return principal{token: Token{ID: "link_" + d.Link, Tenant: d.Tenant}, session: cookie, endpoint: d.Endpoint, portal: true}, true
}

// portalSignin opens a portal link: it starts a session of the link's scope and goes to
// its endpoints (or its endpoint's page), or explains why the link does not open.
func (s *Server) portalSignin(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if r.Method == http.MethodHead {
		// Link checkers and previews send HEAD: it must not use the link up.
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		return
	}
	c, err := s.opts.Tokens.openPortalLink(r.URL.Query().Get("link"), s.opts.Now())
	if err != nil {
		s.portalRefused(w, r, err)
		return
	}
	sess, err := s.signSession(sessionData{TokenID: c.By, Link: c.ID, Tenant: c.Tenant, Endpoint: c.Endpoint})
	if err != nil {
		s.errorPage(w, r, principal{}, http.StatusInternalServerError, "Cannot sign in: "+err.Error())
		return
	}
	s.setPortalCookie(w, r, sess)
	next := "/endpoints"
	if c.Endpoint != "" {
		next = "/endpoints/" + url.PathEscape(c.Endpoint)
	}
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// portalRefused answers a portal link that does not open with a page that says why and
// what to do (and, to someone still signed in, where to continue).
func (s *Server) portalRefused(w http.ResponseWriter, r *http.Request, err error) {
	code, title, msg := http.StatusGone, "This link was used already", err.Error()
	switch {
	case errors.Is(err, errLinkInvalid):
		code, title = http.StatusBadRequest, "This link is not valid"
	case errors.Is(err, errLinkExpired):
		title = "This link has expired"
		msg += ": links are valid for a short time. Ask for a new one (open the portal again from the product that sent you here)."
	case errors.Is(err, errLinkUsed):
	default:
		s.opts.Logger.Error("open a portal link", "error", err)
		code, title, msg = http.StatusInternalServerError, "Something went wrong", "Something went wrong on our side; the server log has the details. Try a new link."
	}
	p, _ := s.session(r)
	v := s.newView(p, title)
	v.Refresh, v.Error = 0, strings.ToUpper(msg[:1])+msg[1:]
	s.render(w, r, code, "portal.html", v)
}

// setPortalCookie sets the session cookie of a portal link's session. The link is opened
// from another site (the producer's product), so the cookie cannot be SameSite=Strict,
// which browsers would not send on the redirect that follows: it is Lax (sent on top-level
// navigations, never on other sites' requests; every form also carries a CSRF token).
// When the portal may be framed (Options.FrameAncestors), the cookie must reach the
// frame: SameSite=None, Secure and Partitioned (kept apart per embedding site).
func (s *Server) setPortalCookie(w http.ResponseWriter, r *http.Request, value string) {
	c := &http.Cookie{
		Name: sessionCookie, Value: value, Path: "/", MaxAge: s.sessionMaxAge(),
		Secure: s.secure(r), HttpOnly: true, SameSite: http.SameSiteLaxMode,
	}
	if len(s.opts.FrameAncestors) > 0 {
		c.SameSite, c.Secure, c.Partitioned = http.SameSiteNoneMode, true, true
	}
	http.SetCookie(w, c)
}

// portalLinkRequest is the body of POST /v1/portal-links.
type portalLinkRequest struct {
	Tenant   string `json:"tenant"`
	Endpoint string `json:"endpoint,omitempty"`
	// TTL is how long the link stays valid before it is opened; default 1h, at most 24h.
	TTL *herald.Duration `json:"ttl,omitempty"`
}

func (s *Server) apiPortalLink(ctx context.Context, w http.ResponseWriter, r *http.Request, p principal) (int, any, error) {
	if !p.operator() {
		return 0, nil, fmt.Errorf("%w: minting portal links needs an operator token", errForbidden)
	}
	var req portalLinkRequest
	if err := decode(w, r, maxBody, &req); err != nil {
		return 0, nil, err
	}
	if req.Tenant == "" {
		return 0, nil, fmt.Errorf("%w: tenant is missing: name the tenant whose portal the link opens", starter.ErrInvalid)
	}
	if err := herald.ValidateGrantedTenant(req.Tenant); err != nil {
		return 0, nil, fmt.Errorf("%w: tenant: %v", starter.ErrInvalid, err)
	}
	ttl := DefaultPortalLinkTTL
	if req.TTL != nil {
		ttl = time.Duration(*req.TTL)
	}
	if err := s.checkLinkScope(ctx, req.Tenant, req.Endpoint); err != nil {
		return 0, nil, err
	}
	link, err := s.opts.Tokens.MintPortalLink(s.publicURL(r), req.Tenant, req.Endpoint, ttl, s.opts.Now(), p.token.ID)
	if err != nil {
		return 0, nil, fmt.Errorf("%w: %v", starter.ErrInvalid, err)
	}
	return http.StatusCreated, link, nil
}

// checkLinkScope refuses a link to an endpoint that is not registered or not tenant's.
func (s *Server) checkLinkScope(ctx context.Context, tenant, endpoint string) error {
	if endpoint == "" {
		return nil
	}
	return CheckPortalScope(ctx, s.opts.Starter, tenant, endpoint)
}

// CheckPortalScope checks that endpoint is registered and belongs to tenant, for a portal
// link scoped to it.
func CheckPortalScope(ctx context.Context, st *starter.Client, tenant, endpoint string) error {
	e, err := st.GetEndpoint(ctx, endpoint)
	if err != nil {
		return err
	}
	if got := herald.TenantOrDefault(e.Tenant); got != tenant {
		return fmt.Errorf("%w: endpoint %s belongs to tenant %s, not %s: give its tenant, or another endpoint", starter.ErrInvalid, endpoint, got, tenant)
	}
	return nil
}

// publicURL is the dashboard's base URL for links: Options.PublicURL, or the request's.
func (s *Server) publicURL(r *http.Request) string {
	if s.opts.PublicURL != "" {
		return s.opts.PublicURL
	}
	scheme := "http"
	if r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}
