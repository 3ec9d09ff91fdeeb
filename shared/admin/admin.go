// Package admin is vendor, token and store-pairing administration as one JSON request in
// and one JSON answer out: the admin Lambda's handler, invoked with IAM only
// (never routed from the HTTP API). Each action is the local binary's
// subcommand of the same name and answers with the JSON that subcommand
// prints; the rules are the vendor and auth services', not repeated here.
//
//	{"action":"vendor.create","name":"Acme Goods","slug":"acme-goods"}
//	{"action":"vendor.set-owner","id":"ven_...","owner":"usr_..."}      (owner optional)
//	{"action":"token.issue","vendor":"ven_...","scopes":"all","expires_in":"720h"}
//	{"action":"token.revoke","id":"tok_..."}
//	{"action":"pairing.review","id":"pair_...","reviewer":"ops@example.com"}  (reviewer optional)
//	{"action":"cursor-key.rotate"}
//	{"action":"store.check","vendor":"ven_..."}                        (vendor optional)
//	{"action":"webhook-secrets.seal"}
//	{"action":"webhook-subscriptions.recount"}
//
// A deployed stage's admin function sets MaxTokenLifetime: there,
// token.issue names its scopes (a list, or "all" spelled out) and an
// expires_in no longer than the maximum, so that no token is issued with
// every scope and no end by omission. The local binary keeps its defaults.
// Every action is logged with what it acted on, never a token's secret.
//
// A request the services refuse (invalid, unknown vendor, taken slug)
// answers {"error":{"code":...,"detail":...}} as a successful invocation, as
// the API answers 4xx; only a failure of the service itself (store
// unavailable, a bug) is an invocation error, which the function's errors
// alarm counts.
package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/moku/sellerapi/shared/account"
	"github.com/moku/sellerapi/shared/auth"
	"github.com/moku/sellerapi/shared/catalog"
	"github.com/moku/sellerapi/shared/clock"
	"github.com/moku/sellerapi/shared/cursor"
	"github.com/moku/sellerapi/shared/envelope"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/pairing"
	"github.com/moku/sellerapi/shared/store"
	"github.com/moku/sellerapi/shared/webhook"
)

// The actions.
const (
	VendorCreate   = "vendor.create"
	VendorSetOwner = "vendor.set-owner"
	TokenIssue     = "token.issue"
	TokenRevoke    = "token.revoke"
	// PairingReview activates an accepted store pairing: only then may the
	// store plugin make operational writes.
	PairingReview = "pairing.review"
	// CursorKeyRotate makes a new page-cursor key that signs from now on;
	// cursors signed with the key before it keep working until the next
	// rotation (package cursor, Keyring.Rotate).
	CursorKeyRotate = "cursor-key.rotate"
	// StoreCheck reads the store as the API does, changing nothing: what
	// scripts/restore-drill runs on a restored table, and an operator
	// after cutting over to it (Check).
	StoreCheck = "store.check"
	// WebhookSecretsSeal seals every webhook signing secret still stored
	// in the clear (from before issue 29), once, after the deployment
	// that seals secrets: each write seals its own, this the rest.
	WebhookSecretsSeal = "webhook-secrets.seal"
	// WebhookSubscriptionsRecount completes the per-type subscription
	// counts of every vendor whose count item an older build wrote
	// (before issue 26's pending markers followed them), once, after the
	// deployment that keeps them (webhook.Service.Recount).
	WebhookSubscriptionsRecount = "webhook-subscriptions.recount"
)

// Request is one administrative action; each action reads the fields its
// CLI subcommand takes as flags, of the same names.
type Request struct {
	Action string `json:"action"`
	// vendor.create
	Name string `json:"name,omitempty"`
	Slug string `json:"slug,omitempty"`
	// vendor.set-owner, token.revoke and pairing.review
	ID string `json:"id,omitempty"`
	// pairing.review: who reviewed; empty means "admin"
	Reviewer string `json:"reviewer,omitempty"`
	// vendor.set-owner; empty means a fresh owner
	Owner string `json:"owner,omitempty"`
	// token.issue, and store.check (optional: the vendor to read; default
	// the first): scopes are comma-separated or "all" (the default);
	// expires_in is a Go duration such as "720h", empty for no expiry.
	Vendor    string `json:"vendor,omitempty"`
	Scopes    string `json:"scopes,omitempty"`
	ExpiresIn string `json:"expires_in,omitempty"`
}

// Response is the answer: Data as the CLI prints it, or Error.
type Response struct {
	Data  any    `json:"data,omitempty"`
	Error *Error `json:"error,omitempty"`
}

// Error is a refused request.
type Error struct {
	Code   errs.Code `json:"code"`
	Detail string    `json:"detail"`
}

// Service runs administrative actions on a store.
type Service struct {
	Store store.Store
	Clock clock.Clock
	// MaxTokenLifetime, when set, makes token.issue require explicit scopes
	// and an expires_in of at most this.
	MaxTokenLifetime time.Duration
	// Secrets seals the keys cursor-key.rotate makes.
	Secrets *envelope.Box
	// Log, when set, receives one line per action: what was asked, what it
	// acted on, the outcome; never a secret.
	Log *slog.Logger

	// The services the actions call, built by the process's root
	// (app.NewServices) over Store.
	Vendors  account.Service
	Tokens   auth.Service
	Pairings pairing.Service
	Webhooks webhook.Service
	Catalog  catalog.Service
}

