package sale

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"seckill/internal/accesscode"
	"seckill/internal/apitime"
	"seckill/internal/stock"
	"seckill/internal/store"
)

// Activity statuses.
const (
	StatusUpcoming = "upcoming"
	StatusActive   = "active"
	StatusSoldOut  = "sold_out"
	StatusEnded    = "ended"
)

// Activity is a sale as the API shows it.
type Activity struct {
	ID               int64        `json:"id"`
	Name             string       `json:"name"`
	ProductName      string       `json:"product_name"`
	PriceCents       int64        `json:"price_cents"`
	StockTotal       int64        `json:"stock_total"`
	StockAvailable   int64        `json:"stock_available"`
	PerUserLimit     int          `json:"per_user_limit"`
	StartsAt         apitime.Time `json:"starts_at"`
	EndsAt           apitime.Time `json:"ends_at"`
	PayWindowSeconds int          `json:"pay_window_seconds"`
	Status           string       `json:"status"`
	// Kind is "sale" or "group" (group-buy); the group fields are set for "group".
	Kind                  string `json:"kind"`
	GroupSize             *int   `json:"group_size,omitempty"`
	GroupWindowSeconds    *int   `json:"group_window_seconds,omitempty"`
	PerUserParticipations *int   `json:"per_user_participations,omitempty"`
	// StockBuckets is how many Redis slots hold the sale's stock and buyers
	// (internal/stock/bucket.go).
	StockBuckets int `json:"stock_buckets"`
	// Variants are a sale of variants' sizes or colours, in the order created;
	// PerVariantLimit caps the units of one variant a buyer holds.
	Variants        []Variant `json:"variants,omitempty"`
	PerVariantLimit *int      `json:"per_variant_limit,omitempty"`
	RoomSettings
	// EarlyAccessSeconds is the sale's early window: from EarlyAccessAt (StartsAt less
	// it) to StartsAt, only a buyer with one of its access codes may buy or join its line.
	EarlyAccessSeconds int          `json:"early_access_seconds"`
	EarlyAccessAt      apitime.Time `json:"early_access_at"`
	// ExternalRef and Metadata are the shop's: its reference of the sale, which every
	// order event of the sale carries, and a JSON object (ShopFields).
	ExternalRef string          `json:"external_ref,omitempty"`
	Metadata    json.RawMessage `json:"metadata,omitempty"`
	// ArchivedAt is when the sale was archived: it is over, its Redis state is gone,
	// and every figure of it comes from MySQL. Absent before.
	ArchivedAt *apitime.Time `json:"archived_at,omitempty"`
}

// Variant is one variant of a sale as the API shows it: its status is sold_out with no
// unit left, else the sale's.
type Variant struct {
	Name           string  `json:"name"`
	ExternalRef    *string `json:"external_ref,omitempty"`
	StockTotal     int64   `json:"stock_total"`
	StockAvailable int64   `json:"stock_available"`
	Status         string  `json:"status"`
}

// Kinds of sale.
const (
	KindSale  = "sale"
	KindGroup = "group"
)

// NewActivity is an admin's new sale.
type NewActivity struct {
	Name             string
	ProductName      string
	PriceCents       int64
	Stock            int64
	PerUserLimit     int
	StartsAt         time.Time
	EndsAt           time.Time
	PayWindowSeconds int // 0 for the default
	// Kind is KindSale ("" for it) or KindGroup, which needs GroupSize and
	// GroupWindowSeconds.
	Kind               string
	GroupSize          *int
	GroupWindowSeconds *int
	// PerUserParticipations caps the orders one user holds; nil for no cap.
	PerUserParticipations *int
	// StockBuckets is the Redis slots to split the stock and buyers over (0 for 1): on
	// a cluster, one sale's purchases spread over that many masters. A group-buy sale
	// and a sale with a waiting room keep one (Validate).
	StockBuckets int
	// Room sets the waiting room (room.go); Validate leaves the result in room.
	Room RoomPatch
	room RoomSettings
	// EarlyAccessSeconds opens the sale that long before StartsAt to the holders of its
	// access codes (0: no early window).
	EarlyAccessSeconds int
	// Shop is the shop's reference of the sale and its metadata.
	Shop ShopFields
	// Variants, when not nil, are the sale's variants instead of Stock (which must be
	// 0, or their sum; Validate makes it their sum); PerVariantLimit caps one variant's
	// units a buyer holds (nil: none).
	Variants        []NewVariant
	PerVariantLimit *int
}

