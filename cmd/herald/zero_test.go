package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestZeroIsRefusedEverywhere gives every numeric and duration flag of endpoint put, worker
// and dev the value 0: each is refused with a usage error naming the flag, before anything
// is dialed or started, except the flags whose range starts at 0.
func TestZeroIsRefusedEverywhere(t *testing.T) {
	offline(t) // no .herald/codec.key here; dev would write its files here
	for _, path := range [][]string{{"endpoint", "put"}, {"worker"}, {"dev"}} {
		cmd, _, err := newRootCmd().Find(path)
		if err != nil {
			t.Fatal(err)
		}
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			if !isZeroString(f.Value.Type(), "0") {
				return // not a number or a duration
			}
			args := append(append([]string{}, path...), "--"+f.Name+"=0", nowhere, "--plaintext")
			if path[0] == "endpoint" {
				args = append(args[:len(args)-1], "acme") // put takes an id and has no --plaintext
			}
			name := strings.Join(path, " ") + " --" + f.Name + " 0"
			t.Run(name, func(t *testing.T) {
				if zeroAllowed[f.Name] {
					fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
					fs.AddFlagSet(cmd.Flags())
					if err := fs.Parse([]string{"--" + f.Name + "=0"}); err != nil {
						t.Fatal(err)
					}
					if err := refuseZero(fs); err != nil {
						t.Fatalf("refused although 0 is in its range: %v", err)
					}
					return
				}
				_, err := runHerald(args...)
				if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "--"+f.Name+" 0") {
					t.Fatalf("error %v, want a usage error naming --%s 0", err, f.Name)
				}
			})
		})
	}
}

func TestHelpStatesTheZeroRule(t *testing.T) {
	for _, path := range [][]string{{"endpoint", "put"}, {"worker"}, {"dev"}} {
		cmd, _, err := newRootCmd().Find(path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(cmd.Long, zeroRule) {
			t.Errorf("herald %s --help does not state what 0 means", strings.Join(path, " "))
		}
	}
}
