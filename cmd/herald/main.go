// Command herald is Herald's CLI: run the development stack or a worker, register
// endpoints, send events, follow deliveries and replay dead letters.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/heraldhq/herald/starter"
)

func main() {
	if err := newRootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "herald:", err)
		if errors.Is(err, starter.ErrInvalid) || errors.Is(err, starter.ErrConflict) || errors.Is(err, errUsage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}