// NewVariant is one variant of a new sale.
type NewVariant struct {
	Name        string
	Stock       int64
	ExternalRef *string
}

// ShopFields are a sale's fields that are the shop's own: ExternalRef, 1 to 128
// printable characters (its product's or SKU's id), and Metadata, a JSON object of at
// most MaxMetadata bytes once compacted, kept as sent (compacted). Nil leaves a field
// as it is (unset on a new sale).
type ShopFields struct {
	ExternalRef *string
	Metadata    json.RawMessage
}

// Bounds of the shop's fields.
const (
	MaxExternalRef = 128
	MaxMetadata    = 4096
)

// validExternalRef reports whether r is a shop's reference (of a sale or of a variant):
// 1 to 128 printable characters.
func validExternalRef(r string) bool {
	n := utf8.RuneCountInString(r)
	return n >= 1 && n <= MaxExternalRef && utf8.ValidString(r) && strings.IndexFunc(r, func(c rune) bool { return !unicode.IsPrint(c) }) < 0
}

// check validates the fields and compacts Metadata, or returns a *FieldError.
func (f *ShopFields) check() error {
	if r := f.ExternalRef; r != nil && !validExternalRef(*r) {
		return &FieldError{"external_ref", "must be 1 to 128 printable characters (no control characters, no line breaks)"}
	}
	if f.Metadata == nil {
		return nil
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, f.Metadata); err != nil || compact.Len() == 0 || compact.Bytes()[0] != '{' ||
		!utf8.Valid(compact.Bytes()) {
		return &FieldError{"metadata", "must be a JSON object"}
	}
	if compact.Len() > MaxMetadata {
		return &FieldError{"metadata", fmt.Sprintf("must be at most 4 KiB (4096 bytes) as compact JSON; it is %d", compact.Len())}
	}
	f.Metadata = compact.Bytes()
	return nil
}

// apply sets the fields given on a.
func (f ShopFields) apply(a *store.Activity) {
	if f.ExternalRef != nil {
		a.ExternalRef = f.ExternalRef
	}
	if f.Metadata != nil {
		a.Metadata = f.Metadata
	}
}

// Bounds of an activity's values.
const (
	MaxPriceCents    = 1_000_000_000_000
	MaxStock         = 1_000_000_000
	MaxPerUserLimit  = 1_000_000
	MaxNameLength    = 200
	MinPayWindow     = 10
	MaxPayWindow     = 86400
	DefaultPayWindow = 900
	MinGroupSize     = 2
	MaxGroupSize     = 100
	MinGroupWindow   = 60
	MaxGroupWindow   = 604800
	MaxStockBuckets  = 64
	maxListedOrders  = 500
	MaxVariants      = stock.MaxVariants
	MaxVariantName   = 64
)

