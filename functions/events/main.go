// Command events is the Lambda of the Events operation group behind API
// Gateway's HTTP API: the vendor's event log. It only wires; the routes live in
// shared/httpapi.
package main

import (
	"github.com/moku/sellerapi/shared/httpapi"
	"github.com/moku/sellerapi/shared/lambdaapi"
)

func main() { lambdaapi.Main("events", httpapi.Events) }
