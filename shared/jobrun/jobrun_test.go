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
	"github.com/moku/sellerapi/shared/jobstart"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/sqlite"
)

// testJob is the smallest job: records that are pending until a step
// marks them done.
type testJob struct {
	Header
	Records `json:"records"`
}

type testRecord struct {
	Status   string `json:"status"`
	Attempts int    `json:"attempts"`
}

func (r *testRecord) Progress() (*string, *int) { return &r.Status, &r.Attempts }

type Records = Rows[testRecord, *testRecord]

func (j testJob) Clone() testJob {
	j.Records = j.Records.Clone()
	return j
}
func (j *testJob) Complete(now time.Time) event.Event {
	j.Status, j.CompletedAt = "completed", &now
	return event.New(now, j.VendorID, "test_job.completed", "test_job", j.ID, nil)
}
func (j *testJob) Stop(i int, e *errs.Error) {
	for k := i; k < len(j.Records); k++ {
		j.Records[k].Status = "stopped: " + string(e.Code)
	}
}

func testKey(_, id string) store.Key { return store.Key{PK: "VENDOR#ven_1", SK: "TESTJOB#" + id} }

var testKind = Kind{Name: "test job", IDPrefix: "job", Key: testKey, Retention: time.Hour,
	Start: jobstart.Start{Prefix: "TESTJOB#", Queue: "test-jobs", IDField: "job_id"}}

// message is the queue message of job id.
func message(t *testing.T, id string) queue.Message {
	t.Helper()
	return queue.Message{ID: "msg_" + id, Queue: testKind.Queue, Body: testKind.Message("ven_1", id)}
}

type sent struct {
	body  string
	delay time.Duration
}

type recorder struct{ sent []sent }

func (r *recorder) Send(_ context.Context, _ string, body []byte, delay time.Duration) error {
	r.sent = append(r.sent, sent{string(body), delay})
	return nil
}

// fixture stores a job of n pending records and returns its runner and
// the job's id.
func fixture(t *testing.T, n int, q queue.Sender) (Runner[testJob, *testJob], store.Store, string) {
	t.Helper()
	c := clocktest.Fake(2026, 11, 22, 8, 0, 0)
	st, err := sqlite.Open(t.TempDir(), sqlite.WithClock(c.Now))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	j := testJob{Header: testKind.Header("ven_1", c.Now()), Records: make(Records, n)}
	for i := range j.Records {
		j.Records[i].Status = Pending
	}
	put, err := testKind.Insert(j.Header, j)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Transact(context.Background(), put); err != nil {
		t.Fatal(err)
	}
	r := Runner[testJob, *testJob]{Kind: testKind, Store: st, Clock: c, Log: slog.New(slog.DiscardHandler), Queue: q}
	return r, st, j.ID
}

func done(r Runner[testJob, *testJob]) Step[testJob] {
	return func(ctx context.Context, s *State[testJob], i int) error {
		return r.Write(ctx, s, func(j *testJob) { j.Records[i].Status = "done" }, nil)
	}
}

// TestRunsToCompletion: one write per record; the first starts the job,
// the last completes it with its event in the same transaction.
func TestRunsToCompletion(t *testing.T) {
	r, st, id := fixture(t, 3, nil)
	if err := r.Handle(context.Background(), message(t, id), done(r)); err != nil {
		t.Fatal(err)
	}
	j, ver, err := r.Load(context.Background(), "ven_1", id)
	if err != nil || ver != 4 || j.Status != "completed" || j.StartedAt == nil || j.CompletedAt == nil || j.Next() != -1 {
		t.Fatalf("job %+v at version %d (%v)", j, ver, err)
	}
	it, _ := st.Get(context.Background(), testKey("", id))
	if it.ExpiresAt != j.CompletedAt.Add(time.Hour).Unix() {
		t.Fatalf("expiry %d", it.ExpiresAt)
	}
	evs, err := st.Query(context.Background(), store.Query{PK: "VENDOR#ven_1", Prefix: datamodel.EventPrefix, Limit: 10})
	if err != nil || len(evs) != 1 {
		t.Fatalf("%d completion events (%v), want 1", len(evs), err)
	}
	// A job that is gone, or finished, is a message done.
	if err := r.Handle(context.Background(), message(t, "job_2"), done(r)); err != nil {
		t.Fatalf("gone job: %v", err)
	}
	if err := r.Handle(context.Background(), message(t, id), done(r)); err != nil {
		t.Fatalf("finished job: %v", err)
	}
}

