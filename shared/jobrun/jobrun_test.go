package jobrun

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/clock/clocktest"
	"github.com/moku/sellerapi/shared/datamodel"

	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/sqlite"
)

// testJob is the smallest job: records that are pending until a step
// marks them done.
type testJob struct {
	Header
	Records []testRecord `json:"records"`
}

type testRecord struct {
	Status   string `json:"status"`
	Attempts int    `json:"attempts"`
}

func (j testJob) Len() int { return len(j.Records) }
func (j testJob) Next() int {
	return slices.IndexFunc(j.Records, func(r testRecord) bool { return r.Status == "pending" })
}
func (j *testJob) Attempts(i int) *int { return &j.Records[i].Attempts }
func (j testJob) Clone() testJob {
	j.Records = slices.Clone(j.Records)
	return j
}
func (j *testJob) Complete(now time.Time) event.Event {
	j.Status, j.CompletedAt = "completed", &now
	return event.New(now, j.VendorID, "test_job.completed", "test_job", j.ID, nil)
}
func (j testJob) Item(version int64) (store.Item, error) {
	return j.Header.Encode(j, testKey(j.ID), version, time.Hour)
}

func testKey(id string) store.Key { return store.Key{PK: "VENDOR#ven_1", SK: "TESTJOB#" + id} }

type sent struct {
	body  string
	delay time.Duration
}

type recorder struct{ sent []sent }

func (r *recorder) Send(_ context.Context, _ string, body []byte, delay time.Duration) error {
	r.sent = append(r.sent, sent{string(body), delay})
	return nil
}

// fixture stores a job of n pending records and returns its runner.
func fixture(t *testing.T, n int, q queue.Sender) (Runner[testJob, *testJob], store.Store) {
	t.Helper()
	c := clocktest.Fake(2026, 11, 22, 8, 0, 0)
	st, err := sqlite.Open(t.TempDir(), sqlite.WithClock(c.Now))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	j := testJob{Header: Header{ID: "job_1", VendorID: "ven_1", Status: "queued", CreatedAt: c.Now()}, Records: make([]testRecord, n)}
	for i := range j.Records {
		j.Records[i].Status = "pending"
	}
	it, err := j.Item(1)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Transact(context.Background(), store.Put(it, store.IfAbsent())); err != nil {
		t.Fatal(err)
	}
	r := Runner[testJob, *testJob]{Store: st, Clock: c, Log: slog.New(slog.DiscardHandler), Queue: q, QueueName: "test-jobs",
		Load: func(ctx context.Context, vendorID, id string) (testJob, int64, error) {
			if id != "job_1" {
				return testJob{}, 0, errs.E(errs.CodeNotFound, "no such job")
			}
			return Load[testJob](ctx, st, testKey(id), errs.E(errs.CodeNotFound, "no such job"), "test job")
		}}
	return r, st
}

func done(r Runner[testJob, *testJob]) Step[testJob] {
	return func(ctx context.Context, s *State[testJob], i int) error {
		return r.Write(ctx, s, func(j *testJob) { j.Records[i].Status = "done" }, nil)
	}
}

// TestRunsToCompletion: one write per record; the first starts the job,
// the last completes it with its event in the same transaction.
func TestRunsToCompletion(t *testing.T) {
	r, st := fixture(t, 3, nil)
	if err := r.Handle(context.Background(), []byte("m"), "ven_1", "job_1", done(r)); err != nil {
		t.Fatal(err)
	}
	j, ver, err := r.Load(context.Background(), "ven_1", "job_1")
	if err != nil || ver != 4 || j.Status != "completed" || j.StartedAt == nil || j.CompletedAt == nil || j.Next() != -1 {
		t.Fatalf("job %+v at version %d (%v)", j, ver, err)
	}
	it, _ := st.Get(context.Background(), testKey("job_1"))
	if it.ExpiresAt != j.CompletedAt.Add(time.Hour).Unix() {
		t.Fatalf("expiry %d", it.ExpiresAt)
	}
	evs, err := st.Query(context.Background(), store.Query{PK: "VENDOR#ven_1", Prefix: datamodel.EventPrefix, Limit: 10})
	if err != nil || len(evs) != 1 {
		t.Fatalf("%d completion events (%v), want 1", len(evs), err)
	}
	// A job that is gone, or finished, is a message done.
	if err := r.Handle(context.Background(), []byte("m"), "ven_1", "job_2", done(r)); err != nil {
		t.Fatalf("gone job: %v", err)
	}
	if err := r.Handle(context.Background(), []byte("m"), "ven_1", "job_1", done(r)); err != nil {
		t.Fatalf("finished job: %v", err)
	}
}

// TestWriteReloadsAMovedJob: a write against a stale version reads the job
// again and says so, and the run goes on from the job as it is.
func TestWriteReloadsAMovedJob(t *testing.T) {
	r, _ := fixture(t, 2, nil)
	ctx := context.Background()
	j, ver, _ := r.Load(ctx, "ven_1", "job_1")
	stale := &State[testJob]{Job: j, Version: ver}
	fresh := &State[testJob]{Job: j.Clone(), Version: ver}
	if err := r.Write(ctx, fresh, func(j *testJob) { j.Records[0].Status = "done" }, nil); err != nil {
		t.Fatal(err)
	}
	err := r.Write(ctx, stale, func(j *testJob) { j.Records[0].Status = "done" }, nil)
	if !errors.Is(err, ErrReload) || stale.Version != 2 || stale.Job.Records[0].Status != "done" {
		t.Fatalf("stale write: %v, state %+v at %d", err, stale.Job.Records, stale.Version)
	}
	// The step that lost the race is not repeated: the run starts from the
	// first pending record.
	var steps []int
	step := func(ctx context.Context, s *State[testJob], i int) error {
		steps = append(steps, i)
		return done(r)(ctx, s, i)
	}
	if err := r.Handle(ctx, []byte("m"), "ven_1", "job_1", step); err != nil || !slices.Equal(steps, []int{1}) {
		t.Fatalf("steps %v (%v), want [1]", steps, err)
	}
}

// TestRetryCountsAndContinues: a failed attempt is counted on the job and
// the job continues in a fresh, delayed message; without a queue the
// message itself is retried after the same delay.
func TestRetryCountsAndContinues(t *testing.T) {
	q := &recorder{}
	r, _ := fixture(t, 1, q)
	ctx := context.Background()
	cause := errs.Unavailablef(errors.New("store down"), "down")
	fail := func(ctx context.Context, s *State[testJob], i int) error { return r.Retry(ctx, s, i, cause) }
	for n := 1; n <= 2; n++ {
		if err := r.Handle(ctx, []byte("body"), "ven_1", "job_1", fail); err != nil {
			t.Fatalf("attempt %d: %v", n, err)
		}
		j, _, _ := r.Load(ctx, "ven_1", "job_1")
		if j.Records[0].Attempts != n || len(q.sent) != n || q.sent[n-1] != (sent{"body", Backoff(n)}) {
			t.Fatalf("attempt %d: record %+v, sent %+v", n, j.Records[0], q.sent)
		}
	}
	r.Queue = nil
	err := r.Handle(ctx, []byte("body"), "ven_1", "job_1", fail)
	if d, ok := queue.DelayOf(err); !ok || d != Backoff(3) || !errors.Is(err, cause) {
		t.Fatalf("without a queue: %v", err)
	}
	if Backoff(0) != time.Second || Backoff(3) != 8*time.Second || Backoff(10) != time.Minute {
		t.Fatalf("backoff %v %v %v", Backoff(0), Backoff(3), Backoff(10))
	}
}
