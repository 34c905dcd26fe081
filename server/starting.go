package server

import (
	"net/http"
	"strconv"
	"sync/atomic"
)

// StartingRetryAfter is the Retry-After, in seconds, of the answers a Starting handler
// gives until Herald is ready.
const StartingRetryAfter = 1

// startingMessage is the error of those answers.
const startingMessage = "Herald is starting: retry in a moment"

// Starting is an http.Handler for a listener that opens before Herald is ready (herald dev
// starts Temporal and a worker first): until Ready, every request, whatever its path,
// answers 503 Service Unavailable with a JSON error and Retry-After, which clients read as
// "retry", never a 404, which they read as final. From Ready on, it is the handler Ready got.
// The zero value is ready to use.
type Starting struct {
	h atomic.Pointer[http.Handler]
}

// Ready makes s serve every later request with h.
func (s *Starting) Ready(h http.Handler) { s.h.Store(&h) }

// ServeHTTP serves r with the ready handler, or answers 503 while there is none.
func (s *Starting) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h := s.h.Load(); h != nil {
		(*h).ServeHTTP(w, r)
		return
	}
	w.Header().Set("Retry-After", strconv.Itoa(StartingRetryAfter))
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	writeError(w, http.StatusServiceUnavailable, startingMessage)
}
