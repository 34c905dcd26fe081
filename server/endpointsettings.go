package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/expr"
	"github.com/heraldhq/herald/starter"
)

// The settings page's forms for what herald endpoint put sets beyond the event types: the
// endpoint's filter and transformation (CEL), and how Herald authenticates to its receiver
// (basic auth, OAuth2 client credentials, a client certificate). Each form is one put
// through the starter, checked first by the put's own validators (herald.ValidateExpressions,
// herald.EndpointAuth.Validate), so the dashboard accepts exactly what the API and the CLI
// accept. A refused form changes nothing and shows the settings page again with why, the
// text typed kept, except secrets: a password, a client secret or a private key is never
// written into a page, not even masked.

// settingsEdit is what the settings page's filter, transformation and authentication forms
// show: the endpoint's settings, or what was posted when a form was refused.
type settingsEdit struct {
	// Filter and Transform are the texts in the expression boxes.
	Filter, Transform string
	// FilterError and TransformError say why the expression posted was not saved.
	FilterError, TransformError string
	// Auth is the endpoint's authentication, without its secrets; AuthKind names it.
	Auth     *herald.AuthView
	AuthKind string
	// AuthPart is the authentication form that was refused (authParts), AuthError why.
	AuthPart, AuthError string
	// Username, TokenURL, ClientID and Scopes fill the authentication forms: the
	// endpoint's, or what was posted. Secrets never do.
	Username, TokenURL, ClientID, Scopes string
	// The bounds the forms state.
	MaxFilter, MaxTransform, MaxField, MaxSecret, MaxCertKiB, MaxScopes int
	// Delays are the test event form's choices of when the event goes.
	Delays []delayChoice
}

// newSettingsEdit fills the forms from endpoint e.
func newSettingsEdit(e herald.EndpointState) *settingsEdit {
	ed := &settingsEdit{
		Filter: e.Filter, Transform: e.Transform, Auth: e.Auth, AuthKind: e.Auth.Kind(),
		MaxFilter: expr.MaxFilterBytes, MaxTransform: expr.MaxTransformBytes, MaxField: herald.MaxAuthField,
		MaxSecret: herald.MaxAuthSecret, MaxCertKiB: herald.MaxCertPEM >> 10, MaxScopes: herald.MaxScopes,
		Delays: delayChoices,
	}
	if a := e.Auth; a != nil {
		ed.Username, ed.TokenURL, ed.ClientID, ed.Scopes = a.Username, a.TokenURL, a.ClientID, strings.Join(a.Scopes, " ")
	}
	return ed
}

// settingsFlashes are the messages of the settings forms of this file, by their done value
// (see flash).
var settingsFlashes = map[string]string{
	"filter":            "Filter saved: events sent to the tenant from now on reach this endpoint only when it gives true.",
	"filter-removed":    "Filter removed: every event sent to the tenant whose type matches reaches this endpoint.",
	"transform":         "Transformation saved: the next attempt sends the request it makes.",
	"transform-removed": "Transformation removed: attempts send Herald's envelope.",
	"auth":              "Authentication saved: the next attempt uses it. Its secrets are kept encrypted and never shown again.",
	"auth-removed":      "Authentication removed: requests carry the signature and custom headers only.",
}

// normalizeText is a textarea's value as saved: browsers send line breaks as CRLF; the
// text keeps LF, so that the positions in an expression's errors are lines and columns as
// shown. Leading and trailing space is dropped.
func normalizeText(s string) string {
	return strings.TrimSpace(strings.ReplaceAll(s, "\r\n", "\n"))
}

