package tests

import "flag"

// orderedFull runs TestOrderedUnderFailuresAndKill at the size, 2,000 events over
// 50 keys (71–88 s here); by default it runs 400 events over 40 keys.
var orderedFull = flag.Bool("ordered-full", false, "run TestOrderedUnderFailuresAndKill with 2,000 events over 50 keys")

// orderedSize is the number of events and keys of TestOrderedUnderFailuresAndKill.
func orderedSize() (events, keys int) {
	if *orderedFull {
		return 2000, 50
	}
	return 400, 40
}
