// Package handlertest gives tests the handler's services from one value: a stub that
// answers no call, or one that answers the few calls a test defines.
package handlertest

import "seckill/internal/handler"

// Unserved is every service behind the handler, answering no call: a call panics (a
// nil interface), which the handler answers 500 internal. A test that only lists the
// routes passes it; a test's own stub embeds it and defines the calls it answers.
type Unserved struct {
	handler.Catalog
	handler.Purchases
	handler.Groups
	handler.Orders
	handler.Waitlists
}

// All is a value that answers every service of the handler.
type All interface {
	handler.Catalog
	handler.Purchases
	handler.Groups
	handler.Orders
	handler.Waitlists
}

// Services returns the handler's services, every one answered by v.
func Services(v All) handler.Services {
	return handler.Services{Catalog: v, Purchases: v, Groups: v, Orders: v, Waitlists: v}
}
