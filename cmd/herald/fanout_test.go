package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/starter"
)

// TestSendNeedsOneDestination: send takes --tenant or --endpoint, exactly one, and says so
// before anything is dialed; endpoint put refuses an empty --types.
func TestSendNeedsOneDestination(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"send", "--type", "order.paid", "--data", "{}"}, "give --tenant"},
		{[]string{"send", "--tenant", "acme", "--endpoint", "acme-billing", "--type", "order.paid", "--data", "{}"}, "one of them"},
		{[]string{"endpoint", "put", "acme", "--types", ""}, "--types is empty"},
	} {
		_, err := runHerald(append(c.args, nowhere)...)
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("herald %s: error %v, want a usage error saying %q", strings.Join(c.args, " "), err, c.want)
		}
	}
}

func TestPrintFanout(t *testing.T) {
	var b bytes.Buffer
	err := (&globals{}).printPublished(&b, starter.PublishResult{EventID: "evt_1", Tenant: "acme", Type: "order.paid", Deliveries: []starter.FanoutDelivery{
		{EndpointID: "a", WorkflowID: herald.FanoutDeliveryID("acme", "a", "evt_1")},
		{EndpointID: "b", WorkflowID: herald.FanoutDeliveryID("acme", "b", "evt_1"), Existed: true},
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"to 2 endpoint(s) of tenant acme", "delivery+a@acme:evt_1", "already started", "herald status evt_1 --tenant acme"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("send output lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	if err := (&globals{}).printPublished(&b, starter.PublishResult{EventID: "evt_2", Tenant: "acme", Type: "x", NoDestination: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "no destination") {
		t.Errorf("send output for no destination:\n%s", b.String())
	}
	b.Reset()
	st := herald.Status{State: herald.StateDeadLetter}
	if err := printEventView(&b, herald.EventView{ID: "evt_1", Tenant: "acme", Type: "order.paid", Deliveries: []herald.DeliveryView{
		{EndpointID: "a", Status: &st}, {EndpointID: "b", Missing: true},
	}}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"dead_letter", "missing", "Sending the same event id again adds it"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("status output lacks %q:\n%s", want, b.String())
		}
	}
}
