package sale

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"seckill/internal/apitime"
	"seckill/internal/buyer"
)

// AppendJSON writes what json.Marshal writes: an order with no optional field, one with
// every field set (by reflection, so that a field added to Order and not to AppendJSON
// fails here), and strings encoding/json escapes.
func TestAppendJSONIsMarshal(t *testing.T) {
	at := apitime.Of(time.Date(2026, 12, 6, 5, 4, 3, 210_987_654, time.UTC))
	yes := true
	plain := Order{ID: "o1-abc", ActivityID: 1, Named: buyer.ID("alice").Named(), Quantity: 1, AmountCents: 100,
		Status: "queued", CreatedAt: at, ExpiresAt: at}
	tests := []struct {
		name string
		o    Order
	}{
		{"no optional field", plain},
		{"every field set", everyFieldSet(t)},
		{"a decimal buyer, paid and refunded", func() Order {
			o := plain
			o.Named, o.PaidAt, o.RefundedAt, o.Restock, o.PaidBy = buyer.ID("42").Named(), &at, &at, &yes, "buyer"
			return o
		}()},
		{"strings encoding/json escapes", func() Order {
			o := plain
			o.Named = buyer.ID("a<b>&\"c\\d\x01é\u2028\xff").Named()
			o.Variant, o.FailureReason = "Größe 42 <XL>", "tab\there"
			o.CheckoutURL = "https://shop.example/pay?order={o}&sale=1"
			return o
		}()},
		{"negative and zero numbers", func() Order {
			o := plain
			o.ActivityID, o.AmountCents, o.Quantity = -7, 0, 0
			return o
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := json.Marshal(tt.o)
			if err != nil {
				t.Fatal(err)
			}
			got, err := tt.o.AppendJSON([]byte("prefix"))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != "prefix"+string(want) {
				t.Errorf("AppendJSON wrote\n%s\njson.Marshal writes\n%s", got[len("prefix"):], want)
			}
		})
	}
	far := plain
	far.ExpiresAt = apitime.Time{Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}
	if _, err := json.Marshal(far); err == nil {
		t.Fatal("json.Marshal took a year past 9999")
	}
	if b, err := far.AppendJSON(nil); err == nil {
		t.Errorf("AppendJSON wrote %s for a year past 9999, want an error as json.Marshal's", b)
	}
}

// everyFieldSet is an order whose every field, the embedded ones' included, holds a
// value that is not its zero: a string of its name, a number, true, a time.
func everyFieldSet(t *testing.T) Order {
	t.Helper()
	var o Order
	at := reflect.ValueOf(apitime.Of(time.Date(2026, 12, 6, 5, 4, 3, 0, time.UTC)))
	var fill func(v reflect.Value, name string)
	fill = func(v reflect.Value, name string) {
		switch {
		case v.Type() == at.Type():
			v.Set(at)
		case v.Kind() == reflect.Pointer:
			v.Set(reflect.New(v.Type().Elem()))
			fill(v.Elem(), name)
		case v.Kind() == reflect.Struct:
			for i := range v.NumField() {
				if v.Type().Field(i).IsExported() {
					fill(v.Field(i), v.Type().Field(i).Name)
				}
			}
		case v.Kind() == reflect.String:
			v.SetString(name + " value")
		case v.CanInt():
			v.SetInt(int64(len(name)))
		case v.Kind() == reflect.Bool:
			v.SetBool(true)
		default:
			t.Fatalf("field %s of Order: a %s, which everyFieldSet does not fill", name, v.Type())
		}
	}
	fill(reflect.ValueOf(&o).Elem(), "Order")
	return o
}

// What an accepted purchase's answer costs to write, by reflection and by hand:
//
//	go test -run '^$' -bench OrderJSON -benchmem ./internal/sale/
func BenchmarkOrderJSON(b *testing.B) {
	at := apitime.Of(time.Now())
	o := Order{ID: "01KBSXQ4C6V9J1Q2W3E4R5T6Y71", ActivityID: 1, Named: buyer.ID("1234567").Named(), Quantity: 1,
		AmountCents: 100, Status: "queued", CreatedAt: at, ExpiresAt: at}
	b.Run("json.Marshal", func(b *testing.B) {
		for b.Loop() {
			if _, err := json.Marshal(o); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("AppendJSON", func(b *testing.B) {
		for b.Loop() {
			if _, err := o.AppendJSON(make([]byte, 0, 384)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
