package server

import (
	"bytes"
	"html"
	"mime/multipart"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/expr"
	"github.com/heraldhq/herald/internal/testkit/check"
	"github.com/heraldhq/herald/internal/testpki"
)

// postMultipart posts a multipart dashboard form with c, with the CSRF token of the page
// at from (unless form sets csrf), and files as file fields.
func postMultipart(t *testing.T, c *http.Client, from, path string, form url.Values, files map[string][]byte) (int, string) {
	t.Helper()
	if form.Get("csrf") == "" {
		_, page := get(t, c, from)
		m := csrfField.FindStringSubmatch(page)
		if m == nil {
			t.Fatalf("%s has no csrf field", from)
		}
		form.Set("csrf", m[1])
	}
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for k, vs := range form {
		for _, v := range vs {
			if err := mw.WriteField(k, v); err != nil {
				t.Fatal(err)
			}
		}
	}
	for name, b := range files {
		fw, err := mw.CreateFormFile(name, name+".pem")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = fw.Write(b)
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, shared.http.URL+path, &body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, b := check.Do(t, c, req)
	return resp.StatusCode, string(b)
}

// postAs posts a dashboard form with c as it is, CSRF field included or not.
func postAs(t *testing.T, c *http.Client, path string, form url.Values) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, shared.http.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, _ := check.Do(t, c, req)
	return resp.StatusCode
}

// endpointJSON is the endpoint as the API shows it to the operator.
func endpointJSON(t *testing.T, id string) map[string]any {
	t.Helper()
	code, st := call(t, "GET", "/v1/endpoints/"+id, shared.operator, nil)
	want(t, "get endpoint "+id, code, http.StatusOK, st)
	return st
}

// sameVersion fails the test if endpoint id is no longer at version.
func sameVersion(t *testing.T, what, id string, version any) {
	t.Helper()
	if st := endpointJSON(t, id); st["version"] != version {
		t.Errorf("%s changed endpoint %s: version %v, was %v", what, id, st["version"], version)
	}
}

