// Command external-orders is the Lambda of the External orders operation
// group behind API Gateway's HTTP API: orders imported from connections,
// whose lines hold and move stock. It only wires; the routes live in
// shared/httpapi.
package main

import (
	"github.com/moku/sellerapi/shared/httpapi"
	"github.com/moku/sellerapi/shared/lambdaapi"
)

func main() { lambdaapi.Main("external-orders", httpapi.ExternalOrders) }
