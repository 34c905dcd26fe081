package main

import (
	"fmt"
	"io"
	"os"

	"github.com/heraldhq/herald/starter"
)

// readBounded reads the input --flag names (given as arg): path "-" is stdin, any other
// path a file. It reads at most most bytes and refuses more with over (an error that
// wraps starter.ErrInvalid), saying limit: Herald's limits count values compacted, so most
// is a few times the limit, leaving room for whitespace.
func readBounded(flag, arg, path string, stdin io.Reader, most int, over error, limit string) ([]byte, error) {
	r := stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("%w: --%s %s: %v (give a readable file, or - for stdin)", starter.ErrInvalid, flag, arg, err)
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, int64(most)+1))
	if err != nil {
		return nil, fmt.Errorf("--%s %s: %w", flag, arg, err)
	}
	if len(b) > most {
		return nil, fmt.Errorf("%w: --%s %s is over %d bytes: %s", over, flag, arg, most, limit)
	}
	return b, nil
}
