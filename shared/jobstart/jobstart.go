// Package jobstart starts background jobs (bulk operations, sync jobs):
// the stream rule that turns the insert of a job's record into one message
// on the job's queue, and the worker's reading of that message. What a job
// does, and how its steps run (package jobrun), live elsewhere.
package jobstart

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/pipeline"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/store"
)

// Start is how the jobs of one kind start: the insert of a record whose
// sort key starts with Prefix sends one message to Queue that names the
// vendor (vendor_id) and the job (IDField): {"vendor_id":"ven_1","<IDField>":"<id>"}.
type Start struct {
	// Prefix starts the sort keys of the kind's job records.
	Prefix string
	// Queue is the queue the kind's messages are on.
	Queue string
	// IDField is the message's member that names the job
	// ("bulk_operation_id").
	IDField string
}

// Rule is the kind's stream rule: the insert of a job record sends its
// message. Later writes of the job (its results) send nothing.
func (s Start) Rule(c store.Change) ([]pipeline.Outgoing, error) {
	if c.Kind != store.Inserted || !strings.HasPrefix(c.Key.SK, s.Prefix) {
		return nil, nil
	}
	vendorID, ok := strings.CutPrefix(c.Key.PK, datamodel.VendorPartition(""))
	if !ok {
		return nil, nil
	}
	return []pipeline.Outgoing{{Queue: s.Queue, Body: s.Message(vendorID, strings.TrimPrefix(c.Key.SK, s.Prefix))}}, nil
}

// Message is the body of the message that runs job id of the vendor.
func (s Start) Message(vendorID, id string) []byte {
	return fmt.Appendf(nil, `{"vendor_id":%s,%s:%s}`, quoted(vendorID), quoted(s.IDField), quoted(id))
}

// quoted is v as a JSON string (a string always encodes).
func quoted(v string) []byte {
	b, _ := json.Marshal(v)
	return b
}

// Parse reads the vendor and the job a message of the kind names. A
// message that does not name both is an error: it is retried until the
// dead-letter queue, where operators see it.
func (s Start) Parse(m queue.Message) (vendorID, id string, err error) {
	var members map[string]json.RawMessage
	if json.Unmarshal(m.Body, &members) == nil &&
		json.Unmarshal(members["vendor_id"], &vendorID) == nil && json.Unmarshal(members[s.IDField], &id) == nil &&
		vendorID != "" && id != "" {
		return vendorID, id, nil
	}
	return "", "", fmt.Errorf("jobstart: malformed message %s: %q", m.ID, m.Body)
}
