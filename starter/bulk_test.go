package starter

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/heraldhq/herald"
)

func TestSameAsStored(t *testing.T) {
	five := herald.Duration(5e9)
	ep := herald.Endpoint{
		ID: "a", Tenant: "acme", URL: "https://a.example.com", Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
		Overrides: herald.Overrides{Timeout: five}, Headers: []herald.Header{{Name: "X-A", Value: "1"}}, Types: []string{"order.*"}, Version: 3,
	}
	headers := func(hs ...herald.Header) *[]herald.Header { return &hs }
	for _, c := range []struct {
		what string
		req  herald.PutEndpointRequest
		same bool
	}{
		{"the id alone", herald.PutEndpointRequest{ID: "a"}, true},
		{"every field as stored", herald.PutEndpointRequest{ID: "a", URL: ep.URL, Tenant: "acme", Secret: ep.Secret,
			Overrides: &herald.Overrides{Timeout: five}, Headers: headers(herald.Header{Name: "X-A", Value: "1"}), Types: []string{"order.*"}}, true},
		{"a generated secret for a new endpoint", herald.PutEndpointRequest{ID: "a", URL: ep.URL, DefaultSecret: "whsec_other"}, true},
		{"another URL", herald.PutEndpointRequest{ID: "a", URL: "https://b.example.com"}, false},
		{"another tenant", herald.PutEndpointRequest{ID: "a", Tenant: "globex"}, false},
		{"another secret", herald.PutEndpointRequest{ID: "a", Secret: "whsec_other"}, false},
		{"another timeout", herald.PutEndpointRequest{ID: "a", Overrides: &herald.Overrides{Timeout: 2 * five}}, false},
		{"an override added", herald.PutEndpointRequest{ID: "a", Overrides: &herald.Overrides{MaxInFlight: 4}}, false},
		{"overrides cleared", herald.PutEndpointRequest{ID: "a", ClearOverrides: true}, false},
		{"cleared and set back as stored", herald.PutEndpointRequest{ID: "a", ClearOverrides: true, Overrides: &herald.Overrides{Timeout: five}}, true},
		{"headers removed", herald.PutEndpointRequest{ID: "a", Headers: headers()}, false},
		{"other types", herald.PutEndpointRequest{ID: "a", Types: []string{"*"}}, false},
		{"auth added", herald.PutEndpointRequest{ID: "a", Auth: &herald.EndpointAuth{Basic: &herald.BasicAuth{Username: "u", Password: "p"}}}, false},
		{"auth cleared on none", herald.PutEndpointRequest{ID: "a", ClearAuth: true}, true},
	} {
		if got := sameAsStored(ep, c.req); got != c.same {
			t.Errorf("%s: same %v, want %v", c.what, got, c.same)
		}
	}
	// Every type, stored as none, given as "*".
	all := ep
	all.Types = nil
	if !sameAsStored(all, herald.PutEndpointRequest{ID: "a", Types: []string{"*"}}) {
		t.Error(`types ["*"] on an endpoint receiving every type: not the same`)
	}
	// Authentication given as stored is the same; another password is not.
	authed := ep
	authed.Auth = herald.EndpointAuth{Basic: &herald.BasicAuth{Username: "u", Password: "p"}}
	if !sameAsStored(authed, herald.PutEndpointRequest{ID: "a", Auth: &herald.EndpointAuth{Basic: &herald.BasicAuth{Username: "u", Password: "p"}}}) {
		t.Error("basic auth given as stored: not the same")
	}
	if sameAsStored(authed, herald.PutEndpointRequest{ID: "a", Auth: &herald.EndpointAuth{Basic: &herald.BasicAuth{Username: "u", Password: "q"}}}) {
		t.Error("another password: the same")
	}
	// A secret still rotating: giving the current one ends the rotation.
	rotating := ep
	rotating.PreviousSecret = "whsec_old"
	if sameAsStored(rotating, herald.PutEndpointRequest{ID: "a", Secret: ep.Secret}) {
		t.Error("the current secret given during a rotation ends it: not the same")
	}
}

// TestPutEndpointsRefusesBeforeAsking: the reserved id, bad input and a repeated id fail
// as their own results, and more than MaxPutEndpoints fail as a whole, with nothing asked
// of Temporal (the client has none).
func TestPutEndpointsRefusesBeforeAsking(t *testing.T) {
	s := New(nil, Options{})
	var seen []int
	res, err := s.PutEndpoints(context.Background(), []herald.PutEndpointRequest{
		{ID: herald.OpsEndpointID, URL: "https://a.example.com", Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
		{ID: "bad id", URL: "https://a.example.com"},
		{ID: "x", URL: "ftp://a.example.com"},
		{ID: "x", URL: "https://a.example.com"},
	}, func(done int) { seen = append(seen, done) })
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"reserved for the operational endpoint", "endpoint id", "scheme", "once per call"} {
		r := res[i]
		if r.Outcome != BulkFailed || !errors.Is(r.Err, ErrInvalid) || !strings.Contains(r.Err.Error(), want) {
			t.Errorf("request %d: %s %v, want failed with an ErrInvalid saying %q", i+1, r.Outcome, r.Err, want)
		}
	}
	if len(seen) != 1 || seen[0] != 4 {
		t.Errorf("progress %v, want [4]", seen)
	}
	if _, err := s.PutEndpoints(context.Background(), make([]herald.PutEndpointRequest, MaxPutEndpoints+1), nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("%d requests: %v, want ErrInvalid", MaxPutEndpoints+1, err)
	}
}
