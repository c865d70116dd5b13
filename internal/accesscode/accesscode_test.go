package accesscode_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"gorm.io/gorm"

	"seckill/internal/accesscode"
	"seckill/internal/buyer"
	"seckill/internal/stock"
	"seckill/internal/stock/codes"
	"seckill/internal/stock/stocktest"
	"seckill/internal/store"
	"seckill/internal/testutil"
)

type fixture struct {
	db    *gorm.DB
	rdb   *redis.Client
	store *store.Store
	stock *stocktest.Side
	codes *accesscode.Codes
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	db := testutil.MySQL(t).Gorm
	rdb := testutil.StartRedis(t).Client(t)
	st, sk := store.New(db, nil), stocktest.New(rdb)
	return &fixture{db: db, rdb: rdb, store: st, stock: sk, codes: accesscode.New(db, st.Activities, codes.New(sk.Stock))}
}

// sale stores a sale that starts in an hour, of buckets stock buckets, loaded in Redis.
func (f *fixture) sale(t *testing.T, buckets int) int64 {
	t.Helper()
	now := time.Now().UTC().Truncate(time.Millisecond)
	a := store.Activity{Name: "drop", ProductName: "p", StockTotal: 10, PerUserLimit: 1, StartsAt: now.Add(time.Hour),
		EndsAt: now.Add(2 * time.Hour), PayWindowSeconds: 900, StockBuckets: buckets, EarlyAccessSeconds: 600}
	err := f.store.Activities.CreateActivity(context.Background(), &a, func(a store.Activity) error {
		return f.stock.Load(context.Background(), stock.Sale{ActivityID: a.ID, Available: 10, Total: 10, Limit: 1,
			StartsAt: a.StartsAt, EndsAt: a.EndsAt, Buckets: buckets})
	})
	if err != nil {
		t.Fatal(err)
	}
	return a.ID
}

