package herald

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
)

// ProbeEventType is the type of the event that probes an endpoint disabled for failing
// (policy.RecoveryLadder): a small signed request, like any delivery, that a receiver can
// recognise and answer 2xx to. It is never stored as a delivery.
const ProbeEventType = "endpoint.probe"

// ProbeData is the data of a probe event.
type ProbeData struct {
	EndpointID string `json:"endpoint_id"`
	// Probe numbers the probe since the endpoint was disabled (1 for the first).
	Probe int `json:"probe"`
	// DisabledAt is when the endpoint was disabled for failing.
	DisabledAt time.Time `json:"disabled_at,omitzero"`
}

// ProbeEvent is probe n of endpoint id (disabled at disabledAt), made at at. Its id comes
// from the endpoint, the disable and n, so a probe sent again (a retried workflow task)
// carries the same webhook-id.
func ProbeEvent(id string, n int, disabledAt, at time.Time) Event {
	data, _ := json.Marshal(ProbeData{EndpointID: id, Probe: n, DisabledAt: disabledAt}) // plain strings, ints and a time always encode
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d\x00%d", id, disabledAt.UnixNano(), n))
	return Event{ID: "probe_" + hex.EncodeToString(sum[:12]), EndpointID: id, Type: ProbeEventType, Data: data, CreatedAt: at}
}

// RecoveryReplayID is the workflow id of the bulk replay that replays endpoint id's dead
// letters after it recovered at at: one per recovery, so starting it again starts nothing.
func RecoveryReplayID(id string, at time.Time) string {
	return fmt.Sprintf("bulk-replay:%s:recovered-%d", id, at.UnixNano())
}
