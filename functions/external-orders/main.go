// Command external-orders is the Lambda of the External orders operation
// group behind API Gateway's HTTP API: orders imported from connections,
// whose lines hold and move stock. It only wires; the routes live in
// shared/httpapi.
package main

import (
	"github.com/moku/sellerapi/shared/httpapi"
	"github.com/moku/sellerapi/shared/lambdaapi"
)

// group is what this function serves: main mounts it and the tests run
// it, so a wrong group here fails them.
func group() httpapi.Group { return httpapi.ExternalOrders }

func main() { lambdaapi.Main(group().Name, group()) }
