package httpapi_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/moku/sellerapi/shared/httpapi/apitest"
	"github.com/moku/sellerapi/shared/pipeline"
	"github.com/moku/sellerapi/shared/queue"
	"github.com/moku/sellerapi/shared/store"
)

// The helpers both kinds of job (bulk operations, sync jobs) share in
// these tests: submit one, read it, make its message and run its worker.

// submitJob posts body to the vendor's jobs of resource (bulk-operations,
// sync-jobs) with token and idempotency key.
func submitJob(e *apitest.Env, resource, token, key string, body any) *apitest.Resp {
	return e.Do(apitest.Req{Method: http.MethodPost, Path: "/vendors/" + e.Vendor.ID + "/" + resource, Token: token, Body: body,
		Headers: map[string]string{"Idempotency-Key": key}})
}

// accepted decodes a submission's 202 into a B.
func accepted[B any](t *testing.T, r *apitest.Resp) B {
	t.Helper()
	if r.Status != http.StatusAccepted {
		t.Fatalf("submit: %d %s", r.Status, r.Body)
	}
	var b B
	r.JSON(t, &b)
	return b
}

// getJob reads job id of resource into a B.
func getJob[B any](t *testing.T, e *apitest.Env, resource, id string) B {
	t.Helper()
	r := e.Get("/vendors/" + e.Vendor.ID + "/" + resource + "/" + id)
	if r.Status != http.StatusOK {
		t.Fatalf("GET %s %s: %d %s", resource, id, r.Status, r.Body)
	}
	var b B
	r.JSON(t, &b)
	return b
}

// jobMessage is the message rule makes, on queue q, for the insert of the
// job at key.
func jobMessage(t testing.TB, rule pipeline.Rule, q string, key store.Key) queue.Message {
	t.Helper()
	out, err := rule(context.Background(), store.Change{Kind: store.Inserted, Key: key})
	if err != nil || len(out) != 1 || out[0].Queue != q {
		t.Fatalf("rule: %v %v", out, err)
	}
	return queue.Message{ID: "msg_" + key.SK, Queue: out[0].Queue, Body: out[0].Body, Receives: 1}
}

// handleWith calls the app's worker of queue q with m directly, as its
// Lambda would.
func handleWith(t *testing.T, e *apitest.Env, q string, m queue.Message) error {
	t.Helper()
	w, err := e.App.Work(nil, q)
	if err != nil {
		t.Fatal(err)
	}
	return w.Handle(context.Background(), m)
}
