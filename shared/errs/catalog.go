package errs

import "strings"

// Code is a stable SCREAMING_SNAKE error code shown to clients.
type Code string

// The catalog: every code the service emits. The OpenAPI document lists the
// same codes; a test keeps the two in step.
const (
	CodeInternal              Code = "INTERNAL_ERROR"
	CodeInvalidRequest        Code = "INVALID_REQUEST"
	CodeInvalidJSON           Code = "INVALID_JSON"
	CodeUnsupportedMediaType  Code = "UNSUPPORTED_CONTENT_TYPE"
	CodeBodyTooLarge          Code = "REQUEST_BODY_TOO_LARGE"
	CodeRecordTooLarge        Code = "RECORD_TOO_LARGE"
	CodeInvalidCursor         Code = "INVALID_CURSOR"
	CodeInvalidParameter      Code = "INVALID_PARAMETER"
	CodeIdempotencyKeyMissing Code = "IDEMPOTENCY_KEY_REQUIRED"
	CodeIdempotencyKeyInvalid Code = "IDEMPOTENCY_KEY_INVALID"
	CodeUnauthenticated       Code = "UNAUTHENTICATED"
	CodeInsufficientScope     Code = "INSUFFICIENT_SCOPE"
	CodeNotFound              Code = "NOT_FOUND"
	CodeMethodNotAllowed      Code = "METHOD_NOT_ALLOWED"
	CodeIdempotencyKeyReused  Code = "IDEMPOTENCY_KEY_REUSED"
	CodeConflict              Code = "CONFLICT"
	CodeRateLimited           Code = "RATE_LIMITED"
	CodeServiceUnavailable    Code = "SERVICE_UNAVAILABLE"

	CodeRevisionConflict      Code = "PRODUCT_REVISION_CONFLICT"
	CodeSlugTaken             Code = "PRODUCT_SLUG_TAKEN"
	CodeProductState          Code = "PRODUCT_STATE_CONFLICT"
	CodeProductIncomplete     Code = "PRODUCT_INCOMPLETE"
	CodeVariationNotRetirable Code = "VARIATION_NOT_RETIRABLE"
	CodeAuthorityMismatch     Code = "AUTHORITY_MISMATCH"
	CodeInventoryVersion      Code = "INVENTORY_VERSION_CONFLICT"
	CodeBelowReserved         Code = "INVENTORY_BELOW_RESERVED"
	CodeInventoryItemRetired  Code = "INVENTORY_ITEM_RETIRED"

	CodeInvalidMedia       Code = "INVALID_MEDIA"
	CodeMediaTooLarge      Code = "MEDIA_TOO_LARGE"
	CodeMediaQuotaExceeded Code = "MEDIA_QUOTA_EXCEEDED"

	CodeConnectionVersion  Code = "CONNECTION_VERSION_CONFLICT"
	CodeConnectionState    Code = "CONNECTION_STATE_CONFLICT"
	CodeConnectionBusy     Code = "CONNECTION_BUSY"
	CodeAuthorityConflict  Code = "AUTHORITY_CONFLICT"
	CodeInventoryExternal  Code = "INVENTORY_AUTHORITY_EXTERNAL"
	CodeReservationVersion Code = "RESERVATION_VERSION_CONFLICT"
	CodeReservationState   Code = "RESERVATION_STATE_CONFLICT"
	CodeInsufficientStock  Code = "INSUFFICIENT_STOCK"
	CodeConnectionInactive Code = "CONNECTION_NOT_ACTIVE"

	CodeListingVersion Code = "LISTING_VERSION_CONFLICT"
	CodeListingState   Code = "LISTING_STATE_CONFLICT"
	CodeListingExists  Code = "LISTING_EXISTS"

	CodeExternalOrderVersion   Code = "EXTERNAL_ORDER_VERSION_CONFLICT"
	CodeExternalOrderState     Code = "EXTERNAL_ORDER_STATE_CONFLICT"
	CodeExternalOrderDuplicate Code = "EXTERNAL_ORDER_DUPLICATE"
	CodeSellerOrderVersion     Code = "SELLER_ORDER_VERSION_CONFLICT"
	CodeSellerOrderState       Code = "SELLER_ORDER_STATE_CONFLICT"
	CodeChannelPriceRefused    Code = "CHANNEL_PRICE_NOT_ALLOWED"

	CodeWebhookURLNotAllowed       Code = "WEBHOOK_URL_NOT_ALLOWED"
	CodeWebhookSubscriptionLimit   Code = "WEBHOOK_SUBSCRIPTION_LIMIT"
	CodeWebhookSubscriptionVersion Code = "WEBHOOK_SUBSCRIPTION_VERSION_CONFLICT"
	CodeWebhookSubscriptionState   Code = "WEBHOOK_SUBSCRIPTION_STATE_CONFLICT"

	CodePairingCodeInvalid Code = "PAIRING_CODE_INVALID"
	CodePairingCodeUsed    Code = "PAIRING_CODE_USED"
	CodePairingCodeExpired Code = "PAIRING_CODE_EXPIRED"
	CodePairingVersion     Code = "PAIRING_VERSION_CONFLICT"
	CodePairingState       Code = "PAIRING_STATE_CONFLICT"
	CodePairingNotActive   Code = "PAIRING_NOT_ACTIVE"

	CodeConflictVersion  Code = "CONFLICT_RECORD_VERSION_CONFLICT"
	CodeConflictState    Code = "CONFLICT_RECORD_STATE_CONFLICT"
	CodeSyncRoleDisabled Code = "SYNC_ROLE_DISABLED"

	// CodeBulkStopped is record-level only: it marks the records of a bulk
	// operation that stopped before reaching them, never an HTTP response.
	CodeBulkStopped Code = "BULK_OPERATION_STOPPED"
	// CodeSyncStopped is record-level only, like CodeBulkStopped, for the
	// items of a sync job that stopped before reaching them.
	CodeSyncStopped Code = "SYNC_JOB_STOPPED"
)