// expressionForm sets the endpoint's filter or transformation (kind) from the form's
// expression box, or removes it (the remove button, or an empty box). A refused expression
// is shown again, with the error that names its line and column, and nothing changes.
func (s *Server) expressionForm(kind expr.Kind) pageHandler {
	return func(ctx context.Context, w http.ResponseWriter, r *http.Request, p principal) error {
		id, e, err := s.pathEndpoint(ctx, r, p)
		if err != nil {
			return err
		}
		text := normalizeText(r.PostFormValue("expression"))
		if r.PostFormValue("remove") != "" {
			text = ""
		}
		req := herald.PutEndpointRequest{ID: id}
		done := string(kind)
		if kind == expr.KindFilter {
			req.Filter = &text
		} else {
			req.Transform = &text
		}
		if text == "" {
			done += "-removed"
		}
		refuse := func(msg string) error {
			v := s.settingsView(ctx, r, p, id, e)
			msg = "Not saved, nothing changed: " + msg
			if kind == expr.KindFilter {
				v.Self.Edit.Filter, v.Self.Edit.FilterError = text, msg
			} else {
				v.Self.Edit.Transform, v.Self.Edit.TransformError = text, msg
			}
			s.render(w, r, http.StatusBadRequest, "settings.html", v)
			return nil
		}
		if err := herald.ValidateExpressions(req.Filter, req.Transform); err != nil {
			return refuse(err.Error())
		}
		if _, err := s.opts.Starter.PutEndpoint(ctx, req); err != nil {
			if errStatus(err) == http.StatusBadRequest {
				return refuse(cleanMessage(err.Error()))
			}
			return err
		}
		http.Redirect(w, r, withQuery("/endpoints/"+url.PathEscape(id)+"/settings", url.Values{"done": {done}}), http.StatusSeeOther)
		return nil
	}
}

// Parts of an endpoint's authentication, as the settings page's forms name them (the form's
// part field).
const (
	authBasic      = "basic"
	authOAuth2     = "oauth2"
	authClientCert = "client_cert"
	authRemove     = "remove"
)

// authFields are the JSON field names in the put's errors and the labels of the settings
// page's fields, which the page's errors name instead.
var authFields = strings.NewReplacer(
	"auth.basic.username", "Username",
	"auth.basic.password", "Password",
	"auth.oauth2.token_url", "Token URL",
	"auth.oauth2.client_id", "Client id",
	"auth.oauth2.client_secret", "Client secret",
	"auth.oauth2.scopes", "Scopes",
	"auth.client_cert", "Client certificate",
)

// authForm sets one part of the endpoint's authentication (the form's part: basic auth or
// OAuth2 client credentials, which replace each other, or a client certificate, which goes
// with either), or removes all of it (part remove). A refused form is shown again with
// its non-secret fields kept, and nothing changes.
func (s *Server) authForm(ctx context.Context, w http.ResponseWriter, r *http.Request, p principal) error {
	id, e, err := s.pathEndpoint(ctx, r, p)
	if err != nil {
		return err
	}
	part := r.PostFormValue("part")
	switch part {
	case authBasic, authOAuth2, authClientCert, authRemove:
	default:
		return fmt.Errorf("%w: choose what to set: basic auth, OAuth2 client credentials, a client certificate, or remove authentication", starter.ErrInvalid)
	}
	refuse := func(msg string) error {
		v := s.settingsView(ctx, r, p, id, e)
		ed := v.Self.Edit
		ed.AuthPart, ed.AuthError = part, "Not saved, nothing changed: "+authFields.Replace(msg)
		switch part {
		case authBasic:
			ed.Username = strings.TrimSpace(r.PostFormValue("username"))
		case authOAuth2:
			ed.TokenURL, ed.ClientID = strings.TrimSpace(r.PostFormValue("token_url")), strings.TrimSpace(r.PostFormValue("client_id"))
			ed.Scopes = strings.Join(strings.Fields(r.PostFormValue("scopes")), " ")
		}
		s.render(w, r, http.StatusBadRequest, "settings.html", v)
		return nil
	}
	a, err := authFormChange(r, part)
	if err != nil {
		return refuse(err.Error())
	}
	req, done := herald.PutEndpointRequest{ID: id, Auth: &a}, "auth"
	if part == authRemove {
		req, done = herald.PutEndpointRequest{ID: id, ClearAuth: true}, "auth-removed"
	}
	if _, err := s.opts.Starter.PutEndpoint(ctx, req); err != nil {
		if errStatus(err) == http.StatusBadRequest {
			return refuse(cleanMessage(err.Error()))
		}
		return err
	}
	http.Redirect(w, r, withQuery("/endpoints/"+url.PathEscape(id)+"/settings", url.Values{"done": {done}}), http.StatusSeeOther)
	return nil
}

