// Command conflicts is the Lambda of the Conflicts operation group behind
// API Gateway's HTTP API: the disagreements the service recorded instead of
// deciding them, and their resolution. It only wires; the routes live in
// shared/httpapi.
package main

import (
	"github.com/moku/sellerapi/shared/httpapi"
	"github.com/moku/sellerapi/shared/lambdaapi"
)

func main() { lambdaapi.Main("conflicts", httpapi.Conflicts) }
