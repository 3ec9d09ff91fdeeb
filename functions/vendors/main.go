// Command vendors is the Lambda of the Vendors operation group behind API
// Gateway's HTTP API (payload format 2.0): the public contract
// (GET /openapi.json, GET /errors) and the vendors a token may see.
//
// It only wires: configuration from the environment (the stack sets
// SELLERAPI_STORE=dynamodb and SELLERAPI_TABLE), the app, the group's HTTP
// handler and the API Gateway proxy adapter, all built once at init. The
// routes and their rules live in shared/httpapi; sample events to drive it
// are in events/vendors/.
package main

import (
	"github.com/moku/sellerapi/shared/httpapi"
	"github.com/moku/sellerapi/shared/lambdaapi"
)

// group is what this function serves: main mounts it and the tests run
// it, so a wrong group here fails them.
func group() httpapi.Group { return httpapi.Vendors }

func main() { lambdaapi.Main(group().Name, group()) }
