package handler

import (
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