// redisCodes reads a sale's codes hash.
func (f *fixture) redisCodes(t *testing.T, id int64) map[string]string {
	t.Helper()
	h, err := f.rdb.HGetAll(context.Background(), stock.CodesKey(stock.One(id))).Result()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// claimScript presents a code as the reserve script and the waiting room's join do
// (internal/stock's code.lua, as it stands), for the tests of what follows a use.
var claimScript = redis.NewScript(codePart() + `
return code_refused(KEYS[1], KEYS[2], ARGV[1], ARGV[2], tonumber(ARGV[3])) or 'ok'
`)

// codePart is internal/stock's code.lua.
func codePart() string {
	b, err := os.ReadFile("../stock/code.lua")
	if err != nil {
		panic(err)
	}
	return string(b)
}

func (f *fixture) present(t *testing.T, id int64, code string, who buyer.ID) string {
	t.Helper()
	got, err := claimScript.Run(context.Background(), f.rdb, []string{stock.CodesKey(stock.One(id)), stock.CodeClaimsKey(stock.One(id))},
		code, who.Key(), time.Now().UnixMilli()).Text()
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// An import of 100,000 codes is one call; repeated, it adds nothing and changes no
// code, also one a buyer owns or the shop revoked since. The codes are listed in pages,
// each once, without the revoked one.
func TestImportOfAHundredThousand(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	id := f.sale(t, 1)
	codes := make([]string, accesscode.MaxPerCall)
	for i := range codes {
		codes[i] = fmt.Sprintf("MEMBER-%06d", i)
	}
	began := time.Now()
	added, err := f.codes.Add(ctx, id, codes)
	if err != nil || added != len(codes) {
		t.Fatalf("import: added %d, %v; want %d", added, err, len(codes))
	}
	t.Logf("an import of %d codes took %v", len(codes), time.Since(began).Round(time.Millisecond))
	if got := f.present(t, id, "MEMBER-000007", buyer.Of(7)); got != "ok" {
		t.Fatalf("a buyer presents a code: %s", got)
	}
	if err := f.codes.Revoke(ctx, id, "MEMBER-000009"); err != nil {
		t.Fatal(err)
	}
	before := f.redisCodes(t, id)
	if added, err := f.codes.Add(ctx, id, codes); err != nil || added != 0 {
		t.Fatalf("the import again: added %d, %v; want 0", added, err)
	}
	after := f.redisCodes(t, id)
	if len(after) != len(codes) || after["MEMBER-000007"] != before["MEMBER-000007"] || after["MEMBER-000009"] != "-" {
		t.Errorf("after the import again Redis holds %d codes, 7 %q (was %q), 9 %q; want %d, 7 unchanged, 9 revoked",
			len(after), after["MEMBER-000007"], before["MEMBER-000007"], after["MEMBER-000009"], len(codes))
	}
	if n, err := f.codes.Counts(ctx, id); err != nil || n != (accesscode.Counts{Issued: 99_999, Revoked: 1}) {
		t.Errorf("counts %+v, %v; want 99999 issued (the use is not recorded yet), 1 revoked", n, err)
	}
	var listed []string
	for after := ""; ; {
		page, err := f.codes.List(ctx, id, after, accesscode.MaxPage)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, c := range page {
			listed = append(listed, c.Code)
		}
		after = page[len(page)-1].Code
	}
	want := slices.Clone(codes)
	want = slices.Delete(want, 9, 10)
	if !slices.Equal(listed, want) {
		t.Errorf("listed %d codes, want the %d not revoked, in order, each once", len(listed), len(want))
	}
}

// Bad imports and generations are refused, naming what is wrong, and change nothing.
func TestBadCodes(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	id := f.sale(t, 1)
	several := f.sale(t, 3)
	var fe *accesscode.FieldError
	for _, tc := range []struct {
		name  string
		sale  int64
		codes []string
		count int
		field string
		err   error
	}{
		{name: "none", sale: id, codes: []string{}, field: "codes"},
		{name: "too many", sale: id, codes: make([]string, accesscode.MaxPerCall+1), field: "codes"},
		{name: "too short", sale: id, codes: []string{"GOOD1", "abc"}, field: "codes[1]"},
		{name: "a space first", sale: id, codes: []string{" code"}, field: "codes[0]"},
		{name: "a space last", sale: id, codes: []string{"GOOD1", "code "}, field: "codes[1]"},
		{name: "a control character", sale: id, codes: []string{"code\x00"}, field: "codes[0]"},
		{name: "not ASCII", sale: id, codes: []string{"codé"}, field: "codes[0]"},
		{name: "count 0", sale: id, count: 0, field: "count"},
		{name: "count over", sale: id, count: accesscode.MaxPerCall + 1, field: "count"},
		{name: "no such sale", sale: 999999, codes: []string{"GOOD1"}, err: store.ErrNotFound},
		{name: "several buckets", sale: several, codes: []string{"GOOD1"}, err: accesscode.ErrSeveralBuckets},
		{name: "several buckets, made", sale: several, count: 3, err: accesscode.ErrSeveralBuckets},
	} {
		var err error
		if tc.codes != nil {
			_, err = f.codes.Add(ctx, tc.sale, tc.codes)
		} else {
			_, err = f.codes.Generate(ctx, tc.sale, tc.count)
		}
		switch {
		case tc.field != "" && (!errors.As(err, &fe) || fe.Field != tc.field):
			t.Errorf("%s: %v; want a field error naming %s", tc.name, err, tc.field)
		case tc.err != nil && !errors.Is(err, tc.err):
			t.Errorf("%s: %v; want %v", tc.name, err, tc.err)
		}
	}
	if n, err := f.codes.Counts(ctx, id); err != nil || n != (accesscode.Counts{}) {
		t.Errorf("after the refusals: %+v, %v; want no code", n, err)
	}
	if err := f.codes.Revoke(ctx, id, "NEVER"); !errors.Is(err, accesscode.ErrNoCode) {
		t.Errorf("revoking a code the sale never had: %v, want ErrNoCode", err)
	}
}

// A sale that has ended, or is archived, takes no codes.
func TestNoCodesForASaleOver(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	id := f.sale(t, 1)
	f.codes.SetClock(func() time.Time { return time.Now().Add(3 * time.Hour) })
	if _, err := f.codes.Add(ctx, id, []string{"LATE1"}); !errors.Is(err, stock.ErrEnded) {
		t.Errorf("an import after the end: %v, want stock.ErrEnded", err)
	}
	if err := f.db.Exec("UPDATE activities SET archived_at = NOW(3) WHERE id = ?", id).Error; err != nil {
		t.Fatal(err)
	}
	if _, err := f.codes.Generate(ctx, id, 1); !errors.Is(err, store.ErrArchived) {
		t.Errorf("codes made for an archived sale: %v, want store.ErrArchived", err)
	}
}

// Generated codes are stored and in Redis, each new, and a buyer may present them.
func TestGeneratedCodes(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	id := f.sale(t, 1)
	codes, err := f.codes.Generate(ctx, id, 1000)
	if err != nil || len(codes) != 1000 {
		t.Fatalf("generate: %d codes, %v", len(codes), err)
	}
	more, err := f.codes.Generate(ctx, id, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if h := f.redisCodes(t, id); len(h) != 2000 {
		t.Errorf("Redis holds %d codes, want 2000", len(h))
	}
	if n, err := f.codes.Counts(ctx, id); err != nil || n.Issued != 2000 {
		t.Errorf("counts %+v, %v; want 2000 issued", n, err)
	}
	if got := f.present(t, id, more[999], buyer.ID("auth0|ab")); got != "ok" {
		t.Errorf("presenting a generated code: %s", got)
	}
}

// Many buyers present one code at once: exactly one owns it, the others are told it is
// taken, and its owner may present it again. A revoked code and one the sale never had
// are invalid, to its owner too.
func TestFirstPresenterOwns(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	id := f.sale(t, 1)
	if _, err := f.codes.Add(ctx, id, []string{"SHARED", "GONE"}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	answers := make([]string, 50)
	for i := range answers {
		wg.Go(func() { answers[i] = f.present(t, id, "SHARED", buyer.Of(int64(i+1))) })
	}
	wg.Wait()
	owner := slices.Index(answers, "ok")
	if owner < 0 || slices.Index(answers[owner+1:], "ok") >= 0 {
		t.Fatalf("answers %v: want exactly one ok", answers)
	}
	for i, a := range answers {
		if i != owner && a != "taken" {
			t.Errorf("buyer %d: %s, want taken", i+1, a)
		}
	}
	if got := f.present(t, id, "SHARED", buyer.Of(int64(owner+1))); got != "ok" {
		t.Errorf("its owner again: %s, want ok", got)
	}
	if got := f.present(t, id, "GONE", buyer.Of(1)); got != "ok" {
		t.Fatal(got)
	}
	if err := f.codes.Revoke(ctx, id, "GONE"); err != nil {
		t.Fatal(err)
	}
	if got := f.present(t, id, "GONE", buyer.Of(1)); got != "invalid" {
		t.Errorf("a revoked code to its owner: %s, want invalid", got)
	}
	if got := f.present(t, id, "NEVER", buyer.Of(2)); got != "invalid" {
		t.Errorf("a code never issued: %s, want invalid", got)
	}
}

// The worker records each code's owner in MySQL, the revoked one's too, once; a sale's
// codes written back after Redis lost them keep their owners and revocations, and a
// rebuild of a sale Redis still has keeps an owner MySQL has not recorded yet.
func TestRecordAndRestore(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	id := f.sale(t, 1)
	if _, err := f.codes.Add(ctx, id, []string{"ONE1", "TWO2", "THREE", "FOUR"}); err != nil {
		t.Fatal(err)
	}
	f.present(t, id, "ONE1", buyer.Of(1))
	f.present(t, id, "TWO2", buyer.ID("auth0|two"))
	if err := f.codes.Revoke(ctx, id, "TWO2"); err != nil {
		t.Fatal(err)
	}
	if err := f.codes.Revoke(ctx, id, "FOUR"); err != nil {
		t.Fatal(err)
	}
	if n, err := f.codes.Record(ctx); err != nil || n != 2 {
		t.Fatalf("record: %d, %v; want 2", n, err)
	}
	if n, err := f.codes.Record(ctx); err != nil || n != 0 {
		t.Errorf("record again: %d, %v; want 0", n, err)
	}
	var two struct {
		Buyer     string
		RevokedAt *time.Time
	}
	if err := f.db.Raw("SELECT buyer, revoked_at FROM access_codes WHERE activity_id = ? AND code = 'TWO2'", id).
		Scan(&two).Error; err != nil || two.Buyer != "auth0|two" || two.RevokedAt == nil {
		t.Errorf("the revoked code's row: %+v, %v; want its owner recorded, revoked", two, err)
	}
	page, err := f.codes.List(ctx, id, "", 10)
	if err != nil || len(page) != 2 || page[0].Code != "ONE1" || page[0].Buyer == nil || *page[0].Buyer != "1" ||
		page[0].UsedAt == nil || page[1].Buyer != nil {
		t.Errorf("list: %+v, %v; want ONE1 used by 1, THREE free", page, err)
	}
	kept := f.redisCodes(t, id)

	if err := f.rdb.FlushAll(ctx).Err(); err != nil { // Redis loses the sale
		t.Fatal(err)
	}
	if err := f.codes.Restore(ctx, id); err != nil {
		t.Fatal(err)
	}
	if got := f.redisCodes(t, id); !maps.Equal(got, kept) {
		t.Errorf("restored %v, want %v", got, kept)
	}

	f.present(t, id, "THREE", buyer.Of(3)) // a use MySQL has not recorded, then a forced rebuild
	owned := f.redisCodes(t, id)["THREE"]
	if err := f.codes.Restore(ctx, id); err != nil {
		t.Fatal(err)
	}
	if got := f.redisCodes(t, id)["THREE"]; got != owned || got == "" {
		t.Errorf("THREE after the rebuild: %q, want %q (its owner kept)", got, owned)
	}
	if err := f.codes.RecordSale(ctx, id); err != nil {
		t.Fatal(err)
	}
	if n, err := f.codes.Counts(ctx, id); err != nil || n != (accesscode.Counts{Issued: 2, Used: 2, Revoked: 2}) {
		t.Errorf("counts %+v, %v; want 2 issued, both used, 2 revoked", n, err)
	}
}
