package event_test

import (
	"context"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/clock/clocktest"
	"github.com/moku/sellerapi/shared/datamodel"
	dt "github.com/moku/sellerapi/shared/domaintest"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/sqlite"
)

// TestTypesMatchTheDocs: the types in code are exactly those
// docs/events.md describes, each once, each `<resource>.<past_tense>`.
func TestTypesMatchTheDocs(t *testing.T) {
	doc, err := os.ReadFile("../../docs/events.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| (`[a-z_]+\\.[a-z_]+`(?: / `[a-z_]+\\.[a-z_]+`)*) \\|")
	name := regexp.MustCompile("`([a-z_]+\\.[a-z_]+)`")
	var documented []string
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		for _, n := range name.FindAllStringSubmatch(m[1], -1) {
			documented = append(documented, n[1])
		}
	}
	code := append([]string(nil), event.Types()...)
	seen := map[string]bool{}
	for _, typ := range code {
		if seen[typ] {
			t.Errorf("%s listed twice in Types()", typ)
		}
		seen[typ] = true
		if !event.Known(typ) {
			t.Errorf("Known(%s) = false", typ)
		}
	}
	sort.Strings(code)
	sort.Strings(documented)
	if strings.Join(code, " ") != strings.Join(documented, " ") {
		t.Errorf("Types() and docs/events.md differ:\ncode: %v\ndocs: %v", code, documented)
	}
	if event.Known("product.deleted") || event.Known("*") {
		t.Error("Known accepts a type the service never emits")
	}
}

// TestNewAndOp: an event names its resource and vendor, carries data (never
// null), and its outbox item expires after the 90-day retention.
func TestNewAndOp(t *testing.T) {
	now := clocktest.Date(2026, 8, 6, 14, 0, 0)
	e := event.New(now, "ven_1", event.ProductCreated, "product", "prd_1", nil)
	if e.Data == nil || e.VendorID != "ven_1" || e.Resource != (event.Resource{Type: "product", ID: "prd_1"}) || !e.CreatedAt.Equal(now) {
		t.Fatalf("event %+v", e)
	}
	if !strings.HasPrefix(e.ID, "evt_") {
		t.Fatalf("id %q", e.ID)
	}
	later := event.New(now.Add(time.Millisecond), "ven_1", event.ProductUpdated, "product", "prd_1", nil)
	if !(e.ID < later.ID) {
		t.Fatalf("ids do not sort in creation order: %s, %s", e.ID, later.ID)
	}
	op, err := event.Op(e)
	if err != nil {
		t.Fatal(err)
	}
	if op.Kind != store.OpPut || !op.Cond.Absent || op.Item.Key() != datamodel.EventKey("ven_1", e.ID) {
		t.Fatalf("op %+v", op)
	}
	if want := now.Add(90 * 24 * time.Hour).Unix(); op.Item.ExpiresAt != want {
		t.Fatalf("expires at %d, want %d (90 days)", op.Item.ExpiresAt, want)
	}
	back, err := event.Decode(op.Item)
	if err != nil || back.ID != e.ID || back.Type != e.Type || !back.CreatedAt.Equal(now) {
		t.Fatalf("decoded %+v %v", back, err)
	}
}

// TestLog: newest first, filtered by type, paged; unknown ids are 404.
func TestLog(t *testing.T) {
	ctx := context.Background()
	c := clocktest.Fake(2026, 8, 6, 14, 0, 0)
	st, err := sqlite.Open(t.TempDir(), sqlite.WithClock(c.Now))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var ids []string
	for i, typ := range []string{event.ProductCreated, event.ProductUpdated, event.ProductCreated, event.ProductPublished} {
		e := event.New(c.Now(), "ven_1", typ, "product", "prd_1", map[string]any{"n": i})
		op, _ := event.Op(e)
		if err := st.Transact(ctx, op); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, e.ID)
		c.Advance(time.Second)
	}
	other, _ := event.Op(event.New(c.Now(), "ven_2", event.ProductCreated, "product", "prd_9", nil))
	if err := st.Transact(ctx, other); err != nil {
		t.Fatal(err)
	}
	log := event.Log{Store: st}
	got := dt.Walk(t, func(after string) (store.PageOf[event.Event], error) { return log.List(ctx, "ven_1", "", after, 3) },
		func(e event.Event) string { return e.ID })
	if want := []string{ids[3], ids[2], ids[1], ids[0]}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("listed %v, want newest first %v", got, want)
	}
	page, err := log.List(ctx, "ven_1", event.ProductCreated, "", 10)
	if err != nil || len(page.Items) != 2 || page.Items[0].ID != ids[2] || page.Items[1].ID != ids[0] {
		t.Fatalf("filtered by type: %+v %v", page.Items, err)
	}
	if _, err := log.List(ctx, "ven_1", "", "PRODUCT#x", 10); !errs.Is(err, errs.CodeInvalidCursor) {
		t.Fatalf("foreign cursor: %v", err)
	}
	if e, err := log.Get(ctx, "ven_1", ids[1]); err != nil || e.Type != event.ProductUpdated {
		t.Fatalf("get: %+v %v", e, err)
	}
	for _, id := range []string{"", "evt_nope", "a#b", "a/b", strings.Repeat("e", 129)} {
		if _, err := log.Get(ctx, "ven_1", id); !errs.Is(err, errs.CodeNotFound) {
			t.Errorf("get %q: %v", id, err)
		}
	}
	// Another vendor's event is not found in this vendor's log.
	if _, err := log.Get(ctx, "ven_1", strings.TrimPrefix(other.Item.SK, datamodel.EventPrefix)); !errs.Is(err, errs.CodeNotFound) {
		t.Errorf("another vendor's event: %v", err)
	}
}
