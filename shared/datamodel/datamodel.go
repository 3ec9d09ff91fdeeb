// Package datamodel is the schema of the single table: every key, key prefix
// and shared numeric attribute, in the order docs/data-model.md lists the
// items. Domain packages build their keys here, so the data model has one
// home and two packages that touch one item agree on its names. It holds
// names only: what a record means stays with its package.
package datamodel

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"github.com/moku/sellerapi/shared/store"
)

// VendorPartition holds everything a vendor owns.
func VendorPartition(vendorID string) string { return "VENDOR#" + vendorID }

// VendorKey is the vendor record's key.
func VendorKey(vendorID string) store.Key {
	return store.Key{PK: VendorPartition(vendorID), SK: "VENDOR"}
}

// VendorSlugKey reserves a vendor slug across vendors.
func VendorSlugKey(slug string) store.Key { return store.Key{PK: "VSLUG#" + slug, SK: "VSLUG"} }

// VendorRegistry is the partition with one item per vendor (sort key: the
// vendor id), so that whether a store has any vendor is one query.
const VendorRegistry = "VENDORS"

// TokenKey is an access token's record.
func TokenKey(tokenID string) store.Key { return store.Key{PK: "TOKEN#" + tokenID, SK: "TOKEN"} }

// RateKey is the counter of a rate window of class ("read" or "write")
// starting at start, in partition pk (a vendor's, a pairing's or a
// client's).
func RateKey(pk, class string, start time.Time) store.Key {
	return store.Key{PK: pk, SK: "RATE#" + class + "#" + strconv.FormatInt(start.Unix(), 10)}
}

// RateCountAttr counts the requests a rate window admitted.
const RateCountAttr = "n"

// ClientPartition is the partition of an unauthenticated client's rate
// windows, named by its address (or IPv6 /64).
func ClientPartition(addr string) string { return "CLIENT#" + addr }

// ReceiptKey is an idempotency receipt's key.
func ReceiptKey(vendorID, tokenID, operation, key string) store.Key {
	return store.Key{PK: VendorPartition(vendorID), SK: "IDEM#" + tokenID + "#" + operation + "#" + key}
}

// ProductPrefix starts product sort keys in the vendor partition.
const ProductPrefix = "PRODUCT#"

// ProductKey is a product's key.
func ProductKey(vendorID, productID string) store.Key {
	return store.Key{PK: VendorPartition(vendorID), SK: ProductPrefix + productID}
}

// ProductSlugKey reserves a product slug within a vendor.
func ProductSlugKey(vendorID, slug string) store.Key {
	return store.Key{PK: VendorPartition(vendorID), SK: "PSLUG#" + slug}
}

// Bucket attributes of inventory item seq on its product's item: on hand,
// reserved, available and the item's version.
func OnHandAttr(seq int) string      { return seqAttr("oh_", seq) }
func ReservedAttr(seq int) string    { return seqAttr("rs_", seq) }
func AvailableAttr(seq int) string   { return seqAttr("av_", seq) }
func ItemVersionAttr(seq int) string { return seqAttr("iv_", seq) }

// seqAttr is prefix and seq in at least three digits, as "%s%03d" writes
// it, without fmt: list pages name four attributes per item.
func seqAttr(prefix string, seq int) string {
	if seq < 0 || seq > 999 {
		return fmt.Sprintf("%s%03d", prefix, seq)
	}
	d := [3]byte{'0' + byte(seq/100), '0' + byte(seq/10%10), '0' + byte(seq%10)}
	return prefix + string(d[:])
}

