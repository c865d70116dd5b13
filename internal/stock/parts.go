package stock

import _ "embed"

// The parts of the scripts as Go strings, for the scripts still assembled in Go (the
// waitlist's, and the settle and return scripts that offer to it) and for
// internal/line's scripts (SaleStateLua). Each is its .lua file with the parts it needs
// before it, as the files say (-- needs:).
var (
	//go:embed buyer_fields.lua
	buyerFieldsLua string
	//go:embed holdings.lua
	holdingsPart string
	//go:embed user_limit.lua
	userLimitLua string
	//go:embed queued.lua
	queuedLua string
	//go:embed variants.lua
	variantsLua string
	//go:embed variant_holdings.lua
	variantHoldingsPart string
	//go:embed units.lua
	unitsPart string
	//go:embed bump_gen.lua
	bumpGenLua string
	//go:embed list_group.lua
	listGroupLua string
	//go:embed sale_live.lua
	saleLiveLua string
	//go:embed trim_returned.lua
	trimReturnedLua string
	//go:embed sale_state.lua
	saleStatePart string

	holdingsLua        = buyerFieldsLua + holdingsPart
	variantHoldingsLua = variantsLua + variantHoldingsPart
	unitsLua           = queuedLua + holdingsLua + variantHoldingsLua + unitsPart

	// SaleStateLua defines the reads of a sale's state that internal/line's scripts
	// make in the sale's slot (sale_state.lua), so that only this package knows the
	// fields of its hashes.
	SaleStateLua = holdingsLua + saleStatePart
)
