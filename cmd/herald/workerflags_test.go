package main

import (
	"errors"
	"strings"
	"testing"

	"go.temporal.io/sdk/client"

	"github.com/heraldhq/herald/worker/gate"
)

// --grpc-compression takes none or gzip (none by default); anything else is a usage error
// before anything is dialed.
func TestGrpcCompressionFlag(t *testing.T) {
	offline(t)
	if c, err := grpcCompression("none"); err != nil || c == nil {
		t.Errorf("none: %v, %v", c, err)
	} else if _, ok := c.(*client.GrpcCompressionNone); !ok {
		t.Errorf("none gave %T", c)
	}
	if c, err := grpcCompression("gzip"); err != nil {
		t.Errorf("gzip: %v", err)
	} else if _, ok := c.(*client.GrpcCompressionGzip); !ok {
		t.Errorf("gzip gave %T", c)
	}
	if _, ok := (&globals{}).grpcCompression().(*client.GrpcCompressionNone); !ok {
		t.Error("no --grpc-compression: want none")
	}
	for _, bad := range []string{"", "zip", "GZIP", "gzip,none"} {
		_, err := runHerald("worker", "--grpc-compression="+bad, nowhere, "--plaintext")
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "use none or gzip") {
			t.Errorf("--grpc-compression %q: error %v, want a usage error saying none or gzip", bad, err)
		}
	}
}

// --stats-interval is 1s..5m, gate.StatsInterval by default.
func TestStatsIntervalFlag(t *testing.T) {
	offline(t)
	for _, bad := range []string{"500ms", "6m", "-1s"} {
		_, err := runHerald("worker", "--stats-interval="+bad, nowhere, "--plaintext")
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "--stats-interval") || !strings.Contains(err.Error(), "from 1s to 5m0s") {
			t.Errorf("--stats-interval %s: error %v, want a usage error giving the range", bad, err)
		}
	}
	cmd, _, err := newRootCmd().Find([]string{"worker"})
	if err != nil {
		t.Fatal(err)
	}
	if got := cmd.Flags().Lookup("stats-interval").DefValue; got != gate.StatsInterval.String() {
		t.Errorf("default %s, want %s", got, gate.StatsInterval)
	}
}
