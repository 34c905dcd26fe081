package main

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/heraldhq/herald"
)

// deadLetterFlags select dead letters: --endpoint, --since and --until.
type deadLetterFlags struct {
	endpoint, since, until string
}

func (f *deadLetterFlags) bind(fs *pflag.FlagSet, endpointUsage, sinceUsage string) {
	fs.StringVar(&f.endpoint, "endpoint", "", endpointUsage)
	fs.StringVar(&f.since, "since", "", sinceUsage)
	fs.StringVar(&f.until, "until", "", "only events sent at or before this `TIME`")
}

// filter reads the flags into a filter, --since and --until counted back from now.
func (f *deadLetterFlags) filter(now time.Time) (herald.DeadLetterFilter, error) {
	out := herald.DeadLetterFilter{EndpointID: f.endpoint}
	var err error
	if out.Since, err = parseWhen(f.since, now, -1); err != nil {
		return out, fmt.Errorf("%w: --since: %v", errUsage, err)
	}
	if out.Until, err = parseWhen(f.until, now, -1); err != nil {
		return out, fmt.Errorf("%w: --until: %v", errUsage, err)
	}
	return out, nil
}

// parseWhen reads an RFC 3339 time, a date, or a duration counted from now in direction dir.
func parseWhen(s string, now time.Time, dir int) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	if t, err := time.ParseInLocation("2006-01-02", s, time.Local); err == nil {
		return t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(time.Duration(dir) * d), nil
	}
	return time.Time{}, fmt.Errorf("%q is not a time: use RFC 3339 (2026-11-30T12:00:00Z), a date (2026-11-30) or a duration (2h)", s)
}
