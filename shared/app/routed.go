package app

import (
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/pipeline"
	"github.com/moku/sellerapi/shared/queue"
)

// Routed are the sort-key prefixes of the items whose insertion starts
// background work: events (webhook fan-out, seller orders), replays, bulk
// operations and sync jobs. Every other change (products, stock, rate
// windows, receipts, updates and TTL deletions) routes nothing. The router
// shows its rules only these, locally and in AWS, where the stream-router
// mapping's event filter is built from the same list so that the other
// changes do not invoke it at all.
func Routed() []string {
	return []string{datamodel.EventPrefix, datamodel.ReplayPrefix, datamodel.BulkPrefix, datamodel.SyncJobPrefix}
}

// router is the stream router over works' rules.
func router(works []Work, q queue.Sender) pipeline.Router {
	var rules []pipeline.Rule
	for _, w := range works {
		if w.Rule != nil {
			rules = append(rules, w.Rule)
		}
	}
	return pipeline.Router{Rules: rules, Queue: q, Inserted: Routed()}
}