// TestSettingsExpressionForms: the settings page sets and removes an endpoint's filter and
// transformation, as the API then shows; a refused expression is shown again with its
// line and column and the text kept, and changes nothing; so does a post without the CSRF
// token or to another tenant's endpoint.
func TestSettingsExpressionForms(t *testing.T) {
	t.Parallel()
	ep, _, c := endpointSession(t, "set-expr", "acme", shared.acme)
	settings := "/endpoints/" + ep + "/settings"

	code, page := postForm(t, c, settings, "/endpoints/"+ep+"/filter", url.Values{"expression": {" data.amount > 100\r\n  && type == \"order.paid\" "}})
	if code != http.StatusSeeOther {
		t.Fatalf("save a filter: status %d, want 303:\n%s", code, page)
	}
	transform := "{\"body\": {\"text\": \"Order \" + string(data.order_id)}}"
	if code, page := postForm(t, c, settings, "/endpoints/"+ep+"/transform", url.Values{"expression": {transform}}); code != http.StatusSeeOther {
		t.Fatalf("save a transformation: status %d, want 303:\n%s", code, page)
	}
	st := endpointJSON(t, ep)
	if st["filter"] != "data.amount > 100\n  && type == \"order.paid\"" || st["transform"] != transform {
		t.Fatalf("after the forms the API shows filter %q, transform %q", st["filter"], st["transform"])
	}
	_, page = get(t, c, settings+"?done=filter")
	if !strings.Contains(page, "Filter saved") || !strings.Contains(html.UnescapeString(page), "data.amount > 100\n  && type") {
		t.Fatalf("the settings page does not show the saved filter and its flash:\n%s", page)
	}

	version := st["version"]
	for _, tc := range []struct {
		name, path, text, says string
	}{
		{"broken filter", "filter", "data.amount >", "line 1, column 14"},
		{"filter that is no bool", "filter", "data.amount + 1 == 2 ? 1 : 2", "must give a bool"},
		{"broken transformation", "transform", "{\"body\":\n  data.x +}", "line 2, column"},
		{"long filter", "filter", "true || " + strings.Repeat("true || ", expr.MaxFilterBytes/8) + "true", "the limit is 2048"},
	} {
		code, page := postForm(t, c, settings, "/endpoints/"+ep+"/"+tc.path, url.Values{"expression": {tc.text}})
		page = html.UnescapeString(page)
		if code != http.StatusBadRequest || !strings.Contains(page, tc.says) || !strings.Contains(page, "nothing changed") {
			t.Errorf("%s: status %d, want 400 saying %q and that nothing changed:\n%s", tc.name, code, tc.says, page)
		}
		if !strings.Contains(page, ">"+tc.text+"</textarea>") {
			t.Errorf("%s: the refused text is not kept in its box", tc.name)
		}
		sameVersion(t, tc.name, ep, version)
	}
	// Without the page's CSRF token, and from another tenant: refused, nothing changes.
	if code := postAs(t, c, "/endpoints/"+ep+"/filter", url.Values{"expression": {"true"}, "csrf": {"forged"}}); code != http.StatusForbidden {
		t.Errorf("filter with a forged CSRF token: status %d, want 403", code)
	}
	gc := browserClient(t)
	signIn(t, gc, shared.globex)
	if code, _ := postForm(t, gc, "/endpoints", "/endpoints/"+ep+"/filter", url.Values{"expression": {"true"}}); code != http.StatusNotFound {
		t.Errorf("globex sets acme's filter: status %d, want 404", code)
	}
	sameVersion(t, "the refused posts", ep, version)

	// Remove: the button, or an empty box.
	if code, _ := postForm(t, c, settings, "/endpoints/"+ep+"/filter", url.Values{"expression": {"data.x"}, "remove": {"1"}}); code != http.StatusSeeOther {
		t.Fatalf("remove the filter: status %d", code)
	}
	if code, _ := postForm(t, c, settings, "/endpoints/"+ep+"/transform", url.Values{"expression": {" \r\n"}}); code != http.StatusSeeOther {
		t.Fatalf("empty the transformation: status %d", code)
	}
	if st := endpointJSON(t, ep); st["filter"] != nil || st["transform"] != nil {
		t.Fatalf("after removing both the API shows filter %v, transform %v", st["filter"], st["transform"])
	}
}

