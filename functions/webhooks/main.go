// Command webhooks is the Lambda of the Webhooks operation group behind API
// Gateway's HTTP API: webhook subscriptions, their deliveries and event replays. It only wires; the routes live in
// shared/httpapi.
package main

import (
	"github.com/moku/sellerapi/shared/httpapi"
	"github.com/moku/sellerapi/shared/lambdaapi"
)

func main() { lambdaapi.Main("webhooks", httpapi.Webhooks) }