// authFormChange reads the authentication form's fields for part (authBasic, authOAuth2,
// authClientCert; authRemove reads nothing) into the authentication to set, checked by
// herald.EndpointAuth.Validate. An error names the form's fields (authFields) and never
// holds a password, a client secret or a key the form gave.
func authFormChange(r *http.Request, part string) (herald.EndpointAuth, error) {
	var a herald.EndpointAuth
	switch part {
	case authBasic:
		a.Basic = &herald.BasicAuth{Username: strings.TrimSpace(r.PostFormValue("username")), Password: herald.Credential(r.PostFormValue("password"))}
	case authOAuth2:
		a.OAuth2 = &herald.OAuth2Auth{TokenURL: strings.TrimSpace(r.PostFormValue("token_url")), ClientID: strings.TrimSpace(r.PostFormValue("client_id")),
			ClientSecret: herald.Credential(r.PostFormValue("client_secret")), Scopes: strings.Fields(r.PostFormValue("scopes"))}
	case authClientCert:
		cert, err := pemField(r, "cert_pem", "cert_file", "certificate")
		if err != nil {
			return a, errors.New(authFields.Replace(err.Error()))
		}
		key, err := pemField(r, "key_pem", "key_file", "private key")
		if err != nil {
			return a, errors.New(authFields.Replace(err.Error()))
		}
		a.ClientCert = &herald.ClientCert{CertPEM: cert, KeyPEM: herald.Credential(key)}
	case authRemove:
		return a, nil
	default:
		return a, errors.New("choose what to set: basic auth, OAuth2 client credentials, a client certificate, or remove authentication")
	}
	if err := a.Validate(); err != nil {
		return a, errors.New(authFields.Replace(err.Error()))
	}
	return a, nil
}

// pemField reads a PEM block of the client certificate form: pasted in the text field, or
// chosen as a file in the file field (one of the two), at most herald.MaxCertPEM bytes.
func pemField(r *http.Request, text, file, what string) (string, error) {
	pasted := normalizeText(r.PostFormValue(text))
	f, _, err := r.FormFile(file)
	switch {
	case errors.Is(err, http.ErrMissingFile), errors.Is(err, http.ErrNotMultipart):
		if pasted == "" {
			return "", fmt.Errorf("auth.client_cert: give the %s, pasted or as a file", what)
		}
		return pasted, nil
	case err != nil:
		return "", fmt.Errorf("auth.client_cert: the %s file could not be read: %v", what, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, herald.MaxCertPEM+1))
	switch {
	case err != nil:
		return "", fmt.Errorf("auth.client_cert: the %s file could not be read: %v", what, err)
	case len(b) > herald.MaxCertPEM:
		return "", fmt.Errorf("auth.client_cert: the %s file is larger than %d KiB, the limit", what, herald.MaxCertPEM>>10)
	case pasted != "":
		return "", fmt.Errorf("auth.client_cert: give the %s pasted or as a file, not both", what)
	}
	return normalizeText(string(b)), nil
}

// formTooLarge parses a posted form, which page bounds to maxBody, and reports whether it
// was larger than that.
func formTooLarge(r *http.Request) bool {
	var err error
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt == "multipart/form-data" {
		err = r.ParseMultipartForm(maxBody)
	} else {
		err = r.ParseForm()
	}
	var big *http.MaxBytesError
	return errors.As(err, &big)
}

// delayChoice is a choice of when the test event goes.
type delayChoice struct {
	Value, Label string
	d            time.Duration
}

// delayChoices are the test event form's choices, "now" first.
var delayChoices = []delayChoice{
	{"0", "now", 0},
	{"1m", "in 1 minute", time.Minute},
	{"10m", "in 10 minutes", 10 * time.Minute},
	{"1h", "in 1 hour", time.Hour},
	{"24h", "in 24 hours", 24 * time.Hour},
}

// testDelay reads the test event form's choice of when the event goes; none is now.
func testDelay(r *http.Request) (time.Duration, error) {
	v := r.PostFormValue("delay")
	if v == "" {
		return 0, nil
	}
	for _, c := range delayChoices {
		if c.Value == v {
			return c.d, nil
		}
	}
	return 0, fmt.Errorf("%w: choose when the test event goes: now, in 1 minute, 10 minutes, 1 hour or 24 hours", starter.ErrInvalid)
}