// TestWriteReloadsAMovedJob: a write against a stale version reads the job
// again and says so, and the run goes on from the job as it is.
func TestWriteReloadsAMovedJob(t *testing.T) {
	r, _, id := fixture(t, 2, nil)
	ctx := context.Background()
	j, ver, _ := r.Load(ctx, "ven_1", id)
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
	if err := r.Handle(ctx, message(t, id), step); err != nil || !slices.Equal(steps, []int{1}) {
		t.Fatalf("steps %v (%v), want [1]", steps, err)
	}
}

// TestRetryCountsAndContinues: a failed attempt is counted on the job and
// the job continues in a fresh, delayed message; without a queue the
// message itself is retried after the same delay.
func TestRetryCountsAndContinues(t *testing.T) {
	q := &recorder{}
	r, _, id := fixture(t, 1, q)
	ctx := context.Background()
	cause := errs.Unavailablef(errors.New("store down"), "down")
	fail := func(ctx context.Context, s *State[testJob], i int) error { return r.Retry(ctx, s, i, cause) }
	for n := 1; n <= 2; n++ {
		if err := r.Handle(ctx, message(t, id), fail); err != nil {
			t.Fatalf("attempt %d: %v", n, err)
		}
		j, _, _ := r.Load(ctx, "ven_1", id)
		if j.Records[0].Attempts != n || len(q.sent) != n || q.sent[n-1] != (sent{string(message(t, id).Body), Backoff(n)}) {
			t.Fatalf("attempt %d: record %+v, sent %+v", n, j.Records[0], q.sent)
		}
	}
	r.Queue = nil
	err := r.Handle(ctx, message(t, id), fail)
	if d, ok := queue.DelayOf(err); !ok || d != Backoff(3) || !errors.Is(err, cause) {
		t.Fatalf("without a queue: %v", err)
	}
	if Backoff(0) != time.Second || Backoff(3) != 8*time.Second || Backoff(10) != time.Minute {
		t.Fatalf("backoff %v %v %v", Backoff(0), Backoff(3), Backoff(10))
	}
}

// TestStopsAtSpentAttemptsAndLostCredentials: before each record the
// runner stops a job whose record spent its attempts, or whose credential
// no longer holds; a fault while rechecking costs an attempt instead.
func TestStopsAtSpentAttemptsAndLostCredentials(t *testing.T) {
	ctx := context.Background()
	never := func(context.Context, *State[testJob], int) error { t.Fatal("a step ran"); return nil }
	cases := map[string]struct {
		recheck  error
		attempts int
		want     string // record 0's status after one message
	}{
		"attempts spent":     {attempts: 2, want: "stopped: " + string(errs.CodeServiceUnavailable)},
		"credential revoked": {recheck: errs.E(errs.CodeUnauthenticated, "revoked"), want: "stopped: " + string(errs.CodeUnauthenticated)},
		"recheck failed":     {recheck: errs.Unavailablef(errors.New("down"), "down"), want: Pending},
	}
	for name, c := range cases {
		r, _, id := fixture(t, 2, &recorder{})
		r.Kind.MaxAttempts, r.Kind.Exhausted = 2, "%d attempts"
		r.Recheck = func(context.Context, testJob) error { return c.recheck }
		if c.attempts > 0 {
			j, ver, _ := r.Load(ctx, "ven_1", id)
			if err := r.Write(ctx, &State[testJob]{Job: j, Version: ver}, func(j *testJob) { j.Records[0].Attempts = c.attempts }, nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := r.Handle(ctx, message(t, id), never); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		j, _, _ := r.Load(ctx, "ven_1", id)
		if j.Records[0].Status != c.want || (c.want == Pending) == j.Finished() {
			t.Fatalf("%s: job %+v", name, j)
		}
		if c.want == Pending && j.Records[0].Attempts != 1 {
			t.Fatalf("%s: %d attempts counted, want 1", name, j.Records[0].Attempts)
		}
	}
}

// TestRowsTally: the records the runner reads through Progress.
func TestRowsTally(t *testing.T) {
	rs := Records{{Status: "done"}, {Status: Pending}, {Status: "done"}}
	if rs.Next() != 1 || rs.Len() != 3 || rs.Tally()["done"] != 2 || rs.Tally()[Pending] != 1 {
		t.Fatalf("next %d, tally %v", rs.Next(), rs.Tally())
	}
	c := rs.Clone()
	c[1].Status = "done"
	*c.Attempts(0) = 3
	if rs[1].Status != Pending || rs[0].Attempts != 0 || c.Next() != -1 {
		t.Fatalf("the clone shares records: %+v", rs)
	}
}
