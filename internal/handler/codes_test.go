package handler_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"seckill/internal/handler"
	"seckill/internal/testutil"
)

// The routes of a sale's access codes: each bad input a 400 naming what is wrong, an
// import repeated adding nothing, pages of the codes with a cursor of their own, a code
// holding "/" revoked by name, and the routes open to the shop (admin or service) only.
func TestAccessCodeRoutes(t *testing.T) {
	s := newStack(t, handler.Options{})
	admin, service, user := testutil.Token(t, 1, true), testutil.ServiceToken(t, 9), testutil.Token(t, 42, false)
	now := s.clock.Now()
	id := s.sale(10, 1, now.Add(time.Hour), now.Add(2*time.Hour))
	path := fmt.Sprintf("/api/v1/admin/activities/%d/access-codes", id)
	post := func(body string) answer {
		return s.do(call{method: "POST", path: path, token: admin, body: body})
	}
	for _, tc := range []struct{ body, message string }{
		{`{}`, "count or codes is required"},
		{`{"count": 3, "codes": ["ABCD"]}`, "not both"},
		{`{"count": 0}`, "count must be between 1 and 100000"},
		{`{"count": 100001}`, "count must be between 1 and 100000"},
		{`{"count": "3"}`, "count must be"},
		{`{"codes": []}`, "codes must hold 1 to 100000 codes"},
		{`{"codes": "ABCD"}`, "codes must be"},
		{`{"codes": ["GOOD1", "bad"]}`, "codes[1] must be 4 to 64 bytes of printable ASCII"},
		{`{"codes": [" lead"]}`, "neither the first nor the last a space"},
		{`{"codes": ["trail "]}`, "codes[0] must be"},
		{`{"codes": ["tab\there"]}`, "codes[0] must be"},
		{`{"codes": ["` + strings.Repeat("x", 65) + `"]}`, "codes[0] must be"},
	} {
		a := post(tc.body)
		wantError(t, a, http.StatusBadRequest, "invalid_request")
		if !strings.Contains(a.body, tc.message) {
			t.Errorf("%s: %s, want a message with %q", tc.body, a.body, tc.message)
		}
	}
	if a := post(`{"codes": ["MEMBER1", "MEMBER2", "A/B%C?D", "VIP 2027"]}`); a.status != http.StatusCreated || a.body != `{"added":4}` {
		t.Fatalf("import: %d %s", a.status, a.body)
	}
	if a := s.do(call{method: "POST", path: path, token: service, body: `{"codes": ["MEMBER1", "MEMBER2", "MEMBER3"]}`}); a.status != http.StatusCreated || a.body != `{"added":1}` {
		t.Errorf("the import again, with one more, by the shop's back end: %d %s", a.status, a.body)
	}
	var made struct{ Codes []string }
	if a := post(`{"count": 5}`); a.status != http.StatusCreated || json.Unmarshal([]byte(a.body), &made) != nil || len(made.Codes) != 5 {
		t.Fatalf("make 5: %d %s", a.status, a.body)
	}

	var listed []string
	next := ""
	for pages := 0; ; pages++ {
		q := "?limit=3"
		if next != "" {
			q += "&after=" + url.QueryEscape(next)
		}
		a := s.do(call{method: "GET", path: path + q, token: service})
		var page struct {
			Codes []struct{ Code string }
			Next  *string
		}
		if a.status != http.StatusOK || json.Unmarshal([]byte(a.body), &page) != nil || pages > 5 {
			t.Fatalf("page %d: %d %s", pages, a.status, a.body)
		}
		if len(page.Codes) == 0 {
			if page.Next != nil {
				t.Errorf("an empty page has next %q, want null", *page.Next)
			}
			break
		}
		for _, c := range page.Codes {
			listed = append(listed, c.Code)
		}
		next = *page.Next
	}
	if len(listed) != 10 {
		t.Errorf("listed %v, want the 10 codes", listed)
	}
	other := s.sale(10, 1, now.Add(time.Hour), now.Add(2*time.Hour))
	for _, c := range []call{
		{method: "GET", path: path + "?limit=0"},
		{method: "GET", path: path + "?limit=1001"},
		{method: "GET", path: path + "?limit=x"},
		{method: "GET", path: path + "?after=made-up"},
		{method: "GET", path: fmt.Sprintf("/api/v1/admin/activities/%d/access-codes?after=%s", other, url.QueryEscape(next))},
	} {
		c.token = admin
		wantError(t, s.do(c), http.StatusBadRequest, "invalid_request")
	}

	del := path + "/" + url.PathEscape("A/B%C?D")
	for range 2 { // revoked, then again: 204 both times
		if a := s.do(call{method: "DELETE", path: del, token: admin}); a.status != http.StatusNoContent || a.body != "" {
			t.Errorf("revoke a code holding / %% ?: %d %q", a.status, a.body)
		}
	}
	if n, err := s.codes.Counts(context.Background(), id); err != nil || n.Issued != 9 || n.Revoked != 1 {
		t.Errorf("counts after the revoke: %+v, %v; want 9 issued, 1 revoked", n, err)
	}
	for _, c := range []call{
		{method: "DELETE", path: path + "/NEVER"},
		{method: "GET", path: "/api/v1/admin/activities/999999/access-codes"},
		{method: "POST", path: "/api/v1/admin/activities/999999/access-codes", body: `{"count": 1}`},
		{method: "POST", path: "/api/v1/admin/activities/01/access-codes", body: `{"count": 1}`},
	} {
		c.token = admin
		wantError(t, s.do(c), http.StatusNotFound, "not_found")
	}
	for _, c := range []call{
		{method: "GET", path: path, token: user},
		{method: "POST", path: path, token: user, body: `{"count": 1}`},
		{method: "DELETE", path: path + "/MEMBER1", token: user},
	} {
		wantError(t, s.do(c), http.StatusForbidden, "forbidden")
	}
	wantError(t, s.do(call{method: "GET", path: path}), http.StatusUnauthorized, "unauthorized")

	ended := s.sale(10, 1, now.Add(-2*time.Hour), now.Add(-time.Hour))
	wantError(t, s.do(call{method: "POST", path: fmt.Sprintf("/api/v1/admin/activities/%d/access-codes", ended),
		token: admin, body: `{"count": 1}`}), http.StatusConflict, "sale_ended")
}

