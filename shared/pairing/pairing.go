// Package pairing is the store plugin's paired discovery: a seller creates a
// short-lived pairing code, the plugin exchanges it for a discovery
// credential that can only read its pairing and post discovery data, the
// seller accepts the pairing with a role preset (which creates or updates
// the store_plugin connection through the connection service), and an
// administrator's review activates it. Only an active pairing lets the
// plugin make operational writes; AuthorizeOperationalWrite is that gate.
//
// Codes and credentials are random, stored only as SHA-256 hashes, expire
// and are revoked with the pairing. The package does not speak HTTP.
package pairing

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/moku/sellerapi/shared/store"
)

// Lifetimes of the secrets.
const (
	// CodeTTL is how long a pairing code can be exchanged.
	CodeTTL = 10 * time.Minute
	// CredentialTTL is how long a discovery credential lives.
	CredentialTTL = 30 * 24 * time.Hour
)

// Statuses of a pairing. Expired is never stored: a pending pairing whose
// code has lapsed reads as expired.
const (
	StatusPendingExchange = "pending_exchange"
	StatusDiscovering     = "discovering"
	StatusAccepted        = "accepted"
	StatusActive          = "active"
	StatusExpired         = "expired"
	StatusRevoked         = "revoked"
)

// Values of View.OperationalWrites.
const (
	WritesAllowed = "allowed"
	WritesRefused = "refused"
)

// Pairing is the stored record, in the vendor's partition.
type Pairing struct {
	ID            string      `json:"id"`
	VendorID      string      `json:"vendor_id"`
	Status        string      `json:"status"`
	CodeExpiresAt time.Time   `json:"code_expires_at"`
	Credential    *Credential `json:"credential,omitempty"`
	Discovery     *Discovery  `json:"discovery,omitempty"`
	Acceptance    *Acceptance `json:"acceptance,omitempty"`
	Review        *Review     `json:"review,omitempty"`
	RevokedAt     *time.Time  `json:"revoked_at,omitempty"`
	CreatedAt     time.Time   `json:"created_at"`
	UpdatedAt     time.Time   `json:"updated_at"`
	Version       int64       `json:"-"`
}

// Credential describes the discovery credential, never its secret.
type Credential struct {
	IssuedAt  time.Time  `json:"issued_at"`
	ExpiresAt time.Time  `json:"expires_at"`
	RevokedAt *time.Time `json:"revoked_at"`
}

// Discovery is what the plugin reported about its store.
type Discovery struct {
	Store         StoreIdentity  `json:"store"`
	Catalog       CatalogSummary `json:"catalog"`
	PluginVersion string         `json:"plugin_version,omitempty"`
	ReceivedAt    time.Time      `json:"received_at"`
}

// StoreIdentity names the store.
type StoreIdentity struct {
	Domain          string `json:"domain"`
	Name            string `json:"name"`
	Platform        string `json:"platform"`
	PlatformVersion string `json:"platform_version,omitempty"`
	Currency        string `json:"currency"`
}

// CatalogSummary counts what the store holds; it is a summary for the
// seller's decision, not a sync.
type CatalogSummary struct {
	ProductCount   int64 `json:"product_count"`
	VariationCount int64 `json:"variation_count"`
	PublishedCount int64 `json:"published_count"`
	InStockCount   int64 `json:"in_stock_count"`
}

// Acceptance is the seller's decision. TokenID, the seller's token that
// accepted, is shown to the seller and never to the store plugin
// (View.ForPlugin).
type Acceptance struct {
	Preset       string    `json:"preset"`
	ConnectionID string    `json:"connection_id"`
	Created      bool      `json:"connection_created"`
	AcceptedAt   time.Time `json:"accepted_at"`
	TokenID      string    `json:"accepted_by_token_id,omitempty"`
}

// Review is the administrator's activation.
type Review struct {
	ReviewedAt time.Time `json:"reviewed_at"`
	Reviewer   string    `json:"reviewer"`
}

// View is a pairing as the API shows it.
type View struct {
	ID                string      `json:"id"`
	VendorID          string      `json:"vendor_id"`
	Provider          string      `json:"provider"`
	Status            string      `json:"status"`
	OperationalWrites string      `json:"operational_writes"`
	CodeExpiresAt     time.Time   `json:"code_expires_at"`
	Credential        *Credential `json:"discovery_credential"`
	Discovery         *Discovery  `json:"discovery"`
	Acceptance        *Acceptance `json:"acceptance"`
	Review            *Review     `json:"review"`
	RevokedAt         *time.Time  `json:"revoked_at"`
	Version           int64       `json:"version"`
	CreatedAt         time.Time   `json:"created_at"`
	UpdatedAt         time.Time   `json:"updated_at"`
}

// ForPlugin is the view the store plugin is shown: nothing of the seller's
// credentials (the acceptance without the token that accepted).
func (v View) ForPlugin() View {
	if v.Acceptance != nil {
		a := *v.Acceptance
		a.TokenID = ""
		v.Acceptance = &a
	}
	return v
}

// statusAt is the status as of now: a pending code that lapsed is expired.
func (p Pairing) statusAt(now time.Time) string {
	if p.Status == StatusPendingExchange && !now.Before(p.CodeExpiresAt) {
		return StatusExpired
	}
	return p.Status
}

// View returns the API representation as of now.
func (p Pairing) View(now time.Time) View {
	w := WritesRefused
	if p.Status == StatusActive {
		w = WritesAllowed
	}
	return View{ID: p.ID, VendorID: p.VendorID, Provider: "store_plugin", Status: p.statusAt(now), OperationalWrites: w,
		CodeExpiresAt: p.CodeExpiresAt, Credential: p.Credential, Discovery: p.Discovery, Acceptance: p.Acceptance,
		Review: p.Review, RevokedAt: p.RevokedAt, Version: p.Version, CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
}

// IDPrefix starts every pairing id (pair_ and 26 characters, see ids.Issued).
const IDPrefix = "pair"

// secretRecord is the global item of a pairing, found by its id alone: it
// names the vendor (for the review and for the credential) and holds the
// discovery credential's hash and lifetime.
type secretRecord struct {
	VendorID  string     `json:"vendor_id"`
	Hash      string     `json:"hash,omitempty"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	RevokedAt *time.Time `json:"revoked_at,omitempty"`
}

// codeRecord is the global item a pairing code's hash points at.
type codeRecord struct {
	PairingID string `json:"pairing_id"`
	VendorID  string `json:"vendor_id"`
}

func decode(it store.Item) (Pairing, error) {
	return store.Unmarshal(it, "pairing", func(p *Pairing) *int64 { return &p.Version })
}

func encode(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("pairing: encode: %w", err)
	}
	return b, nil
}
