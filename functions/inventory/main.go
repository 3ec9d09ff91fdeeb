// Command inventory is the Lambda of the Inventory operation group behind
// API Gateway's HTTP API (payload format 2.0): a vendor's inventory items
// (list, read) and adjustments of their on-hand stock.
//
// It only wires: configuration from the environment (the stack sets
// SELLERAPI_STORE=dynamodb and SELLERAPI_TABLE), the app, the group's HTTP
// handler and the API Gateway proxy adapter, all built once at init by
// shared/lambdaapi. The routes and their rules live in shared/httpapi and
// shared/inventory; sample events to drive it are in events/inventory/.
package main

import (
	"github.com/moku/sellerapi/shared/httpapi"
	"github.com/moku/sellerapi/shared/lambdaapi"
)

// group is what this function serves: main mounts it and the tests run
// it, so a wrong group here fails them.
func group() httpapi.Group { return httpapi.Inventory }

func main() { lambdaapi.Main(group().Name, group()) }
