// Command media is the Lambda of the media upload group behind API
// Gateway's HTTP API (payload format 2.0): PUT /vendors/{vendor_id}/media/
// {sha256} with the raw image bytes, and the public GET /media/{file} of
// the canonical objects for deployments whose records point at the API
// rather than a CDN.
//
// It only wires: configuration from the environment (the stack sets
// SELLERAPI_STORE=dynamodb, SELLERAPI_TABLE, SELLERAPI_MEDIA_BUCKET and
// usually SELLERAPI_MEDIA_BASE_URL), the app, the group's HTTP handler and
// the API Gateway proxy adapter, all built once at init by shared/lambdaapi.
// API Gateway delivers binary bodies base64-encoded (isBase64Encoded); the
// adapter decodes them before the handler reads a byte. The rules live in
// shared/httpapi and shared/media; sample events are in events/media/.
package main

import (
	"github.com/moku/sellerapi/shared/app"
	"github.com/moku/sellerapi/shared/httpapi"
	"github.com/moku/sellerapi/shared/lambdaapi"
	"github.com/moku/sellerapi/shared/media/canonical"
)

// group is what this function serves: main mounts it and the tests run
// it, so a wrong group here fails them.
func group() httpapi.Group { return httpapi.Media }

// options are what this function wires beyond the AWS adapters: the
// encoder of uploads, which no other Lambda links. The tests run them.
func options() []app.Option { return []app.Option{app.WithMediaEncoder(canonical.Encode)} }

func main() { lambdaapi.MainWith(group().Name, options(), group()) }