// Validate checks every value and returns a *FieldError for the first bad one.
func (n *NewActivity) Validate() error {
	if n.PayWindowSeconds == 0 {
		n.PayWindowSeconds = DefaultPayWindow
	}
	if err := n.validateVariants(); err != nil {
		return err
	}
	switch {
	case n.Name == "" || utf8.RuneCountInString(n.Name) > MaxNameLength:
		return &FieldError{"name", "must be 1 to 200 characters"}
	case n.ProductName == "" || utf8.RuneCountInString(n.ProductName) > MaxNameLength:
		return &FieldError{"product_name", "must be 1 to 200 characters"}
	case n.PriceCents < 0 || n.PriceCents > MaxPriceCents:
		return &FieldError{"price_cents", "must be between 0 and 1000000000000"}
	case n.Variants == nil && (n.Stock < 1 || n.Stock > MaxStock):
		return &FieldError{"stock", "must be between 1 and 1000000000"}
	case n.PerUserLimit < 1 || n.PerUserLimit > MaxPerUserLimit:
		return &FieldError{"per_user_limit", "must be between 1 and 1000000"}
	case !n.EndsAt.After(n.StartsAt):
		return &FieldError{"ends_at", "must be after starts_at"}
	case n.PayWindowSeconds < MinPayWindow || n.PayWindowSeconds > MaxPayWindow:
		return &FieldError{"pay_window_seconds", "must be between 10 and 86400"}
	case n.PerUserParticipations != nil && (*n.PerUserParticipations < 1 || *n.PerUserParticipations > MaxPerUserLimit):
		return &FieldError{"per_user_participations", "must be between 1 and 1000000"}
	case n.StockBuckets < 0 || n.StockBuckets > MaxStockBuckets:
		return &FieldError{"stock_buckets", "must be between 1 and 64"}
	}
	if err := n.validateKind(); err != nil {
		return err
	}
	n.room = defaultRoom
	if err := n.Room.apply(&n.room, n.Kind); err != nil {
		return err
	}
	n.StockBuckets = max(1, n.StockBuckets)
	if err := oneBucket(n.StockBuckets, n.Kind, n.room.WaitingRoom); err != nil {
		return err
	}
	if err := checkEarlyAccess(n.EarlyAccessSeconds, n.StockBuckets); err != nil {
		return err
	}
	return n.Shop.check()
}

// validateVariants checks a sale's variants and its per-variant limit, and makes Stock
// their sum. A sale without variants takes no per-variant limit, a group-buy sale no
// variants.
func (n *NewActivity) validateVariants() error {
	if n.Variants == nil {
		if n.PerVariantLimit != nil {
			return &FieldError{"per_variant_limit", "is only for a sale with variants"}
		}
		return nil
	}
	switch {
	case len(n.Variants) < 1 || len(n.Variants) > MaxVariants:
		return &FieldError{"variants", "must hold 1 to 100 variants"}
	case n.Kind == KindGroup:
		return &FieldError{"variants", "are not for a sale of kind group"}
	case n.PerVariantLimit != nil && (*n.PerVariantLimit < 1 || *n.PerVariantLimit > n.PerUserLimit):
		return &FieldError{"per_variant_limit", "must be between 1 and per_user_limit"}
	}
	seen := make(map[string]bool, len(n.Variants))
	var sum int64
	for i, v := range n.Variants {
		switch {
		case v.Name == "" || utf8.RuneCountInString(v.Name) > MaxVariantName || !printable(v.Name):
			return &FieldError{fmt.Sprintf("variants[%d].name", i), "must be 1 to 64 printable characters"}
		case seen[v.Name]:
			return &FieldError{fmt.Sprintf("variants[%d].name", i), fmt.Sprintf("%q is the name of an earlier variant", v.Name)}
		case v.Stock < 1 || v.Stock > MaxStock:
			return &FieldError{fmt.Sprintf("variants[%d].stock", i), "must be between 1 and 1000000000"}
		case v.ExternalRef != nil && !validExternalRef(*v.ExternalRef):
			return &FieldError{fmt.Sprintf("variants[%d].external_ref", i), "must be 1 to 128 printable characters"}
		}
		seen[v.Name] = true
		sum += v.Stock
	}
	if n.Stock != 0 && n.Stock != sum { // 0, or the sum an earlier Validate made it
		return &FieldError{"stock", "must not be given beside variants: the sale's stock is the sum of theirs"}
	}
	n.Stock = sum
	return nil
}

// printable reports whether s is valid UTF-8 without a control character.
func printable(s string) bool {
	return utf8.ValidString(s) && strings.IndexFunc(s, unicode.IsControl) < 0
}

// oneBucket refuses several buckets for the sales that keep their stock in one: a
// group-buy sale (a seat's group, with its members' seats, is one script's state) and a
// sale with a waiting room (its line admits buyers against the units left, which one
// script reads; and a line paces the sale at admit_per_second anyway).
func oneBucket(buckets int, kind string, room bool) error {
	switch {
	case buckets > 1 && kind == KindGroup:
		return &FieldError{"stock_buckets", "must be 1 for a sale of kind group"}
	case buckets > 1 && room:
		return &FieldError{"stock_buckets", "must be 1 for a sale with a waiting room"}
	}
	return nil
}