// Info describes one catalog entry.
type Info struct {
	Code  Code
	Kind  Kind
	Title string
}

var catalog = map[Code]Info{
	CodeInternal:              {CodeInternal, Internal, "Internal error"},
	CodeInvalidRequest:        {CodeInvalidRequest, Invalid, "Invalid request"},
	CodeInvalidJSON:           {CodeInvalidJSON, Invalid, "Malformed JSON body"},
	CodeUnsupportedMediaType:  {CodeUnsupportedMediaType, Invalid, "Unsupported content type"},
	CodeBodyTooLarge:          {CodeBodyTooLarge, Invalid, "Request body too large"},
	CodeRecordTooLarge:        {CodeRecordTooLarge, Invalid, "Record too large to store"},
	CodeInvalidCursor:         {CodeInvalidCursor, Invalid, "Invalid cursor"},
	CodeInvalidParameter:      {CodeInvalidParameter, Invalid, "Invalid parameter"},
	CodeIdempotencyKeyMissing: {CodeIdempotencyKeyMissing, Invalid, "Idempotency-Key required"},
	CodeIdempotencyKeyInvalid: {CodeIdempotencyKeyInvalid, Invalid, "Invalid Idempotency-Key"},
	CodeUnauthenticated:       {CodeUnauthenticated, Unauthenticated, "Authentication required"},
	CodeInsufficientScope:     {CodeInsufficientScope, Forbidden, "Insufficient scope"},
	CodeNotFound:              {CodeNotFound, NotFound, "Not found"},
	CodeMethodNotAllowed:      {CodeMethodNotAllowed, MethodNotAllowed, "Method not allowed"},
	CodeIdempotencyKeyReused:  {CodeIdempotencyKeyReused, Conflict, "Idempotency-Key reused"},
	CodeConflict:              {CodeConflict, Conflict, "Conflict"},
	CodeRateLimited:           {CodeRateLimited, RateLimited, "Rate limit exceeded"},
	CodeServiceUnavailable:    {CodeServiceUnavailable, Unavailable, "Service unavailable"},

	CodeRevisionConflict:      {CodeRevisionConflict, Conflict, "Product revision conflict"},
	CodeSlugTaken:             {CodeSlugTaken, Conflict, "Product slug taken"},
	CodeProductState:          {CodeProductState, Conflict, "Product lifecycle conflict"},
	CodeProductIncomplete:     {CodeProductIncomplete, Conflict, "Product incomplete"},
	CodeVariationNotRetirable: {CodeVariationNotRetirable, Conflict, "Variation cannot be retired"},
	CodeAuthorityMismatch:     {CodeAuthorityMismatch, Conflict, "Authority binding mismatch"},
	CodeInventoryVersion:      {CodeInventoryVersion, Conflict, "Inventory version conflict"},
	CodeBelowReserved:         {CodeBelowReserved, Conflict, "Below the reservation floor"},
	CodeInventoryItemRetired:  {CodeInventoryItemRetired, Conflict, "Inventory item retired"},

	CodeInvalidMedia:       {CodeInvalidMedia, Invalid, "Invalid media"},
	CodeMediaTooLarge:      {CodeMediaTooLarge, TooLarge, "Media too large"},
	CodeMediaQuotaExceeded: {CodeMediaQuotaExceeded, Conflict, "Media quota exceeded"},

	CodeConnectionVersion:  {CodeConnectionVersion, Conflict, "Connection version conflict"},
	CodeConnectionState:    {CodeConnectionState, Conflict, "Connection state conflict"},
	CodeConnectionBusy:     {CodeConnectionBusy, Conflict, "Connection has live work"},
	CodeAuthorityConflict:  {CodeAuthorityConflict, Conflict, "Authority conflict"},
	CodeInventoryExternal:  {CodeInventoryExternal, Conflict, "Inventory mastered by a channel"},
	CodeReservationVersion: {CodeReservationVersion, Conflict, "Reservation version conflict"},
	CodeReservationState:   {CodeReservationState, Conflict, "Reservation state conflict"},
	CodeInsufficientStock:  {CodeInsufficientStock, Conflict, "Insufficient stock"},
	CodeConnectionInactive: {CodeConnectionInactive, Conflict, "Connection not active"},

	CodeListingVersion:         {CodeListingVersion, Conflict, "Listing version conflict"},
	CodeListingState:           {CodeListingState, Conflict, "Listing state conflict"},
	CodeListingExists:          {CodeListingExists, Conflict, "Listing already exists"},
	CodeExternalOrderVersion:   {CodeExternalOrderVersion, Conflict, "External order version conflict"},
	CodeExternalOrderState:     {CodeExternalOrderState, Conflict, "External order state conflict"},
	CodeExternalOrderDuplicate: {CodeExternalOrderDuplicate, Conflict, "External order already imported with different content"},
	CodeSellerOrderVersion:     {CodeSellerOrderVersion, Conflict, "Seller order version conflict"},
	CodeSellerOrderState:       {CodeSellerOrderState, Conflict, "Seller order state conflict"},
	CodeChannelPriceRefused:    {CodeChannelPriceRefused, Conflict, "Channel price not allowed"},

	CodeWebhookURLNotAllowed:       {CodeWebhookURLNotAllowed, Invalid, "Webhook URL not allowed"},
	CodeWebhookSubscriptionLimit:   {CodeWebhookSubscriptionLimit, Conflict, "Webhook subscription limit reached"},
	CodeWebhookSubscriptionVersion: {CodeWebhookSubscriptionVersion, Conflict, "Webhook subscription version conflict"},
	CodeWebhookSubscriptionState:   {CodeWebhookSubscriptionState, Conflict, "Webhook subscription state conflict"},

	CodePairingCodeInvalid: {CodePairingCodeInvalid, Invalid, "Pairing code not valid"},
	CodePairingCodeUsed:    {CodePairingCodeUsed, Conflict, "Pairing code already used"},
	CodePairingCodeExpired: {CodePairingCodeExpired, Conflict, "Pairing code expired"},
	CodePairingVersion:     {CodePairingVersion, Conflict, "Store pairing version conflict"},
	CodePairingState:       {CodePairingState, Conflict, "Store pairing state conflict"},
	CodePairingNotActive:   {CodePairingNotActive, Forbidden, "Store pairing not active"},

	CodeConflictVersion:  {CodeConflictVersion, Conflict, "Conflict record version conflict"},
	CodeConflictState:    {CodeConflictState, Conflict, "Conflict record state conflict"},
	CodeSyncRoleDisabled: {CodeSyncRoleDisabled, Conflict, "Connection role disabled for this sync"},

	CodeBulkStopped: {CodeBulkStopped, Conflict, "Bulk operation stopped"},
	CodeSyncStopped: {CodeSyncStopped, Conflict, "Sync job stopped"},
}

// Kind is the code's kind; an unknown code is Internal.
func (c Code) Kind() Kind {
	if i, ok := catalog[c]; ok {
		return i.Kind
	}
	return Internal
}

// Title is the code's short human title.
func (c Code) Title() string {
	if i, ok := catalog[c]; ok {
		return i.Title
	}
	return "Error"
}

// Slug is the code in kebab case, the fragment of the problem type URI.
func (c Code) Slug() string {
	return strings.ReplaceAll(strings.ToLower(string(c)), "_", "-")
}

// Catalog returns every code, for documentation and tests.
func Catalog() []Info {
	out := make([]Info, 0, len(catalog))
	for _, i := range catalog {
		out = append(out, i)
	}
	return out
}
