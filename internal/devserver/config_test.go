package devserver

import (
	"testing"
	"time"

	"go.temporal.io/server/common/dynamicconfig"
	"go.temporal.io/server/common/log"
)

// TestDynamicSettingsAsTheServerReadsThem reads Herald's dynamic settings through the
// server's own collection (its type conversions included): tuned, stock, and a flag's value
// over a tuned one.
func TestDynamicSettingsAsTheServerReadsThem(t *testing.T) {
	read := func(o Options) *dynamicconfig.Collection {
		return dynamicconfig.NewCollection(dynamicSettings(o), log.NewNoopLogger())
	}
	tuned := read(Options{})
	if got := dynamicconfig.TransferProcessorUpdateAckInterval.Get(tuned)(); got != queueCheckpointEvery {
		t.Errorf("tuned transfer checkpoint every %v; want %v", got, queueCheckpointEvery)
	}
	if got := dynamicconfig.VisibilityProcessorUpdateAckInterval.Get(tuned)(); got != queueCheckpointEvery {
		t.Errorf("tuned visibility checkpoint every %v; want %v", got, queueCheckpointEvery)
	}
	if got := dynamicconfig.QueueReaderStuckCriticalAttempts.Get(tuned)(); got != readerStuckAttempts {
		t.Errorf("tuned stuck attempts %d; want %d", got, readerStuckAttempts)
	}
	if got := dynamicconfig.MatchingNumTaskqueueReadPartitions.Get(tuned)("ns", "q", 1); got != 1 {
		t.Errorf("tuned read partitions %d; want 1", got)
	}

	stock := read(Options{Stock: true})
	if got, want := dynamicconfig.TransferProcessorUpdateAckInterval.Get(stock)(), 30*time.Second; got != want {
		t.Errorf("stock transfer checkpoint every %v; want the server's %v", got, want)
	}
	if got := dynamicconfig.QueueReaderStuckCriticalAttempts.Get(stock)(); got != 3 {
		t.Errorf("stock stuck attempts %d; want the server's 3", got)
	}
	if got := dynamicconfig.FrontendMaxNamespaceVisibilityRPSPerInstance.Get(stock)("ns"); got != 5000 {
		t.Errorf("stock visibility RPS %d; want 5000 (Herald's hot paths read visibility)", got)
	}

	over := read(Options{DynamicConfig: map[string]any{"history.visibilityProcessorUpdateAckInterval": "5s"}})
	if got := dynamicconfig.VisibilityProcessorUpdateAckInterval.Get(over)(); got != 5*time.Second {
		t.Errorf("visibility checkpoint with a flag of 5s: %v", got)
	}
}
