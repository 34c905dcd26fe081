// Package policy holds every decision Herald makes about a delivery: how long
// to wait before the next attempt, how that wait is jittered, what a
// receiver's Retry-After header means, when the circuit breaker trips and how
// many requests an endpoint may have in flight.
//
// Each decision is a pure function or a small state machine. The package
// imports nothing from Temporal, and nothing in it reads the clock, draws
// random numbers, iterates maps to decide, starts goroutines or does I/O:
// the workflows call it with the inputs they hold, so the same history always
// replays to the same decisions. Time enters only as an argument, and jitter
// comes from a hash of a key the caller chooses (see [JitterKey]).
//
// The rules, and the default numbers, follow the retry-ladder article Herald is
// built on ("the article" in this package's comments): exponential, capped and
// jittered retries, Retry-After honoured within caps, a concurrency cap and a
// circuit breaker per endpoint, dead letters that wait for a replay. The README
// states them for users ("Endpoint protection" and "Configuration").
//
// The retry ladder lives in ladder.go ([Ladder], [Next]) and the Retry-After
// rules in retryafter.go ([RetryAfterRules.Decide]).
package policy
