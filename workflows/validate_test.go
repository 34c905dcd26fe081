package workflows

import (
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald"
	"github.com/heraldhq/herald/duration"
	"github.com/heraldhq/herald/netguard"
	"github.com/heraldhq/herald/policy"
	"github.com/heraldhq/herald/signature"
)

// TestValidatePutBounds covers the bounds a put must respect: lower bounds on waits and
// retention, upper bounds on rotation grace and URL length.
func TestValidatePutBounds(t *testing.T) {
	sec, err := signature.GenerateSecret()
	if err != nil {
		t.Fatal(err)
	}
	url := func(n int) string { // an acceptable URL of n bytes
		base := "https://hooks.example.com/"
		return base + strings.Repeat("a", n-len(base))
	}
	ladder := func(d time.Duration) *herald.Overrides {
		return &herald.Overrides{Ladder: &policy.LadderOverride{Delays: duration.Of(d), Attempts: 2}}
	}
	tests := []struct {
		name string
		req  herald.PutEndpointRequest
		want string // substring of the error; empty for valid
	}{
		{"URL of 2048 bytes", herald.PutEndpointRequest{URL: url(herald.MaxURLBytes), Secret: sec}, ""},
		{"URL of 2049 bytes", herald.PutEndpointRequest{URL: url(herald.MaxURLBytes + 1), Secret: sec}, "URL is 2049 bytes long; the limit is 2048"},
		{"no URL names no flag", herald.PutEndpointRequest{Secret: sec}, "give its URL"},
		{"ladder wait 1s", herald.PutEndpointRequest{URL: url(40), Secret: sec, Overrides: ladder(time.Second)}, ""},
		{"ladder wait 100ms", herald.PutEndpointRequest{URL: url(40), Secret: sec, Overrides: ladder(100 * time.Millisecond)}, "shortest allowed is 1s"},
		{"retention 1h", herald.PutEndpointRequest{URL: url(40), Secret: sec, Overrides: &herald.Overrides{Retention: herald.Duration(time.Hour)}}, ""},
		{"retention 10m", herald.PutEndpointRequest{URL: url(40), Secret: sec, Overrides: &herald.Overrides{Retention: herald.Duration(10 * time.Minute)}}, "retention 10m0s is under 1h"},
		{"grace 31 days", herald.PutEndpointRequest{URL: url(40), Secret: sec, RotateTo: sec, RotateGrace: herald.Duration(31 * 24 * time.Hour)}, "over 30 days"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.ID = "acme"
			registered := tt.req.RotateTo != ""
			if registered {
				tt.req.Secret = ""
			}
			err := herald.ValidatePut(tt.req, registered, netguard.Policy{})
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("error %v, want none", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), "--") {
				t.Errorf("error %q names a command-line flag; the API shares it", err)
			}
		})
	}
}
