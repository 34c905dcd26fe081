package server

import (
	"encoding/base64"
	"fmt"
	"html"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// pagesOf pages through GET /v1/endpoints?limit=2&query with token: the ids listed, in
// order, and the cursors of the pages after the first.
func pagesOf(t *testing.T, token, query string) (ids, cursors []string) {
	t.Helper()
	cursor := ""
	for range 100 {
		path := "/v1/endpoints?limit=2&" + query
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		code, out := call(t, "GET", path, token, nil)
		want(t, "list endpoints", code, http.StatusOK, out)
		if n := len(endpointIDs(out)); n > 2 {
			t.Fatalf("a page of limit 2 holds %d endpoints", n)
		}
		ids = append(ids, endpointIDs(out)...)
		if cursor, _ = out["next_cursor"].(string); cursor == "" {
			return ids, cursors
		}
		cursors = append(cursors, cursor)
	}
	t.Fatal("the listing does not end")
	return nil, nil
}

// onceEach reports what is wrong with ids as a listing of exactly want, each once.
func onceEach(ids, want []string) string {
	seen := map[string]int{}
	for _, id := range ids {
		seen[id]++
	}
	for _, id := range want {
		if seen[id] != 1 {
			return fmt.Sprintf("%s listed %d times in %v", id, seen[id], ids)
		}
	}
	if len(ids) != len(want) {
		return fmt.Sprintf("listed %v, want %v", ids, want)
	}
	return ""
}

// tenantWithEndpoints registers n endpoints in a new tenant and returns it, a token of it
// and the endpoints' ids, once its listing shows them all.
func tenantWithEndpoints(t *testing.T, prefix string, n int) (string, string, []string) {
	t.Helper()
	tenant := uniq(prefix)
	tok, _, err := shared.tokens.Create(false, tenant, "test")
	if err != nil {
		t.Fatal(err)
	}
	rcv := newReceiver(t, http.StatusOK)
	var ids []string
	for range n {
		ep := uniq(prefix + "-ep")
		putEndpoint(t, ep, tenant, rcv.URL, 1, nil)
		ids = append(ids, ep)
	}
	eventually(t, "tenant "+tenant+"'s listing to show its endpoints", func() bool {
		_, out := call(t, "GET", "/v1/endpoints?limit=500", tok, nil)
		return len(endpointIDs(out)) == n
	})
	return tenant, tok, ids
}

func TestEndpointListPagesAndItsCursorsStayInTheirListing(t *testing.T) {
	tenant, tok, mine := tenantWithEndpoints(t, "pages", 5)
	other, otherTok, theirs := tenantWithEndpoints(t, "pages-other", 2)

	ids, cursors := pagesOf(t, tok, "")
	if msg := onceEach(ids, mine); msg != "" || len(cursors) != 2 {
		t.Fatalf("tenant token, pages of 2: %s (%d cursors, want 2)", msg, len(cursors))
	}
	opIDs, opCursors := pagesOf(t, shared.operator, "tenant="+tenant)
	if msg := onceEach(opIDs, mine); msg != "" {
		t.Fatalf("operator, tenant=%s: %s", tenant, msg)
	}
	if ids, _ := pagesOf(t, otherTok, ""); onceEach(ids, theirs) != "" {
		t.Fatalf("tenant %s lists %v, want %v", other, ids, theirs)
	}
	// A cursor of the event search, sealed for the same tenant: not one of this listing.
	eventCursor, err := shared.server.sealCursor(principal{token: Token{Tenant: tenant}}, eventCursorKind, []byte(`{"split":"2026-01-01T00:00:00Z"}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		who, token, query string
		code              int
		says              string
	}{
		{"the tenant with its own cursor", tok, "cursor=" + cursors[0], http.StatusOK, ""},
		{"another tenant with the tenant's cursor", otherTok, "cursor=" + cursors[0], http.StatusBadRequest, "start from the first page"},
		{"the operator with the tenant's cursor", shared.operator, "tenant=" + tenant + "&cursor=" + cursors[0], http.StatusBadRequest, "start from the first page"},
		{"the tenant with the operator's cursor", tok, "cursor=" + opCursors[0], http.StatusBadRequest, "start from the first page"},
		{"the operator's cursor of one tenant for another", shared.operator, "tenant=" + other + "&cursor=" + opCursors[0], http.StatusBadRequest, "start from the first page"},
		{"the tenant's cursor with another state", tok, "state=closed&cursor=" + cursors[0], http.StatusBadRequest, "start from the first page"},
		{"an event search cursor", tok, "cursor=" + base64.RawURLEncoding.EncodeToString(eventCursor), http.StatusBadRequest, "start from the first page"},
		{"a made-up cursor", tok, "cursor=" + base64.RawURLEncoding.EncodeToString([]byte(`0123456789abcdef{"split":"2026-01-01T00:00:00Z"}`)), http.StatusBadRequest, "start from the first page"},
		{"a tenant naming another", tok, "tenant=" + other, http.StatusForbidden, "sees only tenant"},
		{"a tenant outside the grammar", shared.operator, "tenant=a%27%20OR%201%3D1", http.StatusBadRequest, "filter tenant"},
		{"an unknown state", tok, "state=broken", http.StatusBadRequest, "filter state"},
		{"limit 0", tok, "limit=0", http.StatusBadRequest, "limit"},
		{"limit over the most", tok, "limit=501", http.StatusBadRequest, "limit"},
	} {
		code, out := call(t, "GET", "/v1/endpoints?"+tc.query, tc.token, nil)
		want(t, tc.who, code, tc.code, out)
		if !strings.Contains(fmt.Sprint(out["error"]), tc.says) {
			t.Errorf("%s: %v, want it to say %q", tc.who, out, tc.says)
		}
	}
	// The state filter: all of them closed, none open.
	if ids, _ := pagesOf(t, tok, "state=closed"); onceEach(ids, mine) != "" {
		t.Errorf("state=closed lists %v, want %v", ids, mine)
	}
	if ids, _ := pagesOf(t, tok, "state=open"); len(ids) != 0 {
		t.Errorf("state=open lists %v, want none", ids)
	}
}

var (
	endpointRow = regexp.MustCompile(`data-endpoint="([^"]+)"`)
	nextLink    = regexp.MustCompile(`href="([^"]+)" id="next-page"`)
	prevLink    = regexp.MustCompile(`href="([^"]+)" id="prev-page"`)
)

func TestDashboardEndpointsPages(t *testing.T) {
	_, tok, mine := tenantWithEndpoints(t, "dash-pages", 5)
	_, _, theirs := tenantWithEndpoints(t, "dash-pages-other", 1)
	c := browserClient(t)
	signIn(t, c, tok)
	var pages [][]string
	var ids []string
	path, prev := "/endpoints?limit=2", ""
	for path != "" {
		code, page := get(t, c, path)
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d\n%s", path, code, page)
		}
		var rows []string
		for _, m := range endpointRow.FindAllStringSubmatch(page, -1) {
			rows = append(rows, m[1])
		}
		pages, ids = append(pages, rows), append(ids, rows...)
		if m := prevLink.FindStringSubmatch(page); len(pages) > 1 && m == nil {
			t.Errorf("page %d has no Previous link", len(pages))
		} else if m != nil {
			prev = html.UnescapeString(m[1])
		}
		path = ""
		if m := nextLink.FindStringSubmatch(page); m != nil {
			path = html.UnescapeString(m[1])
		}
		if len(pages) > 10 {
			t.Fatal("the pages do not end")
		}
	}
	if msg := onceEach(ids, mine); msg != "" || len(pages) != 3 {
		t.Fatalf("pages of 2: %s, in %d pages (want 3)", msg, len(pages))
	}
	if slices.Contains(ids, theirs[0]) {
		t.Fatalf("another tenant's endpoint %s is listed", theirs[0])
	}
	// Previous from the last page shows the page before it again.
	_, page := get(t, c, prev)
	var rows []string
	for _, m := range endpointRow.FindAllStringSubmatch(page, -1) {
		rows = append(rows, m[1])
	}
	if !slices.Equal(rows, pages[1]) {
		t.Errorf("Previous from the last page shows %v, want %v", rows, pages[1])
	}
	// The live refresh of a later page shows that page.
	if _, frag := get(t, c, prev+"&fragment=live"); !strings.Contains(frag, `data-endpoint="`+pages[1][0]+`"`) {
		t.Errorf("the live fragment of page 2 lacks %s", pages[1][0])
	}
}

// TestOperatorFindsAnEventOfAnyTenant: an operator's search by event id, with no tenant,
// finds an event sent to one endpoint of any tenant (by its HeraldEventId: no listing of
// the tenants), and the tenant's search still finds it.
func TestOperatorFindsAnEventOfAnyTenant(t *testing.T) {
	tenant, tok, eps := tenantWithEndpoints(t, "anytenant", 1)
	id := send(t, tok, eps[0], uniq("evt_any"))
	eventually(t, "the operator's search by event id to find it", func() bool {
		got, _ := listEvents(t, shared.operator, "event="+id, 10)
		return slices.Equal(got, []string{id})
	})
	if got, _ := listEvents(t, tok, "event="+id, 10); !slices.Equal(got, []string{id}) {
		t.Errorf("tenant %s's search by event id: %v, want [%s]", tenant, got, id)
	}
}
