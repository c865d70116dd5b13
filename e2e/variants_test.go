package e2e

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"seckill/internal/testutil"
)

// The contract's "Sizes and colours: variants": one sale of several variants, each with
// its own stock, under one per-user limit, bought by crowds through several APIs, on one
// Redis and on the cluster with stock buckets, and rebuilt from MySQL.

// variantStock is a variant of a test's sale: its name and its units.
type variantStock struct {
	name  string
	stock int64
}

// sizes are the tests' variants: 64 units in all, one size of a single unit.
var sizes = []variantStock{{"EU 41", 9}, {"EU 42", 20}, {"EU 43", 1}, {"EU 44", 14}, {"EU 45", 20}}

func variantNames(vs []variantStock) []string {
	names := make([]string, len(vs))
	for i, v := range vs {
		names[i] = v.name
	}
	return names
}

// createVariantSale creates an active sale of the given variants, with extra fields.
func (c *client) createVariantSale(admin string, vs []variantStock, limit, perVariant int, extra map[string]any) activity {
	c.t.Helper()
	list := make([]map[string]any, len(vs))
	for i, v := range vs {
		list[i] = map[string]any{"name": v.name, "stock": v.stock, "external_ref": "SKU-" + v.name}
	}
	fields := map[string]any{"stock": nil, "variants": list, "per_variant_limit": perVariant}
	for k, v := range extra {
		fields[k] = v
	}
	return c.createSaleWith(admin, 0, limit, fields)
}

// auditVariants checks a drained sale of variants per variant in MySQL: no variant sold
// past its stock, activity_variants.sold its units, every order of the crowd's 202s
// stored with the variant it was answered with, no buyer past the per-variant limit of
// one (the audit checks the limit across them), and the ledger balanced for each.
func auditVariants(t *testing.T, s *testutil.Stack, a activity, cr *crowd, vs []variantStock, perVariant int) {
	t.Helper()
	db := s.MySQL.Gorm
	var rows []struct {
		ID, Buyer, Variant, Status string
		VariantIndex               int
		Quantity                   int
	}
	if err := db.Raw("SELECT id, buyer, COALESCE(variant, '') AS variant, COALESCE(variant_index, -1) AS variant_index, "+
		"status, quantity FROM orders WHERE activity_id = ?", a.ID).Scan(&rows).Error; err != nil {
		t.Fatal(err)
	}
	units := make([]int64, len(vs))
	held := map[string]map[int]int{}
	for _, r := range rows {
		if r.VariantIndex < 0 || r.VariantIndex >= len(vs) || vs[r.VariantIndex].name != r.Variant {
			t.Errorf("order %s: variant %q at index %d", r.ID, r.Variant, r.VariantIndex)
			continue
		}
		if acc, ok := cr.accepted[r.ID]; ok && acc.Variant != r.Variant {
			t.Errorf("order %s: MySQL has variant %q, the 202 said %q", r.ID, r.Variant, acc.Variant)
		}
		if r.Status == "created" || r.Status == "paid" {
			units[r.VariantIndex] += int64(r.Quantity)
			if held[r.Buyer] == nil {
				held[r.Buyer] = map[int]int{}
			}
			held[r.Buyer][r.VariantIndex] += r.Quantity
		}
	}
	var sold []struct {
		Idx  int
		Sold int64
	}
	if err := db.Raw("SELECT idx, sold FROM activity_variants WHERE activity_id = ? ORDER BY idx", a.ID).Scan(&sold).Error; err != nil {
		t.Fatal(err)
	}
	if len(sold) != len(vs) {
		t.Fatalf("activity_variants has %d rows, want %d", len(sold), len(vs))
	}
	for i, v := range vs {
		if units[i] > v.stock {
			t.Errorf("variant %s oversold: %d units of %d", v.name, units[i], v.stock)
		}
		if sold[i].Sold != units[i] {
			t.Errorf("variant %s: activity_variants.sold %d, units in created and paid orders %d", v.name, sold[i].Sold, units[i])
		}
	}
	for b, byVariant := range held {
		for i, n := range byVariant {
			if n > perVariant {
				t.Errorf("buyer %s holds %d of %s, past the per-variant limit %d", b, n, vs[i].name, perVariant)
			}
		}
	}
	var l struct {
		Balanced bool
		Variants []struct {
			Name       string
			Difference int64
		}
	}
	r := newClient(t, s.URL).must("GET", fmt.Sprintf("/api/v1/admin/activities/%d/ledger", a.ID), testutil.Token(t, 1, true), nil)
	r.decode(t, &l)
	if !l.Balanced || len(l.Variants) != len(vs) {
		t.Errorf("ledger of the sale of variants: %s", r.Body)
	}
	t.Logf("audit per variant: units sold %v of %v", units, variantStocks(vs))
}

func variantStocks(vs []variantStock) []int64 {
	out := make([]int64, len(vs))
	for i, v := range vs {
		out[i] = v.stock
	}
	return out
}