// An import may carry up to 8 MiB (100,000 codes of 64 bytes), from the shop only: a
// body past it is 413 whether its length is told or not, and a body larger than 64 KiB
// from anyone else is refused before it is read.
func TestAccessCodeImportBody(t *testing.T) {
	s := newStack(t, handler.Options{})
	admin, user := testutil.Token(t, 1, true), testutil.Token(t, 42, false)
	now := s.clock.Now()
	id := s.sale(10, 1, now.Add(time.Hour), now.Add(2*time.Hour))
	path := fmt.Sprintf("/api/v1/admin/activities/%d/access-codes", id)
	codes := make([]string, 100_000)
	for i := range codes {
		codes[i] = fmt.Sprintf("%064d", i)
	}
	full, _ := json.Marshal(map[string]any{"codes": codes})
	if a := s.do(call{method: "POST", path: path, token: admin, body: string(full)}); a.status != http.StatusCreated ||
		a.body != `{"added":100000}` {
		t.Fatalf("an import of 100,000 codes of 64 bytes (%d bytes): %d %s", len(full), a.status, a.body)
	}
	over := `{"codes": ["` + strings.Repeat("x", 8<<20) + `"]}`
	for _, chunked := range []bool{false, true} {
		a := s.do(call{method: "POST", path: path, token: admin, body: over, chunked: chunked})
		wantError(t, a, http.StatusRequestEntityTooLarge, "payload_too_large")
		if !strings.Contains(a.body, "8 MiB") {
			t.Errorf("over 8 MiB (chunked %v): %s, want the message to say 8 MiB", chunked, a.body)
		}
	}
	wantError(t, s.do(call{method: "POST", path: path, token: user, body: string(full)}), http.StatusForbidden, "forbidden")
	big := `{"name": "` + strings.Repeat("x", 64<<10) + `"}`
	wantError(t, s.do(call{method: "POST", path: "/api/v1/admin/activities", token: admin, body: big}),
		http.StatusRequestEntityTooLarge, "payload_too_large")
}

// A code presented over 64 bytes or with a control character, or two codes in one
// request, is 400 naming the header, on a purchase, a seat and a line's join alike, and
// takes nothing; an empty header is no code.
func TestAccessCodeHeader(t *testing.T) {
	s := newStack(t, handler.Options{})
	now := s.clock.Now()
	id := s.sale(10, 1, now.Add(time.Hour), now.Add(2*time.Hour))
	user := testutil.Token(t, 42, false)
	for _, code := range []string{strings.Repeat("x", 65), "AB\tCD"} {
		for _, path := range []string{
			fmt.Sprintf("/api/v1/activities/%d/orders", id),
			fmt.Sprintf("/api/v1/activities/%d/groups", id),
			fmt.Sprintf("/api/v1/activities/%d/line", id),
		} {
			body := `{"quantity":1}`
			if strings.HasSuffix(path, "/line") {
				body = `{}`
			}
			a := s.do(call{method: "POST", path: path, token: user, body: body, header: map[string]string{"X-Access-Code": code}})
			wantError(t, a, http.StatusBadRequest, "invalid_request")
			if !strings.Contains(a.body, "X-Access-Code must be at most 64 bytes without control characters") {
				t.Errorf("%s with code %q: %s, want the header named", path, code, a.body)
			}
		}
	}
	for path, body := range map[string]string{fmt.Sprintf("/api/v1/activities/%d/orders", id): `{"quantity":1}`,
		fmt.Sprintf("/api/v1/activities/%d/line", id): `{}`} {
		a := s.do(call{method: "POST", path: path, token: user, body: body,
			repeated: http.Header{"X-Access-Code": {"MEMBER-1", "MEMBER-2"}}})
		wantError(t, a, http.StatusBadRequest, "invalid_request")
		if !strings.Contains(a.body, "X-Access-Code must be sent once") {
			t.Errorf("%s with two codes: %s, want the header named", path, a.body)
		}
	}
	a := s.do(call{method: "POST", path: fmt.Sprintf("/api/v1/activities/%d/orders", id), token: user,
		body: `{"quantity":1}`, header: map[string]string{"X-Access-Code": ""}})
	wantError(t, a, http.StatusConflict, "sale_not_started")
	if st, err := s.svc.Catalog.Stats(context.Background(), id); err != nil || st.StockAvailable != 10 {
		t.Errorf("after the refusals: %+v, %v; want 10 units left", st, err)
	}
}
