// Command reservations is the Lambda of the Reservations operation group
// behind API Gateway's HTTP API. It only wires; the routes live in
// shared/httpapi.
package main

import (
	"github.com/moku/sellerapi/shared/httpapi"
	"github.com/moku/sellerapi/shared/lambdaapi"
)

// group is what this function serves: main mounts it and the tests run
// it, so a wrong group here fails them.
func group() httpapi.Group { return httpapi.Reservations }

func main() { lambdaapi.Main(group().Name, group()) }
