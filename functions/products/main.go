// Command products is the Lambda of the Products operation group behind API
// Gateway's HTTP API (payload format 2.0): a vendor's products and their
// lifecycle (create, read, list, update, publish, unpublish, archive,
// restore).
//
// It only wires: configuration from the environment (the stack sets
// SELLERAPI_STORE=dynamodb and SELLERAPI_TABLE), the app, the group's HTTP
// handler and the API Gateway proxy adapter, all built once at init by
// shared/lambdaapi. The routes and their rules live in shared/httpapi and
// shared/catalog; sample events to drive it are in events/products/.
package main

import (
	"github.com/moku/sellerapi/shared/httpapi"
	"github.com/moku/sellerapi/shared/lambdaapi"
)

// group is what this function serves: main mounts it and the tests run
// it, so a wrong group here fails them.
func group() httpapi.Group { return httpapi.Products }

func main() { lambdaapi.Main(group().Name, group()) }
