package handler

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"seckill/internal/sale"
)

// decodeAs runs decode on body as a request would and returns the error and, when it
// failed, the status and body respondError wrote.
func decodeAs(t *testing.T, body string, v any) (error, int, string) {
	gin.SetMode(gin.ReleaseMode)
	w := httptest.NewRecorder()
	c, _ := gin.CreateTestContext(w)
	c.Request = httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
	c.Request.Body = http.MaxBytesReader(w, c.Request.Body, maxBody)
	err := (&middleware{bodyTimeout: time.Second}).decode(c, v)
	if err != nil {
		respondError(c, err)
	}
	return err, w.Code, w.Body.String()
}

// checkRefusal: a refused body is a 400 or 413 with the contract's error body.
func checkRefusal(t *testing.T, body string, status int, answer string) {
	t.Helper()
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if err := json.Unmarshal([]byte(answer), &e); err != nil || e.Error.Message == "" ||
		(status != 400 || e.Error.Code != "invalid_request") && (status != 413 || e.Error.Code != "payload_too_large") {
		t.Fatalf("body %q: answered %d %s; want 400 invalid_request or 413", body, status, answer)
	}
}

func FuzzBuyBody(f *testing.F) {
	for _, seed := range []string{`{"quantity":1}`, `{"quantity":0}`, `{"quantity":-1}`, `{"quantity":1.5}`,
		`{"quantity":"1"}`, `{"quantity":99999999999999999999}`, `{}`, `[]`, `null`, ``, `{"quantity":1}x`,
		`{"quantity":1,"extra":{"a":[1,2]}}`, `{"quantity":null}`, "\xff", `{"quantity":01}`, `{"quantity":-0}`,
		`{"quantity":-}`, `{"quantity":}`, `{"quantity":123456789}`, `{"quantity":1234567890}`, `{"quantity":1}}`,
		`{"quantity":1e0}`, `{"quantity":-12}`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		var req buyRequest
		err, status, answer := decodeAs(t, body, &req)
		// What a purchase reads without encoding/json, decode reads the same.
		if q, ok := plainQuantity([]byte(body)); ok && (err != nil || req.Quantity == nil || *req.Quantity != q) {
			t.Fatalf("body %q: plainQuantity reads %d, decode %v (err %v)", body, q, req.Quantity, err)
		}
		if err != nil {
			checkRefusal(t, body, status, answer)
			return
		}
		if req.Quantity == nil {
			return // the handler answers "quantity is required"
		}
		if !json.Valid([]byte(body)) {
			t.Fatalf("accepted invalid JSON %q", body)
		}
	})
}

func FuzzCreateActivityBody(f *testing.F) {
	valid := `{"name":"n","product_name":"p","price_cents":100,"stock":10,"per_user_limit":2,` +
		`"starts_at":"2026-11-21T10:00:00Z","ends_at":"2026-11-21T11:00:00+01:30","pay_window_seconds":60}`
	for _, seed := range []string{valid, `{}`, `{"name":""}`, strings.Replace(valid, `"stock":10`, `"stock":0`, 1),
		strings.Replace(valid, `100`, `1e3`, 1), strings.Replace(valid, `Z"`, `"`, 1),
		strings.Replace(valid, `"pay_window_seconds":60`, `"pay_window_seconds":0`, 1),
		strings.Replace(valid, `"name":"n"`, `"name":"`+strings.Repeat("é", 201)+`"`, 1)} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body string) {
		var req createActivityRequest
		err, status, answer := decodeAs(t, body, &req)
		if err != nil {
			checkRefusal(t, body, status, answer)
			return
		}
		n, err := req.toNew()
		if err != nil {
			w := httptest.NewRecorder()
			c, _ := gin.CreateTestContext(w)
			respondError(c, err)
			checkRefusal(t, body, w.Code, w.Body.String())
			return
		}
		// Whatever passed is within the contract's bounds.
		if n.Name == "" || n.ProductName == "" || n.PriceCents < 0 || n.PriceCents > sale.MaxPriceCents ||
			n.Stock < 1 || n.Stock > sale.MaxStock || n.PerUserLimit < 1 || n.PerUserLimit > sale.MaxPerUserLimit ||
			!n.EndsAt.After(n.StartsAt) || n.PayWindowSeconds < sale.MinPayWindow || n.PayWindowSeconds > sale.MaxPayWindow {
			t.Fatalf("body %q accepted out of bounds: %+v", body, n)
		}
	})
}

func TestPlainQuantity(t *testing.T) {
	for _, tc := range []struct {
		body string
		want int
		ok   bool
	}{
		{`{"quantity":1}`, 1, true},
		{`{"quantity":0}`, 0, true},
		{`{"quantity":-12}`, -12, true},
		{`{"quantity":999999999}`, 999999999, true},
		{`{"quantity":1234567890}`, 0, false}, // ten digits: encoding/json's to read
		{`{"quantity":01}`, 0, false},
		{`{"quantity":-}`, 0, false},
		{`{"quantity":}`, 0, false},
		{`{"quantity":1.0}`, 0, false},
		{`{"quantity": 1}`, 0, false},
		{`{"quantity":1}}`, 0, false},
		{`{"quantity":1,"quantity":2}`, 0, false},
		{`{"Quantity":1}`, 0, false},
		{``, 0, false},
	} {
		got, ok := plainQuantity([]byte(tc.body))
		if got != tc.want || ok != tc.ok {
			t.Errorf("plainQuantity(%s) = %d, %v; want %d, %v", tc.body, got, ok, tc.want, tc.ok)
		}
	}
}