// ItemCounters reads item seq's on-hand, reserved, available and version
// attributes (the names above) from nums; ok is false when any is missing.
// For seqs of three digits it looks the names up from a buffer without
// building strings: a list page reads four per item.
func ItemCounters(nums map[string]int64, seq int) (onHand, reserved, available, version int64, ok bool) {
	if seq < 0 || seq > 999 {
		var ok1, ok2, ok3, ok4 bool
		onHand, ok1 = nums[OnHandAttr(seq)]
		reserved, ok2 = nums[ReservedAttr(seq)]
		available, ok3 = nums[AvailableAttr(seq)]
		version, ok4 = nums[ItemVersionAttr(seq)]
		return onHand, reserved, available, version, ok1 && ok2 && ok3 && ok4
	}
	k := [6]byte{'o', 'h', '_', '0' + byte(seq/100), '0' + byte(seq/10%10), '0' + byte(seq%10)}
	onHand, ok1 := nums[string(k[:])]
	k[0], k[1] = 'r', 's'
	reserved, ok2 := nums[string(k[:])]
	k[0], k[1] = 'a', 'v'
	available, ok3 := nums[string(k[:])]
	k[0], k[1] = 'i', 'v'
	version, ok4 := nums[string(k[:])]
	return onHand, reserved, available, version, ok1 && ok2 && ok3 && ok4
}

// ConnectionPrefix starts connection sort keys in the vendor partition.
const ConnectionPrefix = "CONN#"

// ConnectionKey is a connection's key.
func ConnectionKey(vendorID, connectionID string) store.Key {
	return store.Key{PK: VendorPartition(vendorID), SK: ConnectionPrefix + connectionID}
}

// ConnectionHealthKey is a connection's last health report, kept apart from
// the connection so that frequent reports never race with its configuration.
func ConnectionHealthKey(vendorID, connectionID string) store.Key {
	return store.Key{PK: VendorPartition(vendorID), SK: "CONNHEALTH#" + connectionID}
}

// Numeric attributes of the connection item. IsActiveAttr is 1 while the
// connection is active, so that writes can require it in their condition.
const (
	ActiveListingsAttr      = "active_listings"
	ActiveReservationsAttr  = "active_reservations"
	UnresolvedOrdersAttr    = "unresolved_orders"
	ChannelFulfillmentsAttr = "channel_fulfillments"
	IsActiveAttr            = "is_active"
	OpenConflictsAttr       = "open_conflicts"
)

// AuthorityKey is the vendor's authority item.
func AuthorityKey(vendorID string) store.Key {
	return store.Key{PK: VendorPartition(vendorID), SK: "AUTHORITY"}
}

// Numeric attributes of the authority item.
const (
	// ServiceReservationsAttr counts active reservations owned by the service.
	ServiceReservationsAttr = "service_reservations"
	// InventoryExternalAttr is 1 while a connection masters the Stock Pool,
	// so that the service's own checkout can require 0 in its condition.
	InventoryExternalAttr = "inventory_external"
)

// ListingPrefix starts listing sort keys in the vendor partition.
const ListingPrefix = "LST#"

// ListingKey is a listing's key.
func ListingKey(vendorID, listingID string) store.Key {
	return store.Key{PK: VendorPartition(vendorID), SK: ListingPrefix + listingID}
}

// ListingUniqueKey reserves (connection, product, variation) for one listing.
func ListingUniqueKey(vendorID, connectionID, productID string, variationID *string) store.Key {
	v := "-"
	if variationID != nil {
		v = *variationID
	}
	return store.Key{PK: VendorPartition(vendorID), SK: "LSTKEY#" + connectionID + "#" + productID + "#" + v}
}

// ExternalOrderPrefix starts external order sort keys in the vendor partition.
const ExternalOrderPrefix = "XORD#"

// ExternalOrderKey is an external order's key.
func ExternalOrderKey(vendorID, orderID string) store.Key {
	return store.Key{PK: VendorPartition(vendorID), SK: ExternalOrderPrefix + orderID}
}

// ExternalOrderUniqueKey reserves (connection, external order id) for one order.
func ExternalOrderUniqueKey(vendorID, connectionID, externalID string) store.Key {
	return store.Key{PK: VendorPartition(vendorID), SK: "XORDKEY#" + connectionID + "#" + externalID}
}

// ConflictPrefix starts conflict sort keys in the vendor partition.
const ConflictPrefix = "CONFLICT#"

// ConflictKey is a conflict's key.
func ConflictKey(vendorID, conflictID string) store.Key {
	return store.Key{PK: VendorPartition(vendorID), SK: ConflictPrefix + conflictID}
}

