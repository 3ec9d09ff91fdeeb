package httpapi_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/httpapi/apitest"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/store/sqlite"
)

// recordingStore remembers the operations of the last transaction.
type recordingStore struct {
	store.Store
	mu   sync.Mutex
	last []store.Op
}

func (r *recordingStore) Transact(ctx context.Context, ops ...store.Op) error {
	r.mu.Lock()
	r.last = append([]store.Op(nil), ops...)
	r.mu.Unlock()
	return r.Store.Transact(ctx, ops...)
}

// bareServer is op's baseline: it runs op once on the embedded API to learn
// what it answers (and, for a write, which rows its transaction writes),
// then serves that from a bare net/http handler, writing the same rows in
// one SQLite transaction per request for a write. It returns the requests
// to send it.
func bareServer(b *testing.B, op benchOp) func(w, i int) *http.Request {
	b.Helper()
	rec := &recordingStore{}
	e, _ := benchEnv(b, apitest.SQLite, func(s store.Store) store.Store { rec.Store = s; return rec })
	req := op.setup(b, e)
	rec.last = nil
	res, err := http.DefaultClient.Do(req(0, 1<<30))
	if err != nil {
		b.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != op.status {
		b.Fatalf("%s: %d %s", op.name, res.StatusCode, body)
	}
	var h http.HandlerFunc
	if rec.last == nil {
		h = func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write(body)
		}
	} else {
		h = bareTransaction(b, rec.last, body, op.status)
	}
	srv := httptest.NewServer(h)
	b.Cleanup(srv.Close)
	return func(int, int) *http.Request {
		r, _ := http.NewRequest(http.MethodPost, srv.URL+"/bare", strings.NewReader(`{}`))
		return r
	}
}

// bareTransaction is a handler that writes ops' rows (items and change-log
// entries) in one IMMEDIATE transaction on a SQLite file of the embedded
// store's schema, reading each row first as a condition would, and answers
// body. Items created under IfAbsent get a fresh key per request.
func bareTransaction(b *testing.B, ops []store.Op, body []byte, status int) http.HandlerFunc {
	s, err := sqlite.Open(b.TempDir(), sqlite.WithClock(clock.System{}.Now))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	db := s.DB()
	var n atomic.Int64
	return func(w http.ResponseWriter, r *http.Request) {
		if err := bareWrite(r.Context(), db, ops, strconv.FormatInt(n.Add(1), 10)); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write(body)
	}
}

func bareWrite(ctx context.Context, db *sql.DB, ops []store.Op, suffix string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, op := range ops {
		it := op.Item
		if op.Cond.Absent {
			it.SK += "#" + suffix
		}
		var old []byte
		err := tx.QueryRowContext(ctx, `SELECT d FROM items WHERE pk = ? AND sk = ?`, it.PK, it.SK).Scan(&old)
		if err != nil && err != sql.ErrNoRows {
			return err
		}
		if op.Kind == store.OpCheck {
			continue
		}
		nums, _ := json.Marshal(it.Nums)
		if _, err := tx.ExecContext(ctx, `INSERT INTO items (pk, sk, v, d, n, ttl) VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (pk, sk) DO UPDATE SET v = excluded.v, d = excluded.d, n = excluded.n, ttl = excluded.ttl`,
			it.PK, it.SK, it.Version, it.Data, string(nums), it.ExpiresAt); err != nil {
			return err
		}
		newJSON, _ := json.Marshal(it)
		if _, err := tx.ExecContext(ctx, `INSERT INTO changes (kind, pk, sk, new, old) VALUES (?, ?, ?, ?, ?)`,
			"MODIFY", it.PK, it.SK, newJSON, old); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// reportRSS reports the process's resident memory: the server, its store
// and the benchmark's clients, which share the process.
func reportRSS(b *testing.B) {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb float64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), &kb)
			b.ReportMetric(kb/1024, "rss-MB")
		}
	}
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
