package jobstart

import (
	"testing"

	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/store"
)

var start = Start{Prefix: datamodel.BulkPrefix, Queue: "q", IDField: "job_id"}

func TestRuleSendsOneMessagePerInsertedJob(t *testing.T) {
	k := datamodel.BulkKey("ven_1", "bop_1")
	out, err := start.Rule(store.Change{Kind: store.Inserted, Key: k})
	if err != nil || len(out) != 1 || out[0].Queue != "q" || string(out[0].Body) != `{"vendor_id":"ven_1","job_id":"bop_1"}` {
		t.Fatalf("insert: %+v, %v", out, err)
	}
	for name, c := range map[string]store.Change{
		"a later write of the job": {Kind: store.Modified, Key: k},
		"another record":           {Kind: store.Inserted, Key: datamodel.SyncJobKey("ven_1", "syn_1")},
		"outside a vendor":         {Kind: store.Inserted, Key: store.Key{PK: "META", SK: datamodel.BulkPrefix + "x"}},
	} {
		if out, err := start.Rule(c); err != nil || len(out) != 0 {
			t.Errorf("%s: %+v, %v", name, out, err)
		}
	}
}

// TestMessageRoundTrips: what Message writes, Parse reads back, ids that
// need escaping included.
func TestMessageRoundTrips(t *testing.T) {
	for _, id := range []string{"bop_1", `a"b\c`, "é\u2028\x00"} {
		v, got, err := start.Parse(queue.Message{Body: start.Message("ven_1", id)})
		if err != nil || v != "ven_1" || got != id {
			t.Errorf("%q: read back %q %q (%v)", id, v, got, err)
		}
	}
}

func TestParseRefusesMessagesThatNameNoJob(t *testing.T) {
	v, id, err := start.Parse(queue.Message{ID: "m1", Body: []byte(`{"vendor_id":"ven_1","job_id":"bop_1"}`)})
	if err != nil || v != "ven_1" || id != "bop_1" {
		t.Fatalf("good message: %q %q %v", v, id, err)
	}
	for _, body := range []string{``, `{`, `{}`, `{"vendor_id":"ven_1"}`, `{"job_id":"bop_1"}`, `[]`, `null`,
		`{"vendor_id":"ven_1","job_id":null}`, `{"vendor_id":"ven_1","job_id":7}`, `{"vendor_id":"ven_1","bulk_operation_id":"bop_1"}`} {
		if _, _, err := start.Parse(queue.Message{ID: "m1", Body: []byte(body)}); err == nil {
			t.Errorf("%q: accepted", body)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"vendor_id":"ven_1","job_id":"bop_1"}`))
	f.Add([]byte(`{"vendor_id":"ven_1","job_id":null}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		v, id, err := start.Parse(queue.Message{Body: body})
		if err == nil && (v == "" || id == "") {
			t.Fatalf("accepted a message naming no job: %q", body)
		}
	})
}
