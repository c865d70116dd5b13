package altcha_test

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/url"
	"testing"
	"time"

	"seckill/internal/altcha"
)

func TestCreateAndVerify(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	iss := altcha.New([]byte("key-0123456789"))
	c, err := iss.Create(5000, now.Add(time.Minute), url.Values{"sale": {"7"}})
	if err != nil {
		t.Fatal(err)
	}
	if c.Algorithm != "SHA-256" || c.MaxNumber != 5000 || len(c.Challenge) != 64 || len(c.Signature) != 64 {
		t.Fatalf("challenge %+v", c)
	}
	payload, err := altcha.Solve(c)
	if err != nil {
		t.Fatal(err)
	}
	s, err := iss.Verify(payload, now)
	if err != nil {
		t.Fatalf("the solution: %v", err)
	}
	if s.Params.Get("sale") != "7" || !s.Expires.Equal(now.Add(time.Minute)) {
		t.Errorf("params %v, expires %v", s.Params, s.Expires)
	}
	var sol map[string]any
	raw, _ := base64.StdEncoding.DecodeString(payload)
	_ = json.Unmarshal(raw, &sol)
	edit := func(field string, v any) string {
		m := map[string]any{}
		for k, x := range sol {
			m[k] = x
		}
		m[field] = v
		b, _ := json.Marshal(m)
		return base64.StdEncoding.EncodeToString(b)
	}
	other, err := altcha.New([]byte("another-key")).Create(5000, now.Add(time.Minute), nil)
	if err != nil {
		t.Fatal(err)
	}
	otherPayload, err := altcha.Solve(other)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, payload string }{
		{"wrong number", edit("number", sol["number"].(float64)+1)},
		{"another salt", edit("salt", "00?expires=9999999999&sale=7")},
		{"another algorithm", edit("algorithm", "SHA-1")},
		{"unsigned", edit("signature", "00")},
		{"another key's challenge", otherPayload},
		{"not base64", "%%%"},
		{"not JSON", base64.StdEncoding.EncodeToString([]byte("[1,2"))},
	} {
		if _, err := iss.Verify(c.payload, now); !errors.Is(err, altcha.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", c.name, err)
		}
		if _, err := iss.Check(c.payload); !errors.Is(err, altcha.ErrInvalid) {
			t.Errorf("%s: Check: err = %v, want ErrInvalid", c.name, err)
		}
	}
	if _, err := iss.Verify(payload, now.Add(time.Minute)); !errors.Is(err, altcha.ErrInvalid) {
		t.Errorf("at its expiry: err = %v, want ErrInvalid", err)
	}
	// Check leaves the expiry to its caller, and tells it.
	if s, err := iss.Check(payload); err != nil || !s.Expires.Equal(now.Add(time.Minute)) {
		t.Errorf("Check: expires %v, err %v; want %v, nil", s.Expires, err, now.Add(time.Minute))
	}
}
