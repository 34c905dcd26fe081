package activities

import (
	"fmt"
	"hash/fnv"
	"time"
)

// Endpoint counters live in a few stats workflows rather than in each endpoint workflow, so
// that a delivered attempt to a quiet endpoint costs that endpoint's workflow no history
// event: each worker's gate adds up what it saw and sends it, every StatsInterval, in one
// signal per shard.
const (
	// StatsWorkflowName is the workflow type of a shard of endpoint counters.
	StatsWorkflowName = "EndpointStats"
	// StatsShards is how many stats workflows share the endpoints (fixed: it decides ids).
	StatsShards = 8
	// SignalStats adds counts to a shard ([]EndpointCounts).
	SignalStats = "counts"
	// QueryStats returns the counts of the endpoints asked for ([]string → []EndpointCounts).
	QueryStats = "counts"
)

// StatsWorkflowID is the workflow id of the stats shard that counts endpoint id.
func StatsWorkflowID(endpointID string) string {
	h := fnv.New32a()
	h.Write([]byte(endpointID))
	return fmt.Sprintf("endpoint-stats:%d", h.Sum32()%StatsShards)
}

// EndpointCounts are one endpoint's attempt counts.
type EndpointCounts struct {
	Endpoint string `json:"endpoint"`
	Counts   Report `json:"counts"`
}

// StatsInterval is how often a worker's gate sends the counts it has added up.
const StatsInterval = 2 * time.Second
