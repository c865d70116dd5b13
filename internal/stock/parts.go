package stock

import _ "embed"

// SaleStateLua defines the reads of a sale's state that internal/line's scripts make in
// the sale's slot (sale_state.lua, after holdings.lua and buyer_fields.lua, which it
// needs), so that only this package knows the fields of its hashes.
var SaleStateLua = buyerFieldsPart + holdingsPart + saleStatePart

var (
	//go:embed buyer_fields.lua
	buyerFieldsPart string
	//go:embed holdings.lua
	holdingsPart string
	//go:embed sale_state.lua
	saleStatePart string
)
