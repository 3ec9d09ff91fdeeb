package jobstart

import (
	"testing"

	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/store"
)

type msg struct {
	VendorID string `json:"vendor_id"`
	ID       string `json:"job_id"`
}

func (m msg) Job() (string, string) { return m.VendorID, m.ID }

func newMsg(vendorID, id string) Message { return msg{VendorID: vendorID, ID: id} }

func TestRuleSendsOneMessagePerInsertedJob(t *testing.T) {
	k := datamodel.BulkKey("ven_1", "bop_1")
	out, err := Rule(store.Change{Kind: store.Inserted, Key: k}, datamodel.BulkPrefix, "q", newMsg)
	if err != nil || len(out) != 1 || out[0].Queue != "q" || string(out[0].Body) != `{"vendor_id":"ven_1","job_id":"bop_1"}` {
		t.Fatalf("insert: %+v, %v", out, err)
	}
	for name, c := range map[string]store.Change{
		"a later write of the job": {Kind: store.Modified, Key: k},
		"another record":           {Kind: store.Inserted, Key: datamodel.SyncJobKey("ven_1", "syn_1")},
		"outside a vendor":         {Kind: store.Inserted, Key: store.Key{PK: "META", SK: datamodel.BulkPrefix + "x"}},
	} {
		if out, err := Rule(c, datamodel.BulkPrefix, "q", newMsg); err != nil || len(out) != 0 {
			t.Errorf("%s: %+v, %v", name, out, err)
		}
	}
}

func TestParseRefusesMessagesThatNameNoJob(t *testing.T) {
	v, id, err := Parse[msg](queue.Message{ID: "m1", Body: []byte(`{"vendor_id":"ven_1","job_id":"bop_1"}`)})
	if err != nil || v != "ven_1" || id != "bop_1" {
		t.Fatalf("good message: %q %q %v", v, id, err)
	}
	for _, body := range []string{``, `{`, `{}`, `{"vendor_id":"ven_1"}`, `{"job_id":"bop_1"}`, `[]`} {
		if _, _, err := Parse[msg](queue.Message{ID: "m1", Body: []byte(body)}); err == nil {
			t.Errorf("%q: accepted", body)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"vendor_id":"ven_1","job_id":"bop_1"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		v, id, err := Parse[msg](queue.Message{Body: body})
		if err == nil && (v == "" || id == "") {
			t.Fatalf("accepted a message naming no job: %q", body)
		}
	})
}
