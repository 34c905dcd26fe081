package activities

import "time"

// StatsInterval is how often a worker's gate sends the counts it has added up to the stats
// shards (herald.StatsWorkflowID): endpoint counters live in a few stats workflows rather
// than in each endpoint workflow, so that a delivered attempt to a quiet endpoint costs that
// endpoint's workflow no history event.
const StatsInterval = 2 * time.Second
