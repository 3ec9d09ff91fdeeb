// Command conflicts is the Lambda of the Conflicts operation group behind
// API Gateway's HTTP API: the disagreements the service recorded instead of
// deciding them, and their resolution. It only wires; the routes live in
// shared/httpapi.
package main

import (
	"github.com/moku/sellerapi/shared/httpapi"
	"github.com/moku/sellerapi/shared/lambdaapi"
)

// group is what this function serves: main mounts it and the tests run
// it, so a wrong group here fails them.
func group() httpapi.Group { return httpapi.Conflicts }

func main() { lambdaapi.Main(group().Name, group()) }
