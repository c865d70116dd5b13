// Package web serves the buyer's page (/) and the admin's page (/admin): plain HTML,
// CSS and JavaScript embedded in the binary, which call the API of
// api/openapi.yaml from the browser with the token the person signs in with; and the
// API reference (/docs), Redoc rendering GET /api/v1/openapi.yaml.
// There is nothing to build: the files in static/ are served as they are.
package web

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"io/fs"
	"net/http"
	"path"
	"strings"

	"github.com/gin-gonic/gin"
)

//go:embed static
var static embed.FS

// contentSecurityPolicy lets the pages load only their own files and talk only to
// their own origin; no inline script runs.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; " +
	"img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; " +
	"frame-ancestors 'none'"

// docsPolicy is the reference's: Redoc (vendor/redoc) injects its styles at run time and
// builds its search index in a worker made from a blob, and still loads nothing from
// elsewhere.
const docsPolicy = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data:; font-src 'self' data:; worker-src 'self' blob:; connect-src 'self'; " +
	"base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// contentTypes are the types of the files in static/, fixed here so that the
// machine's mime.types cannot change them.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".svg":  "image/svg+xml",
	".png":  "image/png",
	".ico":  "image/x-icon",
	".txt":  "text/plain; charset=utf-8",
}

// file is one embedded file, ready to serve.
type file struct {
	body        []byte
	contentType string
	etag        string
	policy      string // the Content-Security-Policy of a page
}

// Register serves the buyer's page at /, the admin's page at /admin, the API reference
// at /docs, and the pages' files at /static/<name>. Only files that exist get a route,
// so any other path falls through to the engine's NoRoute answer.
func Register(r gin.IRoutes) {
	files := load()
	serveFile := func(f file) gin.HandlerFunc { return func(c *gin.Context) { serve(c, f) } }
	reference := files["docs.html"]
	reference.policy = docsPolicy
	routes := map[string]file{"/": files["index.html"], "/admin": files["admin.html"], "/docs": reference}
	for name, f := range files {
		if !strings.HasSuffix(name, ".html") {
			routes["/static/"+name] = f
		}
	}
	for route, f := range routes {
		r.GET(route, serveFile(f))
		r.HEAD(route, serveFile(f))
	}
}

// load reads every embedded file once. It panics if the embedded tree is broken,
// which only a bad build can cause.
func load() map[string]file {
	files := map[string]file{}
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := static.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		ct, ok := contentTypes[path.Ext(p)]
		if !ok {
			ct = "application/octet-stream"
		}
		files[strings.TrimPrefix(p, "static/")] = file{body: body, contentType: ct,
			etag: `"` + hex.EncodeToString(sum[:12]) + `"`, policy: contentSecurityPolicy}
		return nil
	})
	if err != nil {
		panic("web: read embedded files: " + err.Error())
	}
	for _, page := range []string{"index.html", "admin.html", "docs.html"} {
		if _, ok := files[page]; !ok {
			panic("web: embedded page missing: " + page)
		}
	}
	return files
}

// serve answers with f. Browsers revalidate every time (no-cache) and get 304 while
// the file is unchanged, so a new binary's pages show at the next load.
func serve(c *gin.Context, f file) {
	h := c.Writer.Header()
	h.Set("Cache-Control", "no-cache")
	h.Set("ETag", f.etag)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	if strings.HasPrefix(f.contentType, "text/html") {
		h.Set("Content-Security-Policy", f.policy)
		h.Set("X-Frame-Options", "DENY")
	}
	if match := c.GetHeader("If-None-Match"); match != "" && strings.Contains(match, f.etag) {
		c.Status(http.StatusNotModified)
		return
	}
	c.Data(http.StatusOK, f.contentType, f.body)
}