// validateKind checks the kind and the group fields it needs (and refuses them on a
// plain sale).
func (n *NewActivity) validateKind() error {
	switch n.Kind {
	case "", KindSale:
		n.Kind = KindSale
		switch {
		case n.GroupSize != nil:
			return &FieldError{"group_size", "is only for a sale of kind group"}
		case n.GroupWindowSeconds != nil:
			return &FieldError{"group_window_seconds", "is only for a sale of kind group"}
		}
		return nil
	case KindGroup:
	default:
		return &FieldError{"kind", `must be "sale" or "group"`}
	}
	switch {
	case n.GroupSize == nil || *n.GroupSize < MinGroupSize || *n.GroupSize > MaxGroupSize:
		return &FieldError{"group_size", "must be between 2 and 100 for a sale of kind group"}
	case n.GroupWindowSeconds == nil || *n.GroupWindowSeconds < MinGroupWindow || *n.GroupWindowSeconds > MaxGroupWindow:
		return &FieldError{"group_window_seconds", "must be between 60 and 604800 for a sale of kind group"}
	}
	return nil
}

// CreateActivity stores a new sale and loads its stock into Redis; it can be bought
// from as soon as this returns.
func (s *Catalog) CreateActivity(ctx context.Context, n NewActivity) (Activity, error) {
	// A sale's times are kept as both stores keep them (Redis in milliseconds, MySQL as
	// DATETIME(3), which rounds where Redis cuts): cut once, as the API shows times, so
	// the sale opens and closes at the instant its answer shows.
	n.StartsAt, n.EndsAt = apitime.Of(n.StartsAt).Time, apitime.Of(n.EndsAt).Time
	if err := n.Validate(); err != nil {
		return Activity{}, err
	}
	a := store.Activity{Name: n.Name, ProductName: n.ProductName, PriceCents: n.PriceCents,
		StockTotal: n.Stock, PerUserLimit: n.PerUserLimit, StartsAt: n.StartsAt,
		EndsAt: n.EndsAt, PayWindowSeconds: n.PayWindowSeconds, Kind: n.Kind, GroupSize: n.GroupSize,
		GroupWindowSeconds: n.GroupWindowSeconds, PerUserParticipations: n.PerUserParticipations, Room: n.room.stored(),
		StockBuckets: n.StockBuckets, PerVariantLimit: n.PerVariantLimit, EarlyAccessSeconds: n.EarlyAccessSeconds}
	n.Shop.apply(&a)
	for i, v := range n.Variants {
		a.Variants = append(a.Variants, store.Variant{Idx: i, Name: v.Name, ExternalRef: v.ExternalRef, StockTotal: v.Stock})
	}
	err := s.store.Activities.CreateActivity(ctx, &a, func(a store.Activity) error {
		return s.sales.Load(ctx, store.SaleOf(a, a.StockTotal))
	})
	if err != nil {
		return Activity{}, fmt.Errorf("create activity: %w", err)
	}
	s.list.Expire() // this process's public reads show it at once
	return s.view(a, map[int64]stock.Sale{a.ID: store.SaleOf(a, a.StockTotal)}), nil
}

// Page is where a list of sales, newest first, goes on: the sales whose id is below
// After (0: from the newest), at most Limit of them.
type Page struct {
	After int64
	Limit int
}

// Bounds of a page of sales (the contract's): Limit from 1 to MaxPage, DefaultPage
// when not given.
const (
	DefaultPage = 100
	MaxPage     = 1000
)

// ListActivities returns a page of sales from MySQL, newest first, with the stock Redis
// has left, and the After of the next page (0 when this one is the last): the admin's
// list, exact at the moment it is asked for.
func (s *Catalog) ListActivities(ctx context.Context, p Page) ([]Activity, int64, error) {
	as, err := s.store.Activities.ActivitiesBefore(ctx, p.After, p.Limit+1) // one more says whether a page follows
	if err != nil {
		return nil, 0, fmt.Errorf("list activities: %w", err)
	}
	next := int64(0)
	if len(as) > p.Limit {
		as, next = as[:p.Limit], as[p.Limit-1].ID
	}
	views, err := s.views(ctx, as)
	return views, next, err
}

