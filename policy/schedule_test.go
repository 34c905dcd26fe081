package policy

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/heraldhq/herald/duration"
)

func TestParseDelays(t *testing.T) {
	tests := []struct {
		in   string
		want []duration.Duration
	}{
		{"30s", duration.Of(30 * time.Second)},
		{"30s,2m,10m", duration.Of(30*time.Second, 2*time.Minute, 10*time.Minute)},
		{" 30s , 1h30m ,500ms ", duration.Of(30*time.Second, 90*time.Minute, 500*time.Millisecond)},
		{"2m0s,1h0m0s", duration.Of(2*time.Minute, time.Hour)},
	}
	for _, tt := range tests {
		got, err := ParseDelays(tt.in)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseDelays(%q) = %v, %v; want %v, nil", tt.in, got, err, tt.want)
		}
	}
}

func TestParseDelaysErrors(t *testing.T) {
	tests := []struct {
		in   string
		want string
	}{
		{"", "empty schedule"},
		{"   ", "empty schedule"},
		{"30s,,2m", "item 2 is empty"},
		{"30s,", "item 2 is empty"},
		{"30", `item 1 "30" is not a duration`},
		{"30s,2x", `item 2 "2x" is not a duration`},
		{"1d", `item 1 "1d" is not a duration`},
		{"30s,0s", "item 2 is 0s; every delay must be positive"},
		{"-5m", "item 1 is -5m0s"},
	}
	for _, tt := range tests {
		got, err := ParseDelays(tt.in)
		if err == nil {
			t.Errorf("ParseDelays(%q) = %v, nil; want error containing %q", tt.in, got, tt.want)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseDelays(%q) error %q, want it to contain %q", tt.in, err, tt.want)
		}
	}
}

func TestFormatDelays(t *testing.T) {
	tests := []struct {
		in   []duration.Duration
		want string
	}{
		{nil, ""},
		{DefaultLadder().Delays, "30s,2m,10m,30m,1h,3h,8h"},
		{duration.Of(90*time.Minute, 90*time.Second, time.Hour+30*time.Second), "1h30m,1m30s,1h0m30s"},
		{duration.Of(500*time.Millisecond, 1500*time.Millisecond, 10*time.Hour), "500ms,1.5s,10h"},
	}
	for _, tt := range tests {
		got := FormatDelays(tt.in)
		if got != tt.want {
			t.Errorf("FormatDelays(%v) = %q, want %q", tt.in, got, tt.want)
		}
		if len(tt.in) == 0 {
			continue
		}
		back, err := ParseDelays(got)
		if err != nil || !reflect.DeepEqual(back, tt.in) {
			t.Errorf("ParseDelays(FormatDelays(%v)) = %v, %v; want the input back", tt.in, back, err)
		}
	}
}
