package herald

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/temporalio/sqlparser"

	"github.com/heraldhq/herald/policy"
)

func TestFanoutDeliveryIDs(t *testing.T) {
	for _, c := range []struct{ tenant, endpoint, event, want string }{
		{"acme", "acme-billing", "evt_1", "delivery+acme-billing@acme:evt_1"},
		{"", "ep", "a:b", "delivery+ep@default:a:b"},
		{DefaultTenant, "ep.1", "x", "delivery+ep.1@default:x"},
	} {
		id := FanoutDeliveryID(c.tenant, c.endpoint, c.event)
		if id != c.want {
			t.Errorf("FanoutDeliveryID(%q, %q, %q) = %q, want %q", c.tenant, c.endpoint, c.event, id, c.want)
		}
		tenant, ep, ev, ok := ParseFanoutDeliveryID(id)
		wantTenant := c.tenant
		if wantTenant == "" {
			wantTenant = DefaultTenant
		}
		if !ok || tenant != wantTenant || ep != c.endpoint || ev != c.event {
			t.Errorf("ParseFanoutDeliveryID(%q) = %q, %q, %q, %v", id, tenant, ep, ev, ok)
		}
		if tenant, ev, ok := ParseDeliveryID(id); !ok || tenant != wantTenant || ev != c.event {
			t.Errorf("ParseDeliveryID(%q) = %q, %q, %v", id, tenant, ev, ok)
		}
	}
	for _, id := range []string{"delivery:x", "delivery@acme:x", "delivery+@acme:x", "delivery+ep@:x", "delivery+ep", "endpoint:ep", NoDestinationID("acme", "x")} {
		if _, _, _, ok := ParseFanoutDeliveryID(id); ok {
			t.Errorf("ParseFanoutDeliveryID(%q) took it for a fan-out delivery", id)
		}
	}
}

func TestNormalizeTypes(t *testing.T) {
	if NormalizeTypes([]string{"order.*", "*"}) != nil || NormalizeTypes(nil) != nil {
		t.Error("a subscription with * is every type (nil)")
	}
	if got := NormalizeTypes([]string{"b", "a"}); len(got) != 2 || got[0] != "b" {
		t.Errorf("NormalizeTypes kept %q", got)
	}
}

// checkSubscribersQuery builds a send's lookup of tenant's endpoints subscribed to
// eventType as the starter does, parses it with the server's parser and checks that it is
// the running workflows holding exactly the tokens MatchingTokens names, read back
// unchanged, whatever the values. For values the grammar accepts, every token is also safe
// inside the full-text query SQLite's visibility store builds from it ("tok" OR "tok"):
// no double quote, no U+2661 (the store's token separator), no space.
func checkSubscribersQuery(t *testing.T, tenant, eventType string) {
	tokens := MatchingTokens(tenant, eventType)
	q := Where().HasAny(AttrSubscriptions, tokens...).Running().String()
	conds := parseWhere(t, q)
	if len(conds) != 2 || !hasCondition(conds, "ExecutionStatus", "=", "Running") {
		t.Fatalf("query %q: want the status and the tokens as its two top-level conditions", q)
	}
	in, ok := conds[0].(*sqlparser.ComparisonExpr)
	if !ok || in.Operator != sqlparser.InStr || sqlparser.String(in.Left) != AttrSubscriptions.GetName() {
		t.Fatalf("query %q: the first condition is not HeraldSubscriptions IN (...)", q)
	}
	tuple, ok := in.Right.(sqlparser.ValTuple)
	if !ok || len(tuple) != len(tokens) {
		t.Fatalf("query %q: %d values, want %d", q, len(tuple), len(tokens))
	}
	for i, v := range tuple {
		if sv, ok := v.(*sqlparser.SQLVal); !ok || sv.Type != sqlparser.StrVal || string(sv.Val) != tokens[i] {
			t.Fatalf("query %q: value %d does not read back as %q", q, i, tokens[i])
		}
	}
	if ValidateTenant(tenant) != nil || policy.ValidateEventType(eventType) != nil {
		return
	}
	for _, tok := range tokens {
		if strings.ContainsAny(tok, "\"\u2661 \t\n") {
			t.Fatalf("token %q of tenant %q, type %q would break the store's full-text query", tok, tenant, eventType)
		}
	}
}

func FuzzSubscribersQuery(f *testing.F) {
	for _, s := range injections {
		f.Add(s, "order.paid")
		f.Add("acme", s)
	}
	f.Add("acme", "a.b.c.d")
	f.Add("acme", "a..b.")
	f.Fuzz(checkSubscribersQuery)
}

// TestSubscriptionTokens: the tokens an endpoint publishes are those a send of a type it
// receives looks for, and never those of a type it does not; the longest subscription the
// grammar allows fits the server's 2 KB limit on a search attribute's value.
func TestSubscriptionTokens(t *testing.T) {
	types := []string{"order.paid", "order.refund.created", "order", "invoice.x", "a..b", "Order.paid"}
	for _, sub := range [][]string{nil, {"order.*"}, {"order.paid", "invoice.*"}, {"a.*"}, {"a..*"}, {"order"}} {
		tokens := SubscriptionTokens("acme", sub)
		for _, typ := range types {
			want := policy.MatchesType(sub, typ)
			if got := TokensMatch(tokens, "acme", typ); got != want {
				t.Errorf("subscription %q, type %s: matched %v, want %v", sub, typ, got, want)
			}
			if TokensMatch(tokens, "Acme", typ) || TokensMatch(tokens, "acme2", typ) {
				t.Errorf("subscription %q of acme matched in another tenant", sub)
			}
		}
	}
	var long []string
	for i := range policy.MaxSubscriptionTypes {
		long = append(long, fmt.Sprintf("%03d.%s.*", i, strings.Repeat("x", policy.MaxEventTypeLen-6)))
	}
	tokens := SubscriptionTokens(strings.Repeat("t", 128), long)
	b, err := json.Marshal(tokens)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 2048 {
		t.Fatalf("the longest subscription publishes %d bytes; the server refuses a value over 2,048", len(b))
	}
	if !TokensMatch(tokens, strings.Repeat("t", 128), "042."+strings.Repeat("x", policy.MaxEventTypeLen-6)+".y") {
		t.Fatal("a hashed subscription is not found by a type it receives")
	}
}