// PublicActivities returns a page of sales, newest first, as ListActivities does, from
// a snapshot of the whole list at most CatalogAge old (catalog): a flood of the public
// list reaches MySQL at most once per CatalogAge in this process.
func (s *Catalog) PublicActivities(ctx context.Context, p Page) ([]Activity, int64, error) {
	all, err := s.publicList(ctx)
	if err != nil {
		return nil, 0, err
	}
	from := 0 // newest first: the page starts at the first sale below After
	if p.After > 0 {
		from, _ = slices.BinarySearchFunc(all, p.After, func(a Activity, after int64) int {
			if a.ID >= after {
				return -1
			}
			return 1
		})
	}
	page := all[from:min(len(all), from+p.Limit)]
	next := int64(0)
	if from+p.Limit < len(all) {
		next = page[len(page)-1].ID
	}
	return page, next, nil
}

// publicList is every sale, newest first, from a snapshot at most CatalogAge old.
func (s *Catalog) publicList(ctx context.Context) ([]Activity, error) {
	return s.list.Get(ctx, s.loadPublicList)
}

// loadPublicList reads the sales from MySQL (store.ActivityList) and shows each with
// the state Redis has now. While MySQL does not answer, the sales it last read are shown
// (a sale's own fields seldom change; its units, status and window are Redis'), and that
// is said in the log once per load, not once per request: buyers keep seeing the sales,
// and the lines' status, through a MySQL outage, as purchases go on through it.
func (s *Catalog) loadPublicList(ctx context.Context) ([]Activity, error) {
	as, err := s.listRows.Read(ctx)
	switch last := s.listRows.Last(); {
	case err == nil:
	case last == nil:
		return nil, fmt.Errorf("list activities: %w", err)
	default:
		slog.Warn("public sales: MySQL did not answer; showing the sales it last listed, with Redis' figures", "err", err)
		as = last
	}
	return s.views(ctx, as)
}

