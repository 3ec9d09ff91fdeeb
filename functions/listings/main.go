// Command listings is the Lambda of the Listings operation group behind API
// Gateway's HTTP API: the products offered on each connection. It only
// wires; the routes live in shared/httpapi.
package main

import (
	"github.com/moku/sellerapi/shared/httpapi"
	"github.com/moku/sellerapi/shared/lambdaapi"
)

func main() { lambdaapi.Main("listings", httpapi.Listings) }
