package server

import (
	"context"
	"crypto/hmac"
	"net/http"

	"github.com/heraldhq/herald/internal/localpath"
)

// minCSRFLength is the shortest CSRF token a form may carry: the sign-in form's tokens
// are 24 random bytes, 32 characters of base64.
const minCSRFLength = 32

// safeNext returns next when it is a path on this site (localpath.Valid), else def: what
// a form goes to afterwards (next, back) comes from outside.
func safeNext(next, def string) string { return localpath.Or(next, def) }

func (s *Server) signinForm(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.session(r); ok {
		http.Redirect(w, r, safeNext(r.URL.Query().Get("next"), "/endpoints"), http.StatusSeeOther)
		return
	}
	s.showSignin(w, r, http.StatusOK, "")
}

func (s *Server) showSignin(w http.ResponseWriter, r *http.Request, code int, msg string) {
	tok := randomString(24)
	s.setCookie(w, r, signinCookie, tok, 3600)
	v := s.newView(principal{}, "Sign in")
	v.CSRF, v.Error, v.Refresh = tok, msg, 0
	v.Next = safeNext(r.FormValue("next"), "/endpoints")
	s.render(w, r, code, "signin.html", v)
}

// signinCSRF reports whether the sign-in form carries its CSRF token (double submit: the
// cookie showSignin set and the form's hidden field are equal), refusing empty or short ones.
func signinCSRF(r *http.Request) bool {
	c, err := r.Cookie(signinCookie)
	if err != nil || len(c.Value) < minCSRFLength {
		return false
	}
	return hmac.Equal([]byte(c.Value), []byte(r.PostFormValue("csrf")))
}

func (s *Server) signin(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	if !signinCSRF(r) {
		s.showSignin(w, r, http.StatusForbidden, "This sign-in form expired or did not come from this page (CSRF check failed): try again.")
		return
	}
	t, ok := s.opts.Tokens.Lookup(r.PostFormValue("token"))
	if !ok {
		s.showSignin(w, r, http.StatusUnauthorized, "That token is unknown or revoked. Paste the token `herald token create` printed (it starts with hrld_).")
		return
	}
	sess, err := s.newSession(t)
	if err != nil {
		s.showSignin(w, r, http.StatusInternalServerError, "Cannot sign in: "+err.Error())
		return
	}
	s.setCookie(w, r, sessionCookie, sess, s.sessionMaxAge())
	s.setCookie(w, r, signinCookie, "", -1)
	http.Redirect(w, r, safeNext(r.PostFormValue("next"), "/endpoints"), http.StatusSeeOther)
}

// signout ends the session on the server (the tokens file remembers it as signed out
// until it would have expired: a copy of the cookie no longer opens it) and clears the cookie.
func (s *Server) signout(_ context.Context, w http.ResponseWriter, r *http.Request, p principal) error {
	if err := s.opts.Tokens.endSession(p.nonce, p.token.ID, p.expires, s.opts.Now()); err != nil {
		return err
	}
	s.setCookie(w, r, sessionCookie, "", -1)
	http.Redirect(w, r, "/signin", http.StatusSeeOther)
	return nil
}
