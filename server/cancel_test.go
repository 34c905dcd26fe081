package server

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestCancelScheduled: a send with deliver_at answers its time and shows as scheduled; a
// tenant token cannot see, nor cancel, another tenant's event (404); its own tenant's
// token cancels it with a reason, and the status shows who and why; a second cancel is a
// conflict; a deliver_at past the bounds is refused naming it.
func TestCancelScheduled(t *testing.T) {
	rcv := newReceiver(t, http.StatusOK)
	ep := uniq("sched")
	putEndpoint(t, ep, "acme", rcv.URL, 1, nil)
	at := time.Now().Add(time.Hour).UTC().Truncate(time.Second).Format(time.RFC3339)
	code, out := call(t, "POST", "/v1/events", shared.acme, map[string]any{"endpoint_id": ep, "type": "t", "data": 1, "deliver_at": at})
	want(t, "scheduled send", code, http.StatusAccepted, out)
	id, _ := out["id"].(string)
	if out["deliver_at"] != at {
		t.Fatalf("send answers %v, want deliver_at %s", out, at)
	}
	waitState(t, id, "scheduled")
	_, st := call(t, "GET", "/v1/events/"+id, shared.acme, nil)
	if st["deliver_at"] != at {
		t.Errorf("status %v: want deliver_at %s", st, at)
	}

	bc := browserClient(t)
	signIn(t, bc, shared.acme)
	if code, page := get(t, bc, "/events/"+id); code != http.StatusOK || !strings.Contains(page, "scheduled: the first attempt goes at") || !strings.Contains(page, "badge-scheduled") {
		t.Errorf("event page of a scheduled send (%d) does not say it is scheduled, and when", code)
	}

	code, out = call(t, "POST", "/v1/events/"+id+"/cancel", shared.globex, map[string]any{"reason": "not mine"})
	want(t, "another tenant's cancel", code, http.StatusNotFound, out)
	code, out = call(t, "POST", "/v1/events/"+id+"/cancel", shared.acme, map[string]any{"reason": strings.Repeat("x", 501)})
	want(t, "a cancel with a reason too long", code, http.StatusBadRequest, out)
	code, out = call(t, "POST", "/v1/events/"+id+"/cancel", shared.acme, map[string]any{"reason": "order refunded"})
	want(t, "cancel", code, http.StatusOK, out)
	status, _ := out["status"].(map[string]any)
	c, _ := status["cancelled"].(map[string]any)
	if status["state"] != "cancelled" || c["reason"] != "order refunded" || c["phase"] != "scheduled" || !strings.Contains(c["by"].(string), "acme") {
		t.Fatalf("cancel answers %v: want cancelled while scheduled, the reason, by acme's token", out)
	}
	waitState(t, id, "cancelled")
	if code, page := get(t, bc, "/events/"+id); code != http.StatusOK || !strings.Contains(page, "cancelled at") || !strings.Contains(page, "order refunded") {
		t.Errorf("event page of a cancelled send (%d) does not say when and why it was cancelled", code)
	}
	if ids, _ := listEvents(t, shared.acme, "state=cancelled&endpoint="+ep, 10); len(ids) != 1 || ids[0] != id {
		t.Errorf("events listed cancelled: %v, want %s", ids, id)
	}
	code, out = call(t, "POST", "/v1/events/"+id+"/cancel?tenant=acme", shared.operator, nil)
	want(t, "a second cancel", code, http.StatusConflict, out)
	if !strings.Contains(out["error"].(string), "already cancelled") {
		t.Errorf("a second cancel: %v, want already cancelled", out)
	}
	code, out = call(t, "POST", "/v1/events", shared.acme, map[string]any{"endpoint_id": ep, "type": "t", "data": 1,
		"deliver_at": time.Now().Add(100 * 24 * time.Hour).Format(time.RFC3339)})
	want(t, "a send 100 days ahead", code, http.StatusBadRequest, out)
	if !strings.Contains(out["error"].(string), "90 days") {
		t.Errorf("a send 100 days ahead: %v, want the 90 days bound", out)
	}
	if n := rcv.count(id); n != 0 {
		t.Errorf("the receiver got %d requests, want none", n)
	}
}

// TestCancelFromEventPage: the event page of a dead letter offers Cancel; the form (with
// the session's CSRF token only) cancels it with the reason typed, and the page then shows
// it cancelled, by the tenant's session, with no Cancel button.
func TestCancelFromEventPage(t *testing.T) {
	_, _, ev := deadLetter(t, "cancel-page", "evt_cancel_page", 1)
	c := browserClient(t)
	signIn(t, c, shared.acme)
	_, page := get(t, c, "/events/"+ev)
	m := csrfField.FindStringSubmatch(page)
	if m == nil || !strings.Contains(page, `id="cancel-form"`) {
		t.Fatalf("the event page of a dead letter offers no Cancel form:\n%s", page)
	}
	post := poster(t, c)
	if code := post("/events/"+ev+"/cancel", url.Values{"csrf": {"forged"}, "reason": {"x"}}); code != http.StatusForbidden {
		t.Fatalf("cancel form with a forged csrf: %d, want 403", code)
	}
	if code := post("/events/"+ev+"/cancel", url.Values{"csrf": {m[1]}, "reason": {"customer asked"}}); code != http.StatusSeeOther {
		t.Fatalf("cancel form: %d, want 303", code)
	}
	waitState(t, ev, "cancelled")
	_, page = get(t, c, "/events/"+ev)
	for _, want := range []string{"badge-cancelled", "while dead_letter", "customer asked", "acme"} {
		if !strings.Contains(page, want) {
			t.Errorf("the cancelled event's page lacks %q", want)
		}
	}
	if strings.Contains(page, `id="cancel-form"`) {
		t.Error("a cancelled event's page still offers Cancel")
	}
}