// ConflictOpenKey is the open-index item of (type, connection, resource):
// it exists while a conflict of that triple is open and holds its id. The
// triple is hashed because resource ids can be long.
func ConflictOpenKey(vendorID, typ, connectionID, resourceType, resourceID string) store.Key {
	sum := sha256.Sum256([]byte(typ + "\x00" + connectionID + "\x00" + resourceType + "\x00" + resourceID))
	return store.Key{PK: VendorPartition(vendorID), SK: "CONFLICTOPEN#" + hex.EncodeToString(sum[:])}
}

// SellerOrderPrefix starts seller order sort keys in the vendor partition.
const SellerOrderPrefix = "SORD#"

// SellerOrderKey is a seller order's key.
func SellerOrderKey(vendorID, orderID string) store.Key {
	return store.Key{PK: VendorPartition(vendorID), SK: SellerOrderPrefix + orderID}
}

// ReservationPrefix starts reservation sort keys in the vendor partition.
const ReservationPrefix = "RES#"

// ReservationKey is a reservation's key.
func ReservationKey(vendorID, reservationID string) store.Key {
	return store.Key{PK: VendorPartition(vendorID), SK: ReservationPrefix + reservationID}
}

// ExpiryShards is how many partitions index active reservations by
// expiry. A vendor's holds all go to the shard its id hashes to, so no one
// partition takes every tenant's writes.
const ExpiryShards = 16

// LegacyExpiryPartition is the single expiry partition of earlier versions.
const LegacyExpiryPartition = "RESEXP"

// ExpiryPartition is the expiry index partition of a vendor's holds.
func ExpiryPartition(vendorID string) string {
	h := fnv.New32a()
	h.Write([]byte(vendorID))
	return ExpiryShard(int(h.Sum32() % ExpiryShards))
}

// ExpiryShard is the expiry index partition number i.
func ExpiryShard(i int) string { return fmt.Sprintf("RESEXP#%02d", i) }

// ExpirySK is the sort key of an active hold's index entry: expiry first,
// so that a shard reads in expiry order.
func ExpirySK(expiresAt time.Time, vendorID, reservationID string) string {
	return fmt.Sprintf("%012d#%s#%s", expiresAt.Unix(), vendorID, reservationID)
}

// StockEffectPrefix starts stock effect sort keys in the vendor partition.
const StockEffectPrefix = "EFFECT#"

// StockEffectKey is the key of the effect that brought item to version.
func StockEffectKey(vendorID, itemID string, version int64) store.Key {
	return store.Key{PK: VendorPartition(vendorID), SK: fmt.Sprintf("%s%s#%012d", StockEffectPrefix, itemID, version)}
}

// EventPrefix starts event sort keys in the vendor partition.
const EventPrefix = "EVENT#"

// EventKey is an event's key.
func EventKey(vendorID, eventID string) store.Key {
	return store.Key{PK: VendorPartition(vendorID), SK: EventPrefix + eventID}
}

// BulkPrefix starts bulk operation sort keys in the vendor partition.
const BulkPrefix = "BULK#"

// BulkKey is a bulk operation's key.
func BulkKey(vendorID, jobID string) store.Key {
	return store.Key{PK: VendorPartition(vendorID), SK: BulkPrefix + jobID}
}

// SyncJobPrefix starts sync job sort keys in the vendor partition.
const SyncJobPrefix = "SYNCJOB#"

// SyncJobKey is a sync job's key.
func SyncJobKey(vendorID, jobID string) store.Key {
	return store.Key{PK: VendorPartition(vendorID), SK: SyncJobPrefix + jobID}
}

// MediaKey is a media record, keyed by the digest of the uploaded bytes.
func MediaKey(vendorID, digest string) store.Key {
	return store.Key{PK: VendorPartition(vendorID), SK: "MEDIA#" + digest}
}

// MediaBudgetKey is the vendor's media budget counter.
func MediaBudgetKey(vendorID string) store.Key {
	return store.Key{PK: VendorPartition(vendorID), SK: "MEDIA_BUDGET"}
}