// TestSettingsAuthForms: the settings page sets basic auth, OAuth2 client credentials and
// a client certificate (pasted or as files), and removes them; the API shows each; bad
// input, a missing CSRF token, another tenant and a form past the size limit change
// nothing; no password, client secret or private key appears in any page, refused forms
// included.
func TestSettingsAuthForms(t *testing.T) {
	t.Parallel()
	ep, _, c := endpointSession(t, "set-auth", "acme", shared.acme)
	settings := "/endpoints/" + ep + "/settings"
	auth := "/endpoints/" + ep + "/auth"
	password, password2, clientSecret := uniq("pw-sentinel"), uniq("pw2-sentinel"), uniq("cs-sentinel")
	certPEM, keyPEM := testpki.SelfSignedClientCert(t, "herald")
	_, otherKey := testpki.SelfSignedClientCert(t, "herald")
	keyBody := strings.Split(string(keyPEM), "\n")[1] // a line of the key's base64
	var pages []string
	keep := func(page string) { pages = append(pages, page) }
	authOf := func() map[string]any {
		t.Helper()
		a, _ := endpointJSON(t, ep)["auth"].(map[string]any)
		return a
	}

	code, page := postForm(t, c, settings, auth, url.Values{"part": {"basic"}, "username": {"herald"}, "password": {password}})
	keep(page)
	if code != http.StatusSeeOther {
		t.Fatalf("save basic auth: status %d:\n%s", code, page)
	}
	if a := authOf(); a["scheme"] != "basic" || a["username"] != "herald" || a["secret_set"] != true {
		t.Fatalf("after basic auth the API shows %v", a)
	}
	version := endpointJSON(t, ep)["version"]

	// Refused: each says what to fix in the form's words and keeps the non-secret fields.
	for _, tc := range []struct {
		name string
		form url.Values
		says string
	}{
		{"username with ':'", url.Values{"part": {"basic"}, "username": {"her:ald"}, "password": {password2}}, "Username: give 1 to 256 printable characters without ':'"},
		{"no password", url.Values{"part": {"basic"}, "username": {"herald2"}}, "Password: give 1 to 1024"},
		{"token URL not http", url.Values{"part": {"oauth2"}, "token_url": {"ftp://127.0.0.1/token"}, "client_id": {"herald"}, "client_secret": {password2}}, "Token URL: give an absolute http(s) URL"},
		{"no client secret", url.Values{"part": {"oauth2"}, "token_url": {"http://127.0.0.1:9/token"}, "client_id": {"herald"}}, "Client secret: give 1 to 1024"},
		{"a scope with a quote", url.Values{"part": {"oauth2"}, "token_url": {"http://127.0.0.1:9/token"}, "client_id": {"herald"}, "client_secret": {password2}, "scopes": {`a"b`}}, "Scopes:"},
		{"key of another certificate", url.Values{"part": {"client_cert"}, "cert_pem": {string(certPEM)}, "key_pem": {string(otherKey)}}, "Client certificate: give a PEM certificate and its PEM private key"},
		{"no key", url.Values{"part": {"client_cert"}, "cert_pem": {string(certPEM)}}, "Client certificate: give the private key"},
		{"unknown part", url.Values{"part": {"digest"}}, "choose what to set"},
	} {
		code, page := postForm(t, c, settings, auth, tc.form)
		keep(page)
		page = html.UnescapeString(page)
		if code != http.StatusBadRequest || !strings.Contains(page, tc.says) {
			t.Errorf("%s: status %d, want 400 saying %q:\n%s", tc.name, code, tc.says, page)
		}
		if u := tc.form.Get("username"); u != "" && !strings.Contains(page, `value="`+u+`"`) {
			t.Errorf("%s: the username typed is not kept", tc.name)
		}
		sameVersion(t, tc.name, ep, version)
	}
	code, page = postMultipart(t, c, settings, auth, url.Values{"part": {"client_cert"}, "cert_pem": {string(certPEM)}, "key_pem": {string(keyPEM)}},
		map[string][]byte{"cert_file": certPEM})
	keep(page)
	if code != http.StatusBadRequest || !strings.Contains(page, "pasted or as a file, not both") {
		t.Errorf("certificate pasted and as a file: status %d, want 400 saying not both", code)
	}
	code, page = postMultipart(t, c, settings, auth, url.Values{"part": {"client_cert"}}, map[string][]byte{"cert_file": certPEM, "key_file": bytes.Repeat([]byte("k"), maxBody)})
	keep(page)
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(page, "larger than 64 KiB") {
		t.Errorf("a form past the limit: status %d, want 413 naming the limit:\n%s", code, page)
	}
	if code := postAs(t, c, auth, url.Values{"part": {"remove"}}); code != http.StatusForbidden {
		t.Errorf("remove without a CSRF token: status %d, want 403", code)
	}
	gc := browserClient(t)
	signIn(t, gc, shared.globex)
	if code, _ := postForm(t, gc, "/endpoints", auth, url.Values{"part": {"remove"}}); code != http.StatusNotFound {
		t.Errorf("globex removes acme's auth: status %d, want 404", code)
	}
	sameVersion(t, "the refused forms", ep, version)

	// OAuth2 replaces basic auth; a client certificate (as files) goes with it.
	code, page = postForm(t, c, settings, auth, url.Values{"part": {"oauth2"}, "token_url": {"http://127.0.0.1:9/token"}, "client_id": {"herald"},
		"client_secret": {clientSecret}, "scopes": {"webhooks:write  read"}})
	keep(page)
	if code != http.StatusSeeOther {
		t.Fatalf("save OAuth2: status %d:\n%s", code, page)
	}
	code, page = postMultipart(t, c, settings, auth, url.Values{"part": {"client_cert"}}, map[string][]byte{"cert_file": certPEM, "key_file": keyPEM})
	keep(page)
	if code != http.StatusSeeOther {
		t.Fatalf("save a client certificate from files: status %d:\n%s", code, page)
	}
	a := authOf()
	if a["scheme"] != "oauth2" || a["client_id"] != "herald" || a["client_cert"] != true || a["secret_set"] != true {
		t.Fatalf("after OAuth2 and a certificate the API shows %v", a)
	}
	if sc, _ := a["scopes"].([]any); len(sc) != 2 || sc[0] != "webhooks:write" || sc[1] != "read" {
		t.Fatalf("scopes %v, want [webhooks:write read]", a["scopes"])
	}
	_, page = get(t, c, settings+"?done=auth")
	keep(page)
	if page := html.UnescapeString(page); !strings.Contains(page, "Authentication saved") || !strings.Contains(page, `id="auth-now">oauth2 client credentials + client certificate<`) ||
		!strings.Contains(page, "secret set") || !strings.Contains(page, "client certificate set") {
		t.Errorf("the settings page does not show the authentication saved:\n%s", page)
	}
	for _, path := range []string{"/endpoints/" + ep, "/endpoints", "/events?endpoint=" + ep} {
		_, page := get(t, c, path)
		keep(page)
	}
	_, raw := callRaw(t, "GET", "/v1/endpoints/"+ep, shared.acme, nil)
	keep(string(raw))
	for i, page := range pages {
		for name, secret := range map[string]string{"password": password, "refused password": password2, "client secret": clientSecret, "private key": keyBody} {
			if strings.Contains(page, secret) || strings.Contains(page, html.EscapeString(secret)) {
				t.Errorf("page %d shows the %s", i, name)
			}
		}
	}

	if code, _ := postForm(t, c, settings, auth, url.Values{"part": {"remove"}}); code != http.StatusSeeOther {
		t.Fatalf("remove authentication: status %d", code)
	}
	if a := authOf(); a != nil {
		t.Fatalf("after removing, the API shows auth %v", a)
	}
	if _, page := get(t, c, settings); !strings.Contains(page, `id="auth-now">none<`) || strings.Contains(page, `id="remove-auth"`) {
		t.Errorf("the settings page does not show that there is no authentication")
	}
}