// views shows stored sales with the state Redis has now.
func (s *Catalog) views(ctx context.Context, as []store.Activity) ([]Activity, error) {
	ids := make([]int64, 0, len(as))
	for _, a := range as {
		if !s.archived.is(a) {
			ids = append(ids, a.ID)
		}
	}
	sales, err := s.sales.Read(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make([]Activity, len(as))
	for i, a := range as {
		out[i] = s.view(a, sales)
	}
	return out, nil
}

// CatalogAge is the most a snapshot of the public list of sales is behind MySQL and
// Redis.
const CatalogAge = time.Second

// catalogIDs are the sales of the last snapshot of the public list that are not
// archived, without loading one.
func (s *Catalog) catalogIDs() []int64 {
	list, _ := s.list.Last()
	ids := make([]int64, 0, len(list))
	for _, a := range list {
		if a.ArchivedAt == nil { // an archived sale has no Redis state
			ids = append(ids, a.ID)
		}
	}
	return ids
}

// PublicActivity returns one sale as PublicActivities shows it, from the same snapshot:
// a crowd reading a sale, or asking for sales that do not exist (ErrNotFound), reaches
// MySQL at most once per CatalogAge in this process.
func (s *Catalog) PublicActivity(ctx context.Context, id int64) (Activity, error) {
	all, err := s.publicList(ctx)
	if err != nil {
		return Activity{}, err
	}
	i, found := slices.BinarySearchFunc(all, id, func(a Activity, id int64) int { return cmp.Compare(id, a.ID) }) // newest first
	if !found {
		return Activity{}, ErrNotFound
	}
	return all[i], nil
}

// GetActivity returns one sale or ErrNotFound.
func (s *Catalog) GetActivity(ctx context.Context, id int64) (Activity, error) {
	a, err := s.store.Activities.GetActivity(ctx, id)
	if err != nil {
		return Activity{}, fmt.Errorf("get activity: %w", err)
	}
	return s.liveView(ctx, a)
}

// liveView shows a stored activity with the state Redis has now; an archived one as
// MySQL has it.
func (s *Catalog) liveView(ctx context.Context, a store.Activity) (Activity, error) {
	if s.archived.is(a) {
		return s.view(a, nil), nil
	}
	sales, err := s.sales.Read(ctx, []int64{a.ID})
	if err != nil {
		return Activity{}, err
	}
	return s.view(a, sales), nil
}

// view shows a stored activity with Redis's live state when Redis has it, else (an
// archived sale, or one Redis lost) with MySQL's units left: stock_total less the units
// of its grouping, created and paid orders.
func (s *Catalog) view(a store.Activity, sales map[int64]stock.Sale) Activity {
	v := Activity{ID: a.ID, Name: a.Name, ProductName: a.ProductName, PriceCents: a.PriceCents,
		StockTotal: a.StockTotal, StockAvailable: a.StockTotal - a.Sold, PerUserLimit: a.PerUserLimit,
		StartsAt: apitime.Of(a.StartsAt), EndsAt: apitime.Of(a.EndsAt), PayWindowSeconds: a.PayWindowSeconds,
		Kind: a.Kind, GroupSize: a.GroupSize, GroupWindowSeconds: a.GroupWindowSeconds,
		PerUserParticipations: a.PerUserParticipations, StockBuckets: max(1, a.StockBuckets), RoomSettings: roomOf(a),
		EarlyAccessSeconds: a.EarlyAccessSeconds, EarlyAccessAt: apitime.Of(a.EarlyAccessAt()), Metadata: a.Metadata}
	if a.ExternalRef != nil {
		v.ExternalRef = *a.ExternalRef
	}
	if v.Kind == "" {
		v.Kind = KindSale
	}
	if a.ArchivedAt != nil {
		at := apitime.Of(*a.ArchivedAt)
		v.ArchivedAt = &at
	}
	live, isLive := sales[a.ID]
	if isLive {
		v.StockAvailable, v.StockTotal, v.PerUserLimit, v.EndsAt = live.Available, live.Total, live.Limit, apitime.Of(live.EndsAt)
	}
	v.PerVariantLimit = a.PerVariantLimit
	v.Status = s.status(v.StartsAt.Time, v.EndsAt.Time, v.StockAvailable)
	for i, sv := range a.Variants {
		vv := Variant{Name: sv.Name, ExternalRef: sv.ExternalRef, StockTotal: sv.StockTotal, StockAvailable: sv.StockTotal - sv.Sold}
		if isLive && i < len(live.Variants) {
			vv.StockTotal, vv.StockAvailable = live.Variants[i].Total, live.Variants[i].Available
		}
		vv.Status = s.status(v.StartsAt.Time, v.EndsAt.Time, vv.StockAvailable)
		v.Variants = append(v.Variants, vv)
	}
	return v
}

// status is the status of a sale (or one of its variants) of the given window with
// available units left.
func (s *Catalog) status(starts, ends time.Time, available int64) string {
	now := s.now()
	switch {
	case now.Before(starts):
		return StatusUpcoming
	case !now.Before(ends):
		return StatusEnded
	case available <= 0:
		return StatusSoldOut
	}
	return StatusActive
}

// ActivityPatch is an admin's change to a sale; nil fields stay as they are. AddStock
// adds units to a sale without variants, AddVariants to variants of a sale of variants,
// by name.
type ActivityPatch struct {
	PerUserLimit *int
	EndsAt       *time.Time
	AddStock     *int64
	AddVariants  map[string]int64
	Room         RoomPatch
	Shop         ShopFields
	// EarlyAccessSeconds changes the sale's early window.
	EarlyAccessSeconds *int
}

// PatchActivity changes a sale in MySQL and Redis; every API instance sees the change
// at its next request, since purchases read the sale's state from Redis. An archived
// sale is ErrArchived, unchanged.
func (s *Catalog) PatchActivity(ctx context.Context, id int64, p ActivityPatch) (Activity, error) {
	if p.EndsAt != nil {
		ends := apitime.Of(*p.EndsAt).Time // as CreateActivity keeps it
		p.EndsAt = &ends
	}
	switch {
	case p.PerUserLimit != nil && (*p.PerUserLimit < 1 || *p.PerUserLimit > MaxPerUserLimit):
		return Activity{}, &FieldError{"per_user_limit", "must be between 1 and 1000000"}
	case p.AddStock != nil && (*p.AddStock < 1 || *p.AddStock > MaxStock):
		return Activity{}, &FieldError{"add_stock", "must be between 1 and 1000000000"}
	case p.AddVariants != nil && len(p.AddVariants) == 0:
		return Activity{}, &FieldError{"add_stock", "must name at least one variant"}
	}
	if err := p.Shop.check(); err != nil {
		return Activity{}, err
	}
	for name, n := range p.AddVariants {
		if n < 1 || n > MaxStock {
			return Activity{}, &FieldError{"add_stock", fmt.Sprintf("of %q must be between 1 and 1000000000", name)}
		}
	}
	addVariants := map[int]int64{}
	a, err := s.store.Activities.UpdateActivity(ctx, id, func(a *store.Activity) error {
		if p.PerUserLimit != nil {
			a.PerUserLimit = *p.PerUserLimit
		}
		if p.EndsAt != nil {
			if !p.EndsAt.After(a.StartsAt) {
				return &FieldError{"ends_at", "must be after starts_at"}
			}
			a.EndsAt = *p.EndsAt
		}
		switch {
		case p.AddStock != nil && len(a.Variants) > 0:
			return &FieldError{"add_stock", `must be an object of units by variant for a sale of variants, such as {"EU 42": 5}`}
		case p.AddVariants != nil && len(a.Variants) == 0:
			return &FieldError{"add_stock", "must be a number for a sale without variants"}
		case p.AddStock != nil:
			a.StockTotal += *p.AddStock
		}
		for name, n := range p.AddVariants {
			i := slices.IndexFunc(a.Variants, func(v store.Variant) bool { return v.Name == name })
			if i < 0 {
				return &FieldError{"add_stock", fmt.Sprintf("names %q, which is no variant of the sale", name)}
			}
			a.Variants[i].StockTotal += n
			a.StockTotal += n
			addVariants[a.Variants[i].Idx] = n
		}
		room := roomOf(*a)
		if err := p.Room.apply(&room, a.Kind); err != nil {
			return err
		}
		if room.WaitingRoom && a.StockBuckets > 1 {
			return &FieldError{"waiting_room", "is only for a sale of one stock bucket"}
		}
		a.Room = room.stored()
		p.Shop.apply(a)
		if p.EarlyAccessSeconds != nil {
			if err := checkEarlyAccess(*p.EarlyAccessSeconds, a.StockBuckets); err != nil {
				return err
			}
			a.EarlyAccessSeconds = *p.EarlyAccessSeconds
		}
		return nil
	}, func(a store.Activity) error {
		if !p.Room.Empty() {
			if err := s.sales.SetRoom(ctx, id, roomOf(a).stock()); err != nil {
				return err
			}
		}
		if p.EarlyAccessSeconds != nil {
			if err := s.sales.SetEarlyAccess(ctx, id, a.EarlyAccessAt()); err != nil {
				return err
			}
		}
		if p.PerUserLimit == nil && p.EndsAt == nil && p.AddStock == nil && p.AddVariants == nil {
			return nil // nothing Redis keeps
		}
		var add int64
		if p.AddStock != nil {
			add = *p.AddStock
		}
		return s.sales.Patch(ctx, id, p.PerUserLimit, p.EndsAt, add, addVariants)
	})
	if err != nil {
		return Activity{}, fmt.Errorf("patch activity: %w", err)
	}
	s.list.Expire()
	return s.liveView(ctx, a)
}

// Stats are an activity's figures for admins: stock_total = stock_available + sold +
// off_sale, but for units on their way back to stock after a cancel or a refund.
type Stats struct {
	ActivityID     int64 `json:"activity_id"`
	StockTotal     int64 `json:"stock_total"`
	StockAvailable int64 `json:"stock_available"`
	Sold           int64 `json:"sold"`
	// OffSale are the units of orders refunded without restock: neither sold nor
	// available.
	OffSale int64       `json:"off_sale"`
	Orders  OrderCounts `json:"orders"`
	// Variants are a sale of variants' variants, as the activity shows them.
	Variants []Variant `json:"variants,omitempty"`
	// Waitlist is how many entries wait on the sale's waitlist.
	Waitlist int64 `json:"waitlist"`
	// AccessCodes counts the sale's access codes (early access).
	AccessCodes *accesscode.Counts `json:"access_codes,omitempty"`
}

// OrderCounts counts an activity's orders by status.
type OrderCounts struct {
	Queued    int64 `json:"queued"`
	Grouping  int64 `json:"grouping"`
	Created   int64 `json:"created"`
	Paid      int64 `json:"paid"`
	Cancelled int64 `json:"cancelled"`
	Failed    int64 `json:"failed"`
	Refunded  int64 `json:"refunded"`
	// EarlyAccess counts the orders of any status bought in the early window, once in
	// MySQL (a queued one counts once the worker has written it).
	EarlyAccess int64 `json:"early_access"`
}

// Stats returns an activity's figures. Sold counts units of queued (Redis), grouping,
// created and paid (MySQL) orders; OffSale those of orders refunded without restock
// (a refund with restock puts its units back in stock_available). The two stores are
// read one after the other, so while
// orders flow an order moving from queued to created can be counted in both or in
// neither: the figures of a busy sale are right to within the orders persisted during
// the call. GET .../ledger gives an exact balance. An archived sale's come from MySQL
// alone (it has no queued order).
func (s *Catalog) Stats(ctx context.Context, id int64) (Stats, error) {
	a, err := s.GetActivity(ctx, id)
	if err != nil {
		return Stats{}, err
	}
	var queued, queuedUnits int64
	if a.ArchivedAt == nil {
		if queued, queuedUnits, err = s.sales.QueuedTotals(ctx, id); err != nil {
			return Stats{}, err
		}
	}
	counts, err := s.store.Orders.CountOrders(ctx, id)
	if err != nil {
		return Stats{}, fmt.Errorf("count orders: %w", err)
	}
	waiting, err := s.settle.WaitlistLength(ctx, id, len(a.Variants))
	if err != nil {
		return Stats{}, err
	}
	var early int64
	for _, c := range counts {
		early += c.Early
	}
	var codes *accesscode.Counts
	if s.codes != nil {
		n, err := s.codes.Counts(ctx, id)
		if err != nil {
			return Stats{}, err
		}
		codes = &n
	}
	return Stats{ActivityID: id, StockTotal: a.StockTotal, StockAvailable: a.StockAvailable, Variants: a.Variants,
		AccessCodes: codes,
		Waitlist:    waiting,
		Sold: queuedUnits + counts[store.StatusGrouping].Units + counts[store.StatusCreated].Units +
			counts[store.StatusPaid].Units,
		OffSale: counts[store.StatusRefunded].OffSale,
		Orders: OrderCounts{Queued: queued, Grouping: counts[store.StatusGrouping].Orders, Created: counts[store.StatusCreated].Orders,
			Paid: counts[store.StatusPaid].Orders, Cancelled: counts[store.StatusCancelled].Orders,
			Failed: counts[store.StatusFailed].Orders, Refunded: counts[store.StatusRefunded].Orders,
			EarlyAccess: early}}, nil
}

// Rebuild rebuilds a sale's Redis state from MySQL (the admin's button) and returns its
// stats. A current state comes out with the same figures: the orders Redis holds as
// queued are kept. ErrNotFound for an unknown id, ErrArchived for an archived sale.
func (s *Catalog) Rebuild(ctx context.Context, id int64) (Stats, error) {
	if _, err := s.rebuild.Rebuild(ctx, id, true); err != nil {
		if errors.Is(err, ErrNotFound) || errors.Is(err, ErrArchived) {
			return Stats{}, err
		}
		return Stats{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return s.Stats(ctx, id)
}
