// Command bulk-operations is the Lambda of the BulkOperations operation group behind API
// Gateway's HTTP API: bulk inventory adjustments. It only wires; the routes live in
// shared/httpapi.
package main

import (
	"github.com/moku/sellerapi/shared/httpapi"
	"github.com/moku/sellerapi/shared/lambdaapi"
)

func main() { lambdaapi.Main("bulk-operations", httpapi.BulkOperations) }
