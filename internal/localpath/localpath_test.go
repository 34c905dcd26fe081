package localpath

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// browserBase is the page a browser resolves a Location header against in these tests.
var browserBase = &url.URL{Scheme: "http", Host: "herald.example", Path: "/signin"}

// browserResolve resolves a Location header the way a browser does by the WHATWG URL
// standard, against base (an http URL): strip leading and trailing C0 controls and spaces,
// remove every ASCII tab and newline, read '\' as '/' (http is a special scheme), then
// parse and resolve. It is stricter than a browser where they differ: any scheme at all is
// an error, so "https:evil.example" (another site to a browser) never passes as a path.
func browserResolve(base *url.URL, loc string) (*url.URL, bool) {
	s := strings.TrimFunc(loc, func(r rune) bool { return r <= 0x20 })
	s = strings.Map(func(r rune) rune {
		switch r {
		case '\t', '\n', '\r':
			return -1
		case '\\':
			return '/'
		}
		return r
	}, s)
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "" || u.Opaque != "" || u.User != nil || u.Host != "" {
		return nil, false
	}
	return base.ResolveReference(u), true
}

// staysHome reports whether a browser sent to Location loc stays on herald.example.
func staysHome(loc string) bool {
	u, ok := browserResolve(browserBase, loc)
	return ok && u.Scheme == "http" && u.Host == "herald.example" && u.User == nil
}

// redirectBypasses are the ways out a redirect check must close: the reported form, and
// the usual bypasses (scheme-relative, backslash, tab and newline, encoded, control
// characters, userinfo, schemes).
var redirectBypasses = []string{
	"/\t/evil.example", "/%09/evil.example", "/%2509/evil.example", "//evil.example", "///evil.example",
	"/\\evil.example", "\\\\evil.example", "/\\/evil.example", "\\/evil.example", "/\n/evil.example",
	"/\r\n/evil.example", " //evil.example", "\t//evil.example", "\x00//evil.example", "/\x00/evil.example",
	"/%2F/evil.example", "/%2f%2fevil.example", "/%5Cevil.example", "/%5c/evil.example", "/%0a/evil.example",
	"https://evil.example", "http:evil.example", "https:evil.example", "http:/evil.example", "http:\\\\evil.example",
	"javascript:alert(1)", "data:text/html,x", "//user@evil.example", "/@evil.example/..//evil.example",
	"//evil.example@herald.example", "/\u3000/evil.example", "/\uff0f\uff0fevil.example", "%2F%2Fevil.example",
	"/ /evil.example", "/#//evil.example", "/.//evil.example", "/..//evil.example", "/x\x7f/y",
	"evil.example", "", strings.Repeat("/a", MaxLength),
}

func TestRefusesEveryWayOut(t *testing.T) {
	for _, in := range redirectBypasses {
		got := Or(in, "/endpoints")
		if !staysHome(got) {
			t.Errorf("Or(%q) = %q: a browser leaves herald.example", in, got)
		}
	}
	for _, in := range []string{"/%09/evil.example", "/\t/evil.example", "//evil.example", "/\\evil.example", "/%2F/evil.example",
		"/%5Cevil.example", "https:evil.example", "/\n/evil.example", "/\x00/evil.example", "/a b", "/a#b", "/\u00e9"} {
		if got := Or(in, "/endpoints"); got != "/endpoints" {
			t.Errorf("Or(%q) = %q, want the default /endpoints", in, got)
		}
	}
	for _, ok := range []string{"/endpoints", "/endpoints/acme-prod", "/events?type=order.paid&page=2",
		"/endpoints/a%20b", "/events/evt_1?tenant=acme", "/", "/@x", "/a:b"} {
		if got := Or(ok, "/endpoints"); got != ok {
			t.Errorf("Or(%q) = %q, want it kept", ok, got)
		}
	}
}

// redirectTo is the Location http.Redirect answers for Or(next, "/endpoints").
func redirectTo(next string) string {
	rec := httptest.NewRecorder()
	http.Redirect(rec, httptest.NewRequest(http.MethodPost, "http://herald.example/signin", nil), Or(next, "/endpoints"), http.StatusSeeOther)
	return rec.Header().Get("Location")
}

// FuzzOr: whatever next is, the path Or returns, and the Location header
// http.Redirect makes of it, keep a browser on herald.example.
func FuzzOr(f *testing.F) {
	for _, s := range redirectBypasses {
		f.Add(s)
	}
	f.Add("/endpoints?next=/%09/evil.example")
	f.Fuzz(func(t *testing.T, next string) {
		got := Or(next, "/endpoints")
		if !staysHome(got) {
			t.Fatalf("Or(%q) = %q: a browser leaves herald.example", next, got)
		}
		if loc := redirectTo(next); !staysHome(loc) {
			t.Fatalf("Or(%q) redirects to Location %q: a browser leaves herald.example", next, loc)
		}
		if got != "/endpoints" && !Valid(got) {
			t.Fatalf("Or(%q) = %q, outside its grammar", next, got)
		}
	})
}

// TestOracleSeesTheWayOut: the browser model the fuzzer trusts takes each reported form
// to another site, so a check that let one through would fail.
func TestOracleSeesTheWayOut(t *testing.T) {
	for _, loc := range []string{"/\t/evil.example", "//evil.example", "/\\evil.example", " //evil.example",
		"https:evil.example", "http://evil.example/", "\\\\evil.example"} {
		if staysHome(loc) {
			t.Errorf("the browser model keeps Location %q on herald.example", loc)
		}
	}
}
