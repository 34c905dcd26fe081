package server

import (
	"context"
	"crypto/hmac"
	"net/http"
	"net/url"
	"strings"
)

// maxNextLength bounds the path a form goes to afterwards (next, back).
const maxNextLength = 2048

// minCSRFLength is the shortest CSRF token a form may carry: the sign-in form's tokens
// are 24 random bytes, 32 characters of base64.
const minCSRFLength = 32

// safeNext returns next when it is a path on this site, else def. A browser reads a
// Location header by the WHATWG URL rules, more loosely than Go: it drops tabs and
// newlines anywhere, reads '\' as '/', and takes "//host", "/\host" or "https:host" to
// another site. So next must match a strict grammar (RFC 3986 terms):
//
//	next = "/" [ segment-nz *( "/" segment ) ] [ "?" query ]
//
// It starts with exactly one '/'; it holds only letters, digits, "-._~!$&'()*+,;=:@/?"
// and %XX escapes (no space, control character, '\', '#' or non-ASCII byte); it is at
// most maxNextLength bytes long; and its path, unescaped once, still does not start with
// "//" and holds no '\' or control character, for anything that unescapes it again.
func safeNext(next, def string) string {
	if isLocalPath(next) {
		return next
	}
	return def
}

// isLocalPath reports whether p matches safeNext's grammar.
func isLocalPath(p string) bool {
	if p == "" || len(p) > maxNextLength || p[0] != '/' || (len(p) > 1 && (p[1] == '/' || p[1] == '\\')) {
		return false
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("-._~!$&'()*+,;=:@/?", c) >= 0:
		case c == '%':
			if i+2 >= len(p) || !isHex(p[i+1]) || !isHex(p[i+2]) {
				return false
			}
		default:
			return false
		}
	}
	path, _, _ := strings.Cut(p, "?")
	dec, err := url.PathUnescape(path)
	if err != nil || strings.HasPrefix(dec, "//") || strings.HasPrefix(dec, "/\\") {
		return false
	}
	for i := 0; i < len(dec); i++ {
		if c := dec[i]; c < 0x20 || c == 0x7f || c == '\\' {
			return false
		}
	}
	return true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

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
	if err := s.opts.Tokens.endSession(p.nonce, p.expires, s.opts.Now()); err != nil {
		return err
	}
	s.setCookie(w, r, sessionCookie, "", -1)
	http.Redirect(w, r, "/signin", http.StatusSeeOther)
	return nil
}
