package herald

import (
	"slices"
	"strings"
	"testing"
)

func TestNormalizeHeaders(t *testing.T) {
	got, err := NormalizeHeaders([]Header{{"x-team", "billing"}, {"Authorization", "Bearer t"}})
	if want := []Header{{"Authorization", "Bearer t"}, {"X-Team", "billing"}}; err != nil || !slices.Equal(got, want) {
		t.Errorf("got %v, %v; want %v sorted and canonical", got, err, want)
	}
	for _, tc := range []struct {
		hs   []Header
		want string
	}{
		{[]Header{{"webhook-signature", "v1,x"}}, "set by Herald itself"},
		{[]Header{{"Content-Type", "text/plain"}}, "set by Herald itself"},
		{[]Header{{"user-agent", "x"}}, "set by Herald itself"},
		{[]Header{{"X Team", "x"}}, "not a valid HTTP header name"},
		{[]Header{{"", "x"}}, "not a valid HTTP header name"},
		{[]Header{{"X-A", "a\r\nX-B: b"}}, "control characters"},
		{[]Header{{"X-A", strings.Repeat("a", MaxHeaderValue+1)}}, "limit"},
		{[]Header{{"x-a", "1"}, {"X-A", "2"}}, "given twice"},
	} {
		if _, err := NormalizeHeaders(tc.hs); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one saying %q", tc.hs, err, tc.want)
		}
	}
	if h, err := ParseHeader(" X-Team :  billing "); err != nil || h != (Header{"X-Team", "billing"}) {
		t.Errorf("ParseHeader: %v, %v", h, err)
	}
	if _, err := ParseHeader("X-Team billing"); err == nil {
		t.Error("ParseHeader took a header without a colon")
	}
	req := PutEndpointRequest{ID: "a", Headers: &[]Header{{"x-team", "b"}}}
	if err := req.Validate(true); err == nil {
		t.Error("a put with headers that are not normalized was accepted")
	}
}
