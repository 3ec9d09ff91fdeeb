package client

// The API's shapes in types.gen.go are generated from the OpenAPI
// document, the one source of truth for them (make generate runs this);
// a test in shared/openapi/gogen fails when the file differs from what
// the document makes.
//go:generate go run ../openapi/gogen -o types.gen.go -package client -types Adjustment,Connection,ConnectionCreate,EventEnvelope,InventoryItem,Page,Problem,Product,ProductCreate,ProductTransition,Reservation,ReservationCreate,Vendor,VersionBody,WebhookSubscription,WebhookSubscriptionCreate,WebhookSubscriptionWithSecret ../openapi/openapi.json