// Numeric attributes of the media budget item.
const (
	MediaBytesAttr   = "bytes"
	MediaObjectsAttr = "objects"
)

// SubscriptionPrefix starts webhook subscription sort keys.
const SubscriptionPrefix = "WHSUB#"

// SubscriptionKey is a webhook subscription's key.
func SubscriptionKey(vendorID, subscriptionID string) store.Key {
	return store.Key{PK: VendorPartition(vendorID), SK: SubscriptionPrefix + subscriptionID}
}

// SubscriptionCountKey is the item whose SubscriptionCountAttr counts the
// vendor's subscriptions.
func SubscriptionCountKey(vendorID string) store.Key {
	return store.Key{PK: VendorPartition(vendorID), SK: "WHSUBCOUNT"}
}

// SubscriptionTypeAttr is the numeric attribute of a SubscriptionCountKey
// item that counts the vendor's subscriptions (of any status) whose event
// types include typ; AllTypes ("*") subscriptions count under an attribute
// of their own. Names the store cannot hold (too long) are hashed: two
// types sharing an attribute only over-count, which a reader of the counts
// (pipeline.Receivers) takes as a possible receiver, never as none.
func SubscriptionTypeAttr(typ string) string {
	if typ == "*" {
		return "t_all"
	}
	name := "t_" + strings.ReplaceAll(typ, ".", "__")
	if store.ValidAttr(name) == nil {
		return name
	}
	h := fnv.New32a()
	h.Write([]byte(typ))
	return fmt.Sprintf("t_%08x", h.Sum32())
}

// Numeric attributes of webhook items.
const (
	SubscriptionCountAttr = "n"
	// SubscriptionTypedAttr, 1 on a SubscriptionCountKey item, says that
	// its per-type counts (SubscriptionTypeAttr) are complete: kept by
	// every transaction since the vendor's first subscription. An item
	// written before them (issue 26) lacks it and never gains it.
	SubscriptionTypedAttr = "typed"
	// SuccessesAttr counted a subscription's successful deliveries until
	// issue 26 (builds since count none; RecoveredAttr took its place).
	SuccessesAttr = "successes"
	// RecoveredAttr is when (Unix milliseconds) a successful delivery last
	// ended a failure streak: what the disable policy compares with the
	// first attempt of a delivery that died.
	RecoveredAttr = "recovered_at"
	// FailuresAttr counts a subscription's failed attempts since its last
	// successful one (its failure streak).
	FailuresAttr = "failures"
	// FailingAttr is 1 once the current streak has announced itself
	// (webhook_subscription.failing), 0 otherwise.
	FailingAttr = "failing"
)

// AttemptPrefix starts delivery attempt sort keys:
// WHATT#<subscription id>#<attempt id>.
const AttemptPrefix = "WHATT#"

// AttemptKey is a delivery attempt's key.
func AttemptKey(vendorID, subscriptionID, attemptID string) store.Key {
	return store.Key{PK: VendorPartition(vendorID), SK: AttemptPrefix + subscriptionID + "#" + attemptID}
}

// ClaimPrefix starts the sort keys of delivery attempt claims:
// WHCLAIM#<delivery id>#<attempt, 3 digits>.
const ClaimPrefix = "WHCLAIM#"

// ClaimKey is the claim of a delivery's attempt: the queue message that
// makes it and, once recorded, its outcome.
func ClaimKey(vendorID, deliveryID string, attempt int) store.Key {
	return store.Key{PK: VendorPartition(vendorID), SK: fmt.Sprintf("%s%s#%03d", ClaimPrefix, deliveryID, attempt)}
}

// ReplayPrefix starts replay sort keys: REPLAY#<event id>#<replay id>.
const ReplayPrefix = "REPLAY#"

// ReplayKey is a replay's key.
func ReplayKey(vendorID, eventID, replayID string) store.Key {
	return store.Key{PK: VendorPartition(vendorID), SK: ReplayPrefix + eventID + "#" + replayID}
}

