package main

import (
	"context"
	"testing"

	"github.com/moku/sellerapi/shared/config"
	"github.com/moku/sellerapi/shared/deployhook"
	"github.com/moku/sellerapi/shared/httpapi"
)

// The hook reads its plan and, behind the edge, the edge's secret from the
// environment the stack gives it; a missing or broken plan fails init.
func TestNewHookReadsTheStacksEnvironment(t *testing.T) {
	t.Setenv("AWS_REGION", "us-east-1")
	env := map[string]string{
		deployhook.EnvPlan:   `{"sellerapi-prod-vendors":{"kind":"api","method":"GET","path":"/v1/vendors/smoke"}}`,
		config.EnvEdgeSecret: "0123456789abcdef0123456789abcdef",
	}
	h, err := newHook(context.Background(), func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if h.Plan["sellerapi-prod-vendors"].Kind != deployhook.KindAPI || h.EdgeHeader != httpapi.EdgeHeader || h.EdgeSecret != env[config.EnvEdgeSecret] {
		t.Errorf("hook %+v", h)
	}
	delete(env, deployhook.EnvPlan)
	if _, err := newHook(context.Background(), func(k string) string { return env[k] }); err == nil {
		t.Error("no plan: init succeeded")
	}
}
