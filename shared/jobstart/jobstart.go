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

// Message is a job kind's queue message: it names the vendor and the job.
type Message interface {
	Job() (vendorID, id string)
}

// Rule is the stream rule of a job kind whose records' sort keys start
// with prefix: the insert of a record sends message(vendor, job) to q.
// Later writes of the job (its results) send nothing.
func Rule(c store.Change, prefix, q string, message func(vendorID, id string) Message) ([]pipeline.Outgoing, error) {
	if c.Kind != store.Inserted || !strings.HasPrefix(c.Key.SK, prefix) {
		return nil, nil
	}
	vendorID, ok := strings.CutPrefix(c.Key.PK, datamodel.VendorPartition(""))
	if !ok {
		return nil, nil
	}
	b, err := json.Marshal(message(vendorID, strings.TrimPrefix(c.Key.SK, prefix)))
	if err != nil {
		return nil, fmt.Errorf("jobstart: encode message: %w", err)
	}
	return []pipeline.Outgoing{{Queue: q, Body: b}}, nil
}

// Parse reads a job message of type M. A message that does not name a
// vendor and a job is an error: it is retried until the dead-letter
// queue, where operators see it.
func Parse[M Message](m queue.Message) (vendorID, id string, err error) {
	var msg M
	if err := json.Unmarshal(m.Body, &msg); err == nil {
		if vendorID, id = msg.Job(); vendorID != "" && id != "" {
			return vendorID, id, nil
		}
	}
	return "", "", fmt.Errorf("jobstart: malformed message %s: %q", m.ID, m.Body)
}
