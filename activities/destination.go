package activities

import (
	"context"

	"github.com/heraldhq/herald"
)

// Destination takes an attempt's signed request to the receiver and says what happened.
// HTTP (http.go) is the one kind there is: a POST to the endpoint's URL. Another kind (a
// queue, a broker, a function) is a type with a Deliver method in a file of its own, chosen
// in Activities.Destination; what it learns beyond the outcome goes in a detail of its own
// beside herald.HTTPExchange on herald.Result.
type Destination interface {
	// Deliver sends req and returns what happened: the Result's Outcome and Error, the
	// receiver's answer (Snippet) and the destination's own detail (HTTPExchange for
	// HTTP). The attempt fills in the rest (number, start, duration, policy, URL). A
	// failure of the receiver is a Result, never an error; Deliver gives up by
	// req.Timeout, or when ctx ends.
	Deliver(ctx context.Context, req *Request) herald.Result
}
