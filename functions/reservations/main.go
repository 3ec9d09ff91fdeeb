// Command reservations is the Lambda of the Reservations operation group
// behind API Gateway's HTTP API. It only wires; the routes live in
// shared/httpapi.
package main

import (
	"github.com/moku/sellerapi/shared/httpapi"
	"github.com/moku/sellerapi/shared/lambdaapi"
)

func main() { lambdaapi.Main("reservations", httpapi.Reservations) }
