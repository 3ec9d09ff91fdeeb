// Command bulk-operations is the Lambda of the BulkOperations operation group behind API
// Gateway's HTTP API: bulk inventory adjustments. It only wires; the routes live in
// shared/httpapi.
package main

import (
	"github.com/moku/sellerapi/shared/httpapi"
	"github.com/moku/sellerapi/shared/lambdaapi"
)

// group is what this function serves: main mounts it and the tests run
// it, so a wrong group here fails them.
func group() httpapi.Group { return httpapi.BulkOperations }

func main() { lambdaapi.Main(group().Name, group()) }