// TestSettingsTestEventLater: the test event form schedules the event for the delay chosen
// (it shows as scheduled) and refuses a delay it does not offer.
func TestSettingsTestEventLater(t *testing.T) {
	t.Parallel()
	ep, _, c := endpointSession(t, "test-later", "acme", shared.acme)
	settings := "/endpoints/" + ep + "/settings"
	if code, page := postForm(t, c, settings, "/endpoints/"+ep+"/test", url.Values{"delay": {"2h"}}); code != http.StatusBadRequest || !strings.Contains(page, "choose when the test event goes") {
		t.Fatalf("test event with a delay not offered: status %d, want 400:\n%s", code, page)
	}
	_, page := get(t, c, settings)
	m := csrfField.FindStringSubmatch(page)
	req, _ := http.NewRequest(http.MethodPost, shared.http.URL+"/endpoints/"+ep+"/test", strings.NewReader(url.Values{"csrf": {m[1]}, "delay": {"10m"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, _ := check.Do(t, c, req)
	loc, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusSeeOther || err != nil {
		t.Fatalf("test event in 10 minutes: status %d, location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	ev, at := loc.Query().Get("event"), loc.Query().Get("at")
	when, err := time.Parse(time.RFC3339, at)
	if err != nil || when.Before(time.Now().Add(9*time.Minute)) || when.After(time.Now().Add(11*time.Minute)) {
		t.Fatalf("scheduled at %q (%v), want about 10 minutes from now", at, err)
	}
	if _, page := get(t, c, loc.String()); !strings.Contains(page, "scheduled for") {
		t.Errorf("the settings page's flash does not say the test event is scheduled:\n%s", page)
	}
	waitState(t, ev, string(herald.StateScheduled))
	code, out := call(t, "POST", "/v1/events/"+ev+"/cancel", shared.acme, map[string]any{"reason": "test over"})
	want(t, "cancel the scheduled test event", code, http.StatusOK, out)
}

// TestSettingsFormsPortalScope: a portal session for one endpoint sets that endpoint's
// filter, and cannot change another endpoint of its tenant.
func TestSettingsFormsPortalScope(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t, http.StatusOK)
	one, other := uniq("set-pl-one"), uniq("set-pl-other")
	putEndpoint(t, one, "acme", rcv.URL, 1, nil)
	putEndpoint(t, other, "acme", rcv.URL, 1, nil)
	c, code, _, _ := openLink(t, shared.http.URL, mintLink(t, map[string]any{"tenant": "acme", "endpoint": one}))
	if code != http.StatusSeeOther {
		t.Fatalf("open the portal link: status %d", code)
	}
	settings := "/endpoints/" + one + "/settings"
	if code, page := postForm(t, c, settings, "/endpoints/"+one+"/filter", url.Values{"expression": {`type == "order.paid"`}}); code != http.StatusSeeOther {
		t.Fatalf("the portal sets its endpoint's filter: status %d:\n%s", code, page)
	}
	if st := endpointJSON(t, one); st["filter"] != `type == "order.paid"` {
		t.Fatalf("the API shows filter %v", st["filter"])
	}
	version := endpointJSON(t, other)["version"]
	for _, tc := range []struct {
		path string
		form url.Values
	}{
		{"filter", url.Values{"expression": {"true"}}},
		{"transform", url.Values{"expression": {`{"body": "x"}`}}},
		{"auth", url.Values{"part": {"basic"}, "username": {"u"}, "password": {"p"}}},
	} {
		if code, _ := postForm(t, c, settings, "/endpoints/"+other+"/"+tc.path, tc.form); code != http.StatusNotFound {
			t.Errorf("the portal of %s posts %s of %s: status %d, want 404", one, tc.path, other, code)
		}
	}
	sameVersion(t, "the portal's posts to another endpoint", other, version)
}

// FuzzAuthFormChange: whatever the authentication form holds, what it reads is checked
// (a part set is the part asked for, its secret kept as typed) and its error never holds the
// password, client secret or key given.
func FuzzAuthFormChange(f *testing.F) {
	cert, key := testpki.SelfSignedClientCert(f, "herald")
	f.Add("basic", "herald", "s3cret", "", "", "", "", "")
	f.Add("basic", "her:ald", "s3cret", "", "", "", "", "")
	f.Add("oauth2", "", "s3cret", "http://127.0.0.1:9/token", "herald", "", "webhooks:write read", "")
	f.Add("oauth2", "", "s3c\x00ret", "ftp://x", "herald", "", `a"b`, "")
	f.Add("client_cert", "", "", "", "", string(cert), "", string(key))
	f.Add("client_cert", "", "", "", "", string(cert), "", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
	f.Add("remove", "", "", "", "", "", "", "")
	f.Fuzz(func(t *testing.T, part, username, secret, tokenURL, clientID, certPEM, scopes, keyPEM string) {
		const mark = "S3CR3T-"
		form := url.Values{"username": {username}, "password": {mark + secret}, "token_url": {tokenURL}, "client_id": {clientID},
			"client_secret": {mark + secret}, "scopes": {scopes}, "cert_pem": {certPEM}, "key_pem": {mark + keyPEM}}
		r, err := http.NewRequest(http.MethodPost, "/", strings.NewReader(form.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		a, err := authFormChange(r, part)
		if err != nil {
			if !strings.Contains(username+tokenURL+clientID+certPEM+scopes, "S3CR3T") && strings.Contains(err.Error(), "S3CR3T") {
				t.Fatalf("part %q: the error shows a secret: %v", part, err)
			}
			return
		}
		switch {
		case part == authBasic && (a.Basic == nil || a.OAuth2 != nil || a.ClientCert != nil || string(a.Basic.Password) != mark+secret),
			part == authOAuth2 && (a.OAuth2 == nil || a.Basic != nil || a.ClientCert != nil || string(a.OAuth2.ClientSecret) != mark+secret),
			part == authClientCert && (a.ClientCert == nil || a.Basic != nil || a.OAuth2 != nil),
			part == authRemove && !a.IsZero():
			t.Fatalf("part %q read as %+v", part, a.View())
		case part != authBasic && part != authOAuth2 && part != authClientCert && part != authRemove:
			t.Fatalf("unknown part %q accepted", part)
		}
		if err := a.Validate(); err != nil {
			t.Fatalf("part %q accepted what the put refuses: %v", part, err)
		}
	})
}
