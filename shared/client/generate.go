package client

// The API's shapes (types.gen.go) and operations (operations.gen.go) are
// generated from the OpenAPI document, the one source of truth for them
// (make generate runs this); a test in shared/openapi/gogen fails when the
// files differ from what the document makes, and one here when an
// operation of the document has no method.
//go:generate go run ../openapi/gogen -o types.gen.go -ops operations.gen.go -package client ../openapi/openapi.json
