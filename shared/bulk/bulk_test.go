package bulk

import (
	"context"
	"testing"

	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/store"
)

func TestRuleStartsEachJobOnce(t *testing.T) {
	job := datamodel.BulkKey("ven_1", "bop_1")
	cases := []struct {
		name string
		c    store.Change
		want int
	}{
		{"job inserted", store.Change{Kind: store.Inserted, Key: job}, 1},
		{"job results written", store.Change{Kind: store.Modified, Key: job}, 0},
		{"job expired", store.Change{Kind: store.Removed, Key: job}, 0},
		{"other item", store.Change{Kind: store.Inserted, Key: store.Key{PK: "VENDOR#ven_1", SK: "EVENT#evt_1"}}, 0},
		{"not a vendor partition", store.Change{Kind: store.Inserted, Key: store.Key{PK: "META", SK: "BULK#x"}}, 0},
	}
	for _, c := range cases {
		out, err := Rule(context.Background(), c.c)
		if err != nil || len(out) != c.want {
			t.Fatalf("%s: %v %v, want %d messages", c.name, out, err, c.want)
		}
		if c.want == 1 {
			if string(out[0].Body) != `{"vendor_id":"ven_1","bulk_operation_id":"bop_1"}` || out[0].Queue != queue.BulkOperations {
				t.Fatalf("%s: message %s to %s", c.name, out[0].Body, out[0].Queue)
			}
		}
	}
}

// TestOutcome is the final status of a job by its records' results.
func TestOutcome(t *testing.T) {
	cases := []struct {
		records []string
		want    string
	}{
		{[]string{RecordSucceeded, RecordSucceeded}, StatusCompleted},
		{[]string{RecordSucceeded, RecordFailed}, StatusCompletedWithErrors},
		{[]string{RecordFailed, RecordFailed}, StatusFailed},
		{[]string{RecordSucceeded, RecordUnknown, RecordNotAttempted}, StatusFailed},
		{[]string{RecordUnknown}, StatusFailed},
		{[]string{RecordSucceeded, RecordFailed, RecordUnknown}, StatusFailed},
	}
	for _, c := range cases {
		var j Job
		for _, s := range c.records {
			j.Records = append(j.Records, Record{Result: Result{Status: s}})
		}
		if got := j.outcome(); got != c.want {
			t.Errorf("%v: %s, want %s", c.records, got, c.want)
		}
	}
}