// mostLeft names the size with the most units left, other than the one named skip.
func mostLeft(vs []variantView, skip string) string {
	best := -1
	for i, v := range vs {
		if v.Name != skip && (best < 0 || v.StockAvailable > vs[best].StockAvailable) {
			best = i
		}
	}
	return vs[best].Name
}

// variantView is a variant as the activity shows it.
type variantView struct {
	Name           string `json:"name"`
	StockTotal     int64  `json:"stock_total"`
	StockAvailable int64  `json:"stock_available"`
	Status         string `json:"status"`
}

// variantsOf reads a sale's status and its variants as the public sale shows them.
func (c *client) variantsOf(activityID int64) (status string, vs []variantView) {
	c.t.Helper()
	// The public sale is a snapshot of the clock's second it was read in: the next
	// second's shows everything done before this call.
	time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second)))
	var a struct {
		Status   string        `json:"status"`
		Variants []variantView `json:"variants"`
	}
	c.must("GET", fmt.Sprintf("/api/v1/activities/%d", activityID), "", nil).decode(c.t, &a)
	return a.Status, a.Variants
}

// TestVariantsCrowdAcrossTwoAPIs: a crowd buys part of a sale of five sizes through two
// APIs on one Redis, each attempt naming a size at random. Nothing is oversold per size,
// nobody passes the limit across sizes or the per-size limit, every 202 is in MySQL with
// its size, and the ledger balances per size. A size sold out answers 409 sold_out while
// the sale and the other sizes sell. Then Redis loses everything (FLUSHALL) and the
// sale is rebuilt from MySQL: each size's units and each buyer's holdings per size come
// back as they were; a second crowd that wants more than is left, and buyers of each
// size after it, sell every unit, and the audits hold again.
func TestVariantsCrowdAcrossTwoAPIs(t *testing.T) {
	srv := testutil.StartRedis(t, "--appendonly", "yes", "--appendfsync", "always")
	s := testutil.StartStackOnTopology(t, testutil.MySQL(t), srv.Topology(), 2, 1)
	c := newClient(t, s.URL)
	admin := testutil.Token(t, 1, true)
	const limit, perVariant = 3, 2
	a := c.createVariantSale(admin, sizes, limit, perVariant, nil)
	if a.StockTotal != 64 {
		t.Fatalf("a sale of sizes of 64 units: stock_total %d", a.StockTotal)
	}
	cr := runCrowd(t, a.ID, crowdPlan{users: 12, concurrency: 16, endpoints: s.URLs, variants: variantNames(sizes)})
	t.Logf("crowd of %d attempts in %v: %v", cr.attempts.Load(), cr.elapsed.Round(time.Millisecond), cr.codes)
	cr.checkReplays(t)

	// EU 43 (one unit) sells out to the first buyer; a buyer of it meets sold_out while
	// the others sell.
	buy := func(user int64, size string, qty int) response {
		return c.must("POST", fmt.Sprintf("/api/v1/activities/%d/orders", a.ID), testutil.Token(t, user, false),
			map[string]any{"quantity": qty, "variant": size})
	}
	if r := buy(7001, "EU 43", 1); r.Status == http.StatusAccepted {
		var o order
		r.decode(t, &o)
		cr.accepted[o.ID] = o
	}
	if r := buy(7002, "EU 43", 1); r.Status != http.StatusConflict || r.errorCode() != "sold_out" {
		t.Errorf("a purchase of a sold-out size: %d %s", r.Status, r.Body)
	}
	before := c.waitDrained(admin, a.ID, time.Minute)
	status, vs := c.variantsOf(a.ID)
	if vs[2].StockAvailable != 0 || vs[2].Status != "sold_out" || before.StockAvailable > 0 && status != "active" {
		t.Errorf("sale %s with EU 43 sold out: %+v", status, vs)
	}
	audit(t, s, a, cr, auditStrict)
	auditVariants(t, s, a, cr, sizes, perVariant)

	// A buyer at the per-size limit of the size with the most units left, below the limit
	// across sizes. The crowd chose its sizes at random, so any one size may be sold out.
	const atLimit = 7100
	full := mostLeft(vs, "")
	if r := buy(atLimit, full, perVariant); r.Status != http.StatusAccepted {
		t.Fatalf("buyer %d buys %d of %s: %d %s", atLimit, perVariant, full, r.Status, r.Body)
	} else {
		var o order
		r.decode(t, &o)
		cr.accepted[o.ID] = o
	}
	c.waitDrained(admin, a.ID, time.Minute)
	_, vs = c.variantsOf(a.ID)
	other := mostLeft(vs, full)

	if err := srv.Client(t).FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	r := c.must("POST", fmt.Sprintf("/api/v1/admin/activities/%d/rebuild", a.ID), admin, nil)
	if r.Status != http.StatusOK {
		t.Fatalf("rebuild: %d %s", r.Status, r.Body)
	}
	_, rebuilt := c.variantsOf(a.ID)
	for i := range vs {
		if rebuilt[i].StockAvailable != vs[i].StockAvailable || rebuilt[i].StockTotal != vs[i].StockTotal {
			t.Errorf("size %s rebuilt with %d of %d left, was %d of %d", vs[i].Name, rebuilt[i].StockAvailable,
				rebuilt[i].StockTotal, vs[i].StockAvailable, vs[i].StockTotal)
		}
	}
	if r := buy(atLimit, full, 1); r.Status != http.StatusConflict || r.errorCode() != "limit_exceeded" {
		t.Errorf("buyer %d held %d of %s before the loss; after the rebuild one more got %d %s", atLimit, perVariant,
			full, r.Status, r.Body)
	}
	if r := buy(atLimit, other, 1); r.Status != http.StatusAccepted {
		t.Errorf("buyer %d, within the limit across sizes, buys %s after the rebuild: %d %s", atLimit, other, r.Status, r.Body)
	} else {
		var o order
		r.decode(t, &o)
		cr.accepted[o.ID] = o
	}

	// The rest sells, size by size, to new buyers; then every size reads sold out.
	cr2 := runCrowd(t, a.ID, crowdPlan{users: 60, firstUser: 3000, concurrency: 16, endpoints: s.URLs, variants: variantNames(sizes)})
	cr.merge(cr2)
	next := int64(8000)
	for i, v := range vs {
		for {
			r := buy(next, v.Name, 1)
			next++
			if r.Status == http.StatusConflict && r.errorCode() == "sold_out" {
				break
			}
			if r.Status != http.StatusAccepted {
				t.Fatalf("size %s: %d %s", v.Name, r.Status, r.Body)
			}
			var o order
			r.decode(t, &o)
			cr.accepted[o.ID] = o
			if next > 9000 {
				t.Fatalf("size %d never sold out", i)
			}
		}
	}
	c.waitDrained(admin, a.ID, time.Minute)
	if status, vs := c.variantsOf(a.ID); status != "sold_out" {
		t.Errorf("every size sold: the sale reads %s, sizes %+v", status, vs)
	}
	audit(t, s, a, cr, auditStrict)
	auditVariants(t, s, a, cr, sizes, perVariant)
}

