package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/pflag"
)

// zeroRule is how every numeric flag of endpoint put, worker and dev reads 0; their --help
// says it.
const zeroRule = `A numeric or duration flag given as 0 is refused, never read as "the default" or
"none": leave a flag out to keep its default. The exceptions are --jitter,
--half-open-attempts and --rate-limit, whose ranges start at 0 (0 = no jitter, close after
the probe alone, no rate limit).`

// zeroAllowed are the numeric flags whose range includes 0, which then means itself.
var zeroAllowed = map[string]bool{"jitter": true, "half-open-attempts": true, "rate-limit": true}

// refuseZero applies zeroRule to the flags given on the command line.
func refuseZero(fs *pflag.FlagSet) error {
	var err error
	fs.Visit(func(f *pflag.Flag) {
		if err != nil || zeroAllowed[f.Name] || !isZero(f.Value) {
			return
		}
		keep := "for its default (" + f.DefValue + ")"
		if isZeroString(f.Value.Type(), f.DefValue) {
			keep = "to keep the current setting"
		}
		err = fmt.Errorf("%w: --%s 0: 0 is not a value of this flag; leave the flag out %s", errUsage, f.Name, keep)
	})
	return err
}

// isZero reports whether v is a number or duration equal to 0.
func isZero(v pflag.Value) bool { return isZeroString(v.Type(), v.String()) }

func isZeroString(typ, s string) bool {
	switch typ {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64", "float32", "float64":
		f, err := strconv.ParseFloat(s, 64)
		return err == nil && f == 0
	case "duration":
		d, err := time.ParseDuration(s)
		return err == nil && d == 0
	}
	return false
}