// ReplayDestinationKey records one replay destination's outcome, so that
// it is counted once however often its message is handled.
func ReplayDestinationKey(vendorID, replayID, subscriptionID string) store.Key {
	return store.Key{PK: VendorPartition(vendorID), SK: "REPLAYDST#" + replayID + "#" + subscriptionID}
}

// Counter attributes of a replay item.
const (
	ReplayTotalAttr     = "total"
	ReplayDeliveredAttr = "delivered"
	ReplayFailedAttr    = "failed"
	ReplaySkippedAttr   = "skipped"
	ReplayPendingAttr   = "pending"
)

// RecoveryPrefix starts webhook recovery sort keys:
// WHRCV#<subscription id>#<recovery id>.
const RecoveryPrefix = "WHRCV#"

// RecoveryKey is a webhook recovery's key. Its counters are the replay's
// (ReplayTotalAttr and the others).
func RecoveryKey(vendorID, subscriptionID, recoveryID string) store.Key {
	return store.Key{PK: VendorPartition(vendorID), SK: RecoveryPrefix + subscriptionID + "#" + recoveryID}
}

// RecoveryEventKey records the outcome of one event of a recovery, so
// that it is counted once however often its message is handled.
func RecoveryEventKey(vendorID, recoveryID, eventID string) store.Key {
	return store.Key{PK: VendorPartition(vendorID), SK: "WHRCVEVT#" + recoveryID + "#" + eventID}
}

// DeliveredKey marks that an event was delivered successfully to a
// subscription (written with the attempt that succeeded, kept as long as
// the attempt): what a recovery skips.
func DeliveredKey(vendorID, subscriptionID, eventID string) store.Key {
	return store.Key{PK: VendorPartition(vendorID), SK: "WHOK#" + subscriptionID + "#" + eventID}
}

// PairingPrefix starts store pairing sort keys in the vendor partition.
const PairingPrefix = "PAIRING#"

// PairingKey is a store pairing's key in its vendor's partition.
func PairingKey(vendorID, pairingID string) store.Key {
	return store.Key{PK: VendorPartition(vendorID), SK: PairingPrefix + pairingID}
}

// PairingPartition is a pairing's own partition: its discovery credential
// and the credential's rate windows.
func PairingPartition(pairingID string) string { return "PAIRING#" + pairingID }

// PairingSecretKey is the global item of a pairing, found by its id alone.
func PairingSecretKey(pairingID string) store.Key {
	return store.Key{PK: PairingPartition(pairingID), SK: "PAIRING"}
}

// PairingCodeKey is a pairing code's item, by the hash of the code.
func PairingCodeKey(hash string) store.Key {
	return store.Key{PK: "PAIRCODE#" + hash, SK: "PAIRCODE"}
}

// CursorSigningKey holds the HMAC key that signs page cursors.
func CursorSigningKey() store.Key { return store.Key{PK: "META", SK: "CURSOR_KEY"} }

// DemoKey marks that the store was given its demo vendor.
func DemoKey() store.Key { return store.Key{PK: "META", SK: "DEMO"} }

// PendingShards is how many partitions hold the router's pending-work
// markers, so that their writes spread over DynamoDB partitions.
const PendingShards = 16

// PendingPrefix begins every marker's partition key. A marker's sort key
// is no routed prefix, so the stream filter never passes it.
const PendingPrefix = "PENDING#"

// PendingShard is the partition of marker shard n.
func PendingShard(n int) string { return fmt.Sprintf("%s%02d", PendingPrefix, n) }

// EventUnmarkedAttr, 1 on an event item, says that its transaction wrote
// no pending marker for it: no subscription of its vendor could receive it
// when the write was admitted (pipeline.Pending.Mark), so the router has
// no marker to delete.
const EventUnmarkedAttr = "unmarked"

// PendingKey is the marker of the routed item at k: written in the
// transaction that inserts k, deleted once the router has sent its work.
func PendingKey(k store.Key) store.Key {
	h := fnv.New32a()
	h.Write([]byte(k.PK))
	h.Write([]byte{0})
	h.Write([]byte(k.SK))
	return store.Key{PK: PendingShard(int(h.Sum32() % PendingShards)), SK: k.PK + "|" + k.SK}
}