// TestVariantsCrowdOverThreeMasters: the same sale of sizes in three stock buckets on the
// 3+3 cluster (MIN_REPLICAS=1), bought through two APIs by a crowd that wants more than
// its stock, then by buyers of every size until each sells out: each size's units are
// spread over the buckets and move where its buyers are, nothing is oversold per size,
// nobody passes a limit, and the ledger balances per size.
func TestVariantsCrowdOverThreeMasters(t *testing.T) {
	cl := sharedCluster(t)
	s := testutil.StartStackOnRedis(t, testutil.MySQL(t), cl.Env(), 2, 1, "SECKILL_REDIS_MIN_REPLICAS=1")
	c := newClient(t, s.URL)
	admin := testutil.Token(t, 1, true)
	const limit, perVariant = 3, 2
	a := c.createVariantSale(admin, sizes, limit, perVariant, map[string]any{"stock_buckets": buckets})
	if a.StockBuckets != buckets {
		t.Fatalf("stock_buckets %d, want %d", a.StockBuckets, buckets)
	}
	cr := runCrowd(t, a.ID, crowdPlan{users: 60, concurrency: 16, endpoints: s.URLs, variants: variantNames(sizes)})
	t.Logf("crowd of %d attempts in %v: %v", cr.attempts.Load(), cr.elapsed.Round(time.Millisecond), cr.codes)
	if cr.failed.Load() != 0 || cr.codes["503 unavailable"] != 0 {
		t.Errorf("a healthy cluster: answers %v", cr.codes)
	}
	cr.checkReplays(t)
	next := int64(8000)
	_, vs := c.variantsOf(a.ID)
	for _, v := range vs {
		for {
			r := newClient(t, s.URLs[next%2]).must("POST", fmt.Sprintf("/api/v1/activities/%d/orders", a.ID),
				testutil.Token(t, next, false), map[string]any{"quantity": 1, "variant": v.Name})
			next++
			if r.Status == http.StatusConflict && r.errorCode() == "sold_out" {
				break
			}
			if r.Status != http.StatusAccepted || next > 9000 {
				t.Fatalf("size %s: %d %s", v.Name, r.Status, r.Body)
			}
			var o order
			r.decode(t, &o)
			cr.accepted[o.ID] = o
		}
	}
	st := c.waitDrained(admin, a.ID, time.Minute)
	if st.StockAvailable != 0 || st.Sold != a.StockTotal {
		t.Errorf("every size sold to the last unit over three buckets: stats %+v", st)
	}
	audit(t, s, a, cr, auditStrict)
	auditVariants(t, s, a, cr, sizes, perVariant)
}
