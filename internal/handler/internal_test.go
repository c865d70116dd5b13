package handler

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"
)

// A bug answers 500 internal, and the body carries nothing internal.
func TestInternalErrorsHideDetails(t *testing.T) {
	gin.SetMode(gin.ReleaseMode)
	h := New(nil, Options{JWTSecret: strings.Repeat("s", 32)})
	r := gin.New()
	r.Use(h.recover)
	secret := "Error 1064: You have an error in your SQL syntax near 'password'"
	r.GET("/error", func(c *gin.Context) { respondError(c, fmt.Errorf("list: %w", errors.New(secret))) })
	r.GET("/panic", func(c *gin.Context) { panic(secret) })
	for _, path := range []string{"/error", "/panic"} {
		w := httptest.NewRecorder()
		r.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		body := w.Body.String()
		if w.Code != http.StatusInternalServerError || !strings.Contains(body, `"code":"internal"`) {
			t.Errorf("%s: got %d %s, want 500 internal", path, w.Code, body)
		}
		if strings.Contains(body, "SQL") || strings.Contains(body, "password") || strings.Contains(body, "goroutine") {
			t.Errorf("%s: body leaks internals: %s", path, body)
		}
	}
}

// The error body written by hand is what encoding/json would write, for any message.
func FuzzErrorBody(f *testing.F) {
	for _, s := range []string{"", "Sold out.", `quote " and \ back`, "line\nbreak\ttab\r", "\x00\x01\x1f",
		"<script>&amp;</script>", "\u2028\u2029", "héllo wörld 世界 😀", "bad \xff\xfe utf-8", "\xed\xa0\x80"} {
		f.Add("sold_out", s)
	}
	f.Fuzz(func(t *testing.T, code, msg string) {
		gin.SetMode(gin.ReleaseMode)
		w := httptest.NewRecorder()
		c, _ := gin.CreateTestContext(w)
		abort(c, http.StatusConflict, code, msg)
		type detail struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		}
		want, err := json.Marshal(struct {
			Error detail `json:"error"`
		}{detail{code, msg}})
		if err != nil {
			t.Fatal(err)
		}
		if got := w.Body.String(); got != string(want) {
			t.Errorf("body\n got %s\nwant %s", got, want)
		}
		if ct := w.Header().Get("Content-Type"); ct != "application/json; charset=utf-8" {
			t.Errorf("Content-Type %q", ct)
		}
	})
}