// DeployedTokenLifetime is the longest a token issued by a deployed stage's
// admin function may live.
const DeployedTokenLifetime = 365 * 24 * time.Hour

// Handle decodes a raw event and runs it; this is the Lambda's handler.
// Unknown fields are refused, so that a misspelt field is not ignored.
func (s Service) Handle(ctx context.Context, raw json.RawMessage) (Response, error) {
	var req Request
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return refused(errs.Ef(errs.CodeInvalidRequest, "event: %v", err)), nil
	}
	return s.Do(ctx, req)
}

// Do runs req.
func (s Service) Do(ctx context.Context, req Request) (Response, error) {
	data, err := s.do(ctx, req)
	if err == nil {
		s.logged(ctx, req, data, nil)
		return Response{Data: data}, nil
	}
	s.logged(ctx, req, nil, err)
	var e *errs.Error
	if errors.As(err, &e) && e.Kind != errs.Internal && e.Kind != errs.Unavailable {
		return refused(e), nil
	}
	return Response{}, fmt.Errorf("admin: %s: %w", req.Action, err)
}

// logged writes the action's line. The request's fields are names and ids
// (no secret is ever part of a request); of an issued token only its id,
// vendor, scopes and expiry are logged.
func (s Service) logged(ctx context.Context, req Request, data any, err error) {
	if s.Log == nil {
		return
	}
	attrs := []any{"action", req.Action}
	for _, f := range []struct{ k, v string }{{"vendor_id", req.Vendor}, {"id", req.ID}, {"name", req.Name}, {"slug", req.Slug},
		{"owner_id", req.Owner}, {"reviewer", req.Reviewer}, {"scopes", req.Scopes}, {"expires_in", req.ExpiresIn}} {
		if f.v != "" {
			attrs = append(attrs, f.k, f.v)
		}
	}
	if t, ok := data.(auth.Issued); ok {
		attrs = append(attrs, "token_id", t.ID, "expires_at", t.ExpiresAt)
	}
	if err != nil {
		s.Log.WarnContext(ctx, "admin action refused or failed", append(attrs, "error", err.Error())...)
		return
	}
	s.Log.InfoContext(ctx, "admin action", attrs...)
}

func refused(e *errs.Error) Response {
	return Response{Error: &Error{Code: e.Code, Detail: e.Detail}}
}

func (s Service) do(ctx context.Context, req Request) (any, error) {
	vendors, tokens := s.Vendors, s.Tokens
	switch req.Action {
	case VendorCreate:
		v, err := vendors.Create(ctx, req.Name, req.Slug)
		if err != nil {
			return nil, err
		}
		return v.View(), nil
	case VendorSetOwner:
		v, err := vendors.TransferOwner(ctx, req.ID, req.Owner)
		if err != nil {
			return nil, err
		}
		return map[string]string{"id": v.ID, "owner_id": v.OwnerID}, nil
	case TokenIssue:
		scopes := req.Scopes
		if strings.TrimSpace(scopes) == "" {
			if s.MaxTokenLifetime > 0 {
				return nil, errs.E(errs.CodeInvalidRequest, `scopes: required: name the scopes the token needs, comma-separated (or "all")`)
			}
			scopes = "all"
		}
		sc, err := auth.ParseScopes(scopes)
		if err != nil {
			return nil, errs.Ef(errs.CodeInvalidRequest, "scopes: %v", err)
		}
		var ttl time.Duration
		if req.ExpiresIn != "" {
			if ttl, err = time.ParseDuration(req.ExpiresIn); err != nil {
				return nil, errs.Ef(errs.CodeInvalidRequest, "expires_in: %q is not a duration such as 720h", req.ExpiresIn)
			}
		}
		if max := s.MaxTokenLifetime; max > 0 && (ttl <= 0 || ttl > max) {
			return nil, errs.Ef(errs.CodeInvalidRequest, "expires_in: required, at most %s (%d days)", max, max/(24*time.Hour))
		}
		return tokens.Issue(ctx, req.Vendor, sc, ttl)
	case TokenRevoke:
		t, err := tokens.Revoke(ctx, req.ID)
		if err != nil {
			return nil, err
		}
		return map[string]any{"id": t.ID, "vendor_id": t.VendorID, "revoked_at": t.RevokedAt}, nil
	case PairingReview:
		return s.Pairings.Review(ctx, req.ID, req.Reviewer)
	case CursorKeyRotate:
		if s.Secrets == nil {
			return nil, errors.New("no box to seal the new key with")
		}
		return cursor.Keyring{Store: s.Store, Box: s.Secrets, Clock: s.Clock}.Rotate(ctx)
	case StoreCheck:
		return s.check(ctx, req.Vendor)
	case WebhookSecretsSeal:
		return s.sealWebhookSecrets(ctx)
	case WebhookSubscriptionsRecount:
		return s.recountSubscriptions(ctx)
	}
	return nil, errs.Ef(errs.CodeInvalidRequest, "action: %q is not one of %s", req.Action,
		strings.Join([]string{VendorCreate, VendorSetOwner, TokenIssue, TokenRevoke, PairingReview, CursorKeyRotate, StoreCheck, WebhookSecretsSeal, WebhookSubscriptionsRecount}, ", "))
}
