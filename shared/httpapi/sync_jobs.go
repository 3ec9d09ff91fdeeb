package httpapi

import (
	"context"
	"net/http"

	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/idempotency"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/syncjob"
)

// SyncJobs is the Sync jobs group: a connector's reports of one
// connection's channel, accepted at once and compared with the source of
// truth by the sync worker. The store plugin's own routes live in the
// store-pairings group.
var SyncJobs = Group{Name: "sync-jobs", Routes: func(s *Server) []Route {
	base := "/vendors/{vendor_id}/sync-jobs"
	read := []auth.Scope{auth.JobsRead}
	return []Route{
		{Method: http.MethodGet, Path: base, Operation: "listSyncJobs", Scopes: read, PageAhead: pageAhead(datamodel.SyncJobPrefix, false), Handle: s.listSyncJobs},
		{Method: http.MethodPost, Path: base, Operation: "createSyncJob", Scopes: []auth.Scope{auth.JobsWrite, auth.ConnectionsWrite}, Handle: s.createSyncJob},
		{Method: http.MethodGet, Path: base + "/{sync_job_id}", Operation: "getSyncJob", Scopes: read, Handle: s.getSyncJob},
	}
}}

// createSyncJob stores the job with its receipt and answers 202: the
// comparison happens later, in the worker. The whole job is checked first;
// any structural error rejects it before anything is stored.
func (s *Server) createSyncJob(ctx context.Context, c *Call) error {
	body, err := c.Body(syncjob.MaxBody)
	if err != nil {
		return err
	}
	sub, err := syncjob.Parse(body, true)
	if err != nil {
		return err
	}
	if err := c.requireJobScope(sub.Kind); err != nil {
		return err
	}
	by := syncjob.StartedBy{Type: syncjob.StartedByToken, ID: c.Principal.Token.ID}
	return c.Mutate(ctx, "sync_jobs.create", idempotency.ConnectionKeyPattern, body, s.prepareSyncJob(c.syncJobs(), c.Principal.Vendor.ID, by, sub))
}

func (s *Server) prepareSyncJob(svc syncjob.Service, vendorID string, by syncjob.StartedBy, sub syncjob.Submission) func(context.Context) (idempotency.Mutation, error) {
	return answer(http.StatusAccepted, func(ctx context.Context) (store.Prepared[syncjob.View], error) {
		return svc.PrepareCreate(ctx, vendorID, by, sub)
	})
}

func (s *Server) getSyncJob(ctx context.Context, c *Call) error {
	v, err := c.syncJobs().Get(ctx, c.Principal.Vendor.ID, "", c.R.PathValue("sync_job_id"))
	if err != nil {
		return err
	}
	return c.Data(ctx, http.StatusOK, v)
}

func (s *Server) listSyncJobs(ctx context.Context, c *Call) error {
	q := c.R.URL.Query()
	f := syncjob.Filter{ConnectionID: q.Get("connection_id"), Kind: q.Get("kind"), Status: q.Get("status")}
	return listedBy(ctx, c, "sync-jobs", "connection_id="+f.ConnectionID+"&kind="+f.Kind+"&status="+f.Status, f, c.syncJobs().List)
}

// createPluginSyncJob is the store plugin's create: the pairing must pass
// the operational gate, which names the connection the job is for. The
// receipt is scoped to the pairing, as a token's is to the token.
func (s *Server) createPluginSyncJob(ctx context.Context, c *Call) error {
	body, err := c.Body(syncjob.MaxBody)
	if err != nil {
		return err
	}
	sub, err := syncjob.Parse(body, false)
	if err != nil {
		return err
	}
	connID, err := c.pairings().AuthorizeOperationalWrite(ctx, c.Discovery)
	if err != nil {
		return err
	}
	sub.ConnectionID = connID
	by := syncjob.StartedBy{Type: syncjob.StartedByPairing, ID: c.Discovery.PairingID}
	return c.mutateIn(ctx, pluginScope(c), "sync_jobs.create", idempotency.ConnectionKeyPattern, body, s.prepareSyncJob(c.syncJobs(), c.Discovery.VendorID, by, sub))
}

// getPluginSyncJob reads a job of the pairing's own connection; any other
// is 404.
func (s *Server) getPluginSyncJob(ctx context.Context, c *Call) error {
	connID, err := c.pairings().AuthorizeOperationalWrite(ctx, c.Discovery)
	if err != nil {
		return err
	}
	v, err := c.syncJobs().Get(ctx, c.Discovery.VendorID, connID, c.R.PathValue("sync_job_id"))
	if err != nil {
		return err
	}
	return c.Data(ctx, http.StatusOK, v)
}
