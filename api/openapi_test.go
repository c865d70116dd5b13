package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/goccy/go-yaml"

	"seckill/api"
	"seckill/internal/accesscode"
	"seckill/internal/altcha"
	"seckill/internal/apitime"
	"seckill/internal/auth"
	"seckill/internal/buyer"
	"seckill/internal/funnel"
	"seckill/internal/handler"
	"seckill/internal/handler/handlertest"
	"seckill/internal/outbox"
	"seckill/internal/presence"
	"seckill/internal/sale"
	"seckill/internal/store"
	"seckill/internal/waitingroom"
	"seckill/web"
)

// The error codes of the HTTP API, by status.
var contractCodes = []statusCode{
	{400, "invalid_request"}, {401, "unauthorized"}, {403, "forbidden"}, {404, "not_found"},
	{409, "sale_not_started"}, {409, "sale_ended"}, {409, "sold_out"}, {409, "limit_exceeded"},
	{409, "order_not_payable"}, {409, "order_expired"}, {413, "payload_too_large"},
	{422, "idempotency_key_reused"}, {429, "rate_limited"}, {429, "busy"},
	{503, "unavailable"}, {500, "internal"},
	// Group-buy sales (the contract's second round).
	{409, "group_full"}, {409, "group_closed"}, {409, "already_in_group"}, {409, "not_a_group_sale"},
	{409, "group_sale"},
	// The waiting room (the contract's third round).
	{409, "not_admitted"}, {409, "line_not_open"}, {409, "no_waiting_room"}, {400, "challenge_required"},
	{403, "challenge_failed"},
	// A real shop (the contract's fifth round).
	{403, "payment_by_shop"}, {409, "order_not_refundable"},
	// The door under attack (the contract's fifth round).
	{408, "request_timeout"},
	// The waitlist (the contract's fifth round).
	{409, "not_sold_out"},
	// Early access (the contract's sixth round).
	{403, "access_code_taken"}, {403, "access_code_invalid"},
}

// projectCodes are the codes the project added beyond the contract. A new code in
// internal/handler must be added here (and documented) on purpose.
var projectCodes = []statusCode{{405, "method_not_allowed"}, {409, "order_not_cancellable"}, {409, "sale_archived"},
	{409, "no_waitlist"}}

type statusCode struct {
	status int
	code   string
}

func (s statusCode) String() string { return fmt.Sprintf("%d %s", s.status, s.code) }

const secret = "openapi-test-secret-of-at-least-32-bytes"

func init() { gin.SetMode(gin.ReleaseMode) }

var methods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// doc is the parsed document with helpers to walk it.
type doc struct {
	t    *testing.T
	root map[string]any
}

func load(t *testing.T) doc {
	t.Helper()
	var root map[string]any
	if err := yaml.Unmarshal(api.OpenAPI, &root); err != nil {
		t.Fatalf("parse openapi.yaml: %v", err)
	}
	if root == nil {
		t.Fatal("openapi.yaml is empty")
	}
	return doc{t: t, root: root}
}

// get walks keys from n; it returns nil when a key is missing.
func get(n any, keys ...string) any {
	for _, k := range keys {
		m, ok := n.(map[string]any)
		if !ok {
			return nil
		}
		n = m[k]
	}
	return n
}

// resolve follows $ref (local JSON pointers) until n is not a reference.
func (d doc) resolve(n any) any {
	d.t.Helper()
	for range 10 {
		ref, ok := get(n, "$ref").(string)
		if !ok {
			return n
		}
		target, err := d.pointer(ref)
		if err != nil {
			d.t.Fatalf("%v", err)
		}
		n = target
	}
	d.t.Fatalf("$ref chain too long at %v", n)
	return nil
}

func (d doc) pointer(ref string) (any, error) {
	p, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil, fmt.Errorf("$ref %q: only local references are used in this document", ref)
	}
	var n any = d.root
	for _, part := range strings.Split(p, "/") {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		m, ok := n.(map[string]any)
		if !ok || m[part] == nil {
			return nil, fmt.Errorf("$ref %q does not resolve", ref)
		}
		n = m[part]
	}
	return n, nil
}

// schema returns components.schemas.name, resolved.
func (d doc) schema(name string) map[string]any {
	d.t.Helper()
	s, ok := d.resolve(get(d.root, "components", "schemas", name)).(map[string]any)
	if !ok {
		d.t.Fatalf("components.schemas.%s is missing", name)
	}
	return s
}

type operation struct {
	method, path string // method in upper case, path as in the document
	op           map[string]any
}

func (d doc) operations() []operation {
	d.t.Helper()
	paths, ok := get(d.root, "paths").(map[string]any)
	if !ok || len(paths) == 0 {
		d.t.Fatal("the document has no paths")
	}
	var ops []operation
	for p, item := range paths {
		for _, m := range methods {
			if op, ok := get(item, m).(map[string]any); ok {
				ops = append(ops, operation{strings.ToUpper(m), p, op})
			}
		}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].path+ops[i].method < ops[j].path+ops[j].method })
	return ops
}

// responses returns the operation's responses by status, resolved.
func (d doc) responses(o operation) map[int]map[string]any {
	d.t.Helper()
	out := map[int]map[string]any{}
	rs, _ := get(o.op, "responses").(map[string]any)
	for k, r := range rs {
		status, err := strconv.Atoi(k)
		if err != nil {
			d.t.Errorf("%s %s: response %q is not a status code", o.method, o.path, k)
			continue
		}
		res, ok := d.resolve(r).(map[string]any)
		if !ok {
			d.t.Errorf("%s %s: response %s is not an object", o.method, o.path, k)
			continue
		}
		out[status] = res
	}
	return out
}

// errorCodes returns the enum of error.code in a response's JSON schema.
func (d doc) errorCodes(res map[string]any) []string {
	s := d.resolve(get(res, "content", "application/json", "schema"))
	enum, _ := get(d.resolve(get(s, "properties", "error")), "properties", "code", "enum").([]any)
	var codes []string
	for _, c := range enum {
		if s, ok := c.(string); ok {
			codes = append(codes, s)
		}
	}
	return codes
}

// needsToken reports whether the operation's effective security asks for a token.
func (d doc) needsToken(o operation) bool {
	sec, ok := o.op["security"]
	if !ok {
		sec = d.root["security"]
	}
	reqs, _ := sec.([]any)
	for _, r := range reqs {
		if m, ok := r.(map[string]any); ok && len(m) > 0 {
			return true
		}
	}
	return false
}

func asInt(n any) (int64, bool) {
	switch v := n.(type) {
	case int:
		return int64(v), true
	case int64:
		return v, true
	case uint64:
		return int64(v), true
	case float64:
		return int64(v), float64(int64(v)) == v
	}
	return 0, false
}

func asStrings(n any) []string {
	l, _ := n.([]any)
	out := make([]string, 0, len(l))
	for _, v := range l {
		out = append(out, fmt.Sprint(v))
	}
	sort.Strings(out)
	return out
}

// stub is every service behind the handlers: the calls the tests need answer, any other
// panics (a nil interface), which the handlers turn into 500 internal.
type stub struct {
	handlertest.Unserved
	replayed bool
}

func (stub) CreateActivity(context.Context, sale.NewActivity) (sale.Activity, error) {
	return sale.Activity{ID: 1}, nil
}

func (s stub) Buy(_ context.Context, r sale.BuyRequest) (sale.Order, bool, error) {
	return sale.Order{ID: "order", ActivityID: r.ActivityID, Quantity: r.Quantity, Status: "queued"}, s.replayed, nil
}

// router returns the real routes over svc.
func router(t *testing.T, svc stub) *gin.Engine {
	t.Helper()
	// The handlers log 500s (the stub's panics); keep the test output readable.
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	t.Cleanup(func() { slog.SetDefault(prev) })
	r, ok := handler.New(handlertest.Services(svc), handler.Options{JWTSecret: secret}).Routes().(*gin.Engine)
	if !ok {
		t.Fatal("handler.Routes() is no longer a *gin.Engine; adapt this test to list its routes")
	}
	return r
}

type answer struct {
	status  int
	code    string
	message string
	header  http.Header
}

func call(t *testing.T, h http.Handler, method, path, token, body string, header map[string][]string) answer {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	a := answer{status: rec.Code, header: rec.Header()}
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if json.Unmarshal(rec.Body.Bytes(), &e) == nil {
		a.code, a.message = e.Error.Code, e.Error.Message
	}
	return a
}

func token(t *testing.T, userID int64, admin bool) string {
	t.Helper()
	tok, err := auth.Sign(secret, buyer.Of(userID), admin, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestDocument checks the document's frame: its version, that every $ref resolves,
// and that operation ids are unique.
func TestDocument(t *testing.T) {
	d := load(t)
	if v := fmt.Sprint(d.root["openapi"]); v != "3.0.3" {
		t.Errorf("openapi: got %q, want 3.0.3", v)
	}
	var walk func(path string, n any)
	walk = func(path string, n any) {
		switch v := n.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				if _, err := d.pointer(ref); err != nil {
					t.Errorf("%s: %v", path, err)
				}
			}
			for k, c := range v {
				walk(path+"."+k, c)
			}
		case []any:
			for i, c := range v {
				walk(fmt.Sprintf("%s[%d]", path, i), c)
			}
		}
	}
	walk("", d.root)
	ids := map[string]string{}
	for _, o := range d.operations() {
		id, _ := o.op["operationId"].(string)
		if id == "" {
			t.Errorf("%s %s: no operationId", o.method, o.path)
		} else if prev, dup := ids[id]; dup {
			t.Errorf("operationId %q is used by %s and %s %s", id, prev, o.method, o.path)
		}
		ids[id] = o.method + " " + o.path
	}
}

var ginParam = regexp.MustCompile(`[:*]([A-Za-z0-9_]+)`)

// TestRoutesMatchRouter checks that every route of the real router is documented with
// its method, and that every documented operation is a real route. The web pages that
// package web registers (/, /admin, /static/...) are HTML, not API, and are left out.
func TestRoutesMatchRouter(t *testing.T) {
	d := load(t)
	pages := gin.New()
	web.Register(pages)
	isPage := map[string]bool{}
	for _, r := range pages.Routes() {
		isPage[r.Method+" "+r.Path] = true
	}

	real, heads := map[string]bool{}, map[string]bool{}
	for _, r := range router(t, stub{}).Routes() {
		if isPage[r.Method+" "+r.Path] {
			continue
		}
		path := ginParam.ReplaceAllString(r.Path, "{$1}")
		if r.Method == http.MethodHead { // documented once, in info.description: every GET answers HEAD
			heads[path] = true
			continue
		}
		real[r.Method+" "+path] = true
	}
	for r := range real {
		if path, ok := strings.CutPrefix(r, "GET "); ok && !heads[path] {
			t.Errorf("GET %s is served without its HEAD", path)
		}
	}
	for path := range heads {
		if !real["GET "+path] {
			t.Errorf("HEAD %s is served without its GET", path)
		}
	}
	if len(real) < 10 {
		t.Fatalf("the router lists only %d API routes: %v", len(real), real)
	}
	documented := map[string]bool{}
	for _, o := range d.operations() {
		documented[o.method+" "+o.path] = true
	}
	for r := range real {
		if !documented[r] {
			t.Errorf("route %s is served but not in openapi.yaml", r)
		}
	}
	for r := range documented {
		if !real[r] {
			t.Errorf("openapi.yaml documents %s, which the router does not serve", r)
		}
	}
}

var (
	statusAndCode = regexp.MustCompile(`http\.(Status\w+),\s*"([a-z]+(?:_[a-z]+)*)"`)
	statusNumbers = map[string]int{
		"StatusBadRequest": 400, "StatusUnauthorized": 401, "StatusPaymentRequired": 402,
		"StatusForbidden": 403, "StatusNotFound": 404, "StatusMethodNotAllowed": 405,
		"StatusNotAcceptable": 406, "StatusRequestTimeout": 408, "StatusConflict": 409,
		"StatusGone": 410, "StatusPreconditionFailed": 412, "StatusRequestEntityTooLarge": 413,
		"StatusUnsupportedMediaType": 415, "StatusUnprocessableEntity": 422,
		"StatusPreconditionRequired": 428, "StatusTooManyRequests": 429,
		"StatusInternalServerError": 500, "StatusNotImplemented": 501, "StatusBadGateway": 502,
		"StatusServiceUnavailable": 503, "StatusGatewayTimeout": 504,
	}
)

// handlerCodes reads every (status, code) pair the handlers answer with from the
// source of internal/handler: the mapping table and the direct abort calls.
func handlerCodes(t *testing.T) map[statusCode]bool {
	t.Helper()
	files, err := filepath.Glob("../internal/handler/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no handler sources found (%v)", err)
	}
	pairs := map[statusCode]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range statusAndCode.FindAllStringSubmatch(string(src), -1) {
			n, ok := statusNumbers[m[1]]
			if !ok {
				t.Errorf("%s: http.%s is not in this test's table of statuses; add it", f, m[1])
				continue
			}
			pairs[statusCode{n, m[2]}] = true
		}
	}
	return pairs
}

// TestErrorCodesMatchHandler checks that every status and code the handlers can
// answer with is documented under that status, that the document lists no code the
// handlers never send, and that the contract's codes are all still produced.
func TestErrorCodesMatchHandler(t *testing.T) {
	d := load(t)
	src := handlerCodes(t)
	known := map[statusCode]bool{}
	for _, c := range append(slices.Clone(contractCodes), projectCodes...) {
		known[c] = true
	}
	for _, c := range contractCodes {
		if !src[c] {
			t.Errorf("contract code %s is not produced by internal/handler any more", c)
		}
	}
	for c := range src {
		if !known[c] {
			t.Errorf("internal/handler answers %s, which is neither in the contract nor a known project addition: document it and add it to projectCodes", c)
		}
	}

	// What the document says, per operation, and for the responses of every path.
	documented := map[statusCode]bool{}
	for _, o := range d.operations() {
		for status, res := range d.responses(o) {
			codes := d.errorCodes(res)
			// The probe answers 503 with its own body, not the error body.
			if status >= 400 && len(codes) == 0 && o.path != "/readyz" {
				t.Errorf("%s %s: response %d lists no error codes (error.code enum)", o.method, o.path, status)
			}
			for _, c := range codes {
				documented[statusCode{status, c}] = true
			}
		}
	}
	components, _ := get(d.root, "components", "responses").(map[string]any)
	for name, r := range components {
		if get(r, "x-every-path") != true {
			continue
		}
		status, ok := asInt(get(r, "x-status"))
		if !ok {
			t.Errorf("components.responses.%s: x-every-path without x-status", name)
			continue
		}
		for _, c := range d.errorCodes(r.(map[string]any)) {
			documented[statusCode{int(status), c}] = true
		}
	}
	for c := range src {
		if !documented[c] {
			t.Errorf("internal/handler answers %s, but openapi.yaml documents it nowhere", c)
		}
	}
	for c := range documented {
		if !src[c] {
			t.Errorf("openapi.yaml documents %s, which internal/handler never answers", c)
		}
	}

	all := map[string]bool{}
	for c := range src {
		all[c.code] = true
	}
	var want []string
	for c := range all {
		want = append(want, c)
	}
	sort.Strings(want)
	if got := asStrings(d.schema("ErrorCode")["enum"]); !slices.Equal(got, want) {
		t.Errorf("components.schemas.ErrorCode enum:\n got %v\nwant %v", got, want)
	}
}

// TestSharedResponses checks that each shared response is used under its own status,
// that none is dead, and that 429 and 405 carry their headers.
func TestSharedResponses(t *testing.T) {
	d := load(t)
	components, _ := get(d.root, "components", "responses").(map[string]any)
	used := map[string]bool{}
	for _, o := range d.operations() {
		rs, _ := get(o.op, "responses").(map[string]any)
		for k, r := range rs {
			ref, ok := get(r, "$ref").(string)
			if !ok {
				continue
			}
			name := strings.TrimPrefix(ref, "#/components/responses/")
			used[name] = true
			if status, _ := asInt(get(components[name], "x-status")); strconv.FormatInt(status, 10) != k {
				t.Errorf("%s %s: response %s uses %s, whose x-status is %d", o.method, o.path, k, name, status)
			}
		}
		for status, res := range d.responses(o) {
			if status == http.StatusTooManyRequests && get(res, "headers", "Retry-After") == nil {
				t.Errorf("%s %s: 429 without a Retry-After header", o.method, o.path)
			}
		}
	}
	for name, r := range components {
		if _, ok := asInt(get(r, "x-status")); !ok {
			t.Errorf("components.responses.%s has no x-status", name)
		}
		if !used[name] && get(r, "x-every-path") != true {
			t.Errorf("components.responses.%s is used by no operation", name)
		}
	}
	if get(components, "MethodNotAllowed", "headers", "Allow") == nil {
		t.Error("components.responses.MethodNotAllowed has no Allow header")
	}
}

// concrete turns a documented path into one the router matches.
func concrete(p string) string {
	if strings.HasPrefix(p, "/api/v1/orders/") {
		return strings.ReplaceAll(p, "{id}", "01ARZ3NDEKTSV4RRFFQ69G5FAV1")
	}
	return strings.ReplaceAll(p, "{id}", "1")
}

// TestSecurityMatchesRouter sends every documented operation without a token and with
// a user's and a service's token: 401 must come exactly where the document asks for a
// token, and 403 forbidden exactly where it lists it.
func TestSecurityMatchesRouter(t *testing.T) {
	d := load(t)
	r := router(t, stub{})
	user, admin := token(t, 42, false), token(t, 1, true)
	service, err := auth.SignRole(secret, "9", auth.RoleService, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range d.operations() {
		t.Run(o.method+" "+o.path, func(t *testing.T) {
			res := d.responses(o)
			p := concrete(o.path)
			needs := d.needsToken(o)
			if _, listed := res[401]; listed != needs {
				t.Errorf("needs a token: %v, but lists 401: %v", needs, listed)
			}
			got := call(t, r, o.method, p, "", "{}", nil)
			if (got.status == http.StatusUnauthorized) != needs {
				t.Errorf("without a token: got %d %s, want 401 only if the document asks for a token (%v)", got.status, got.code, needs)
			}
			byUser, byService := call(t, r, o.method, p, user, "{}", nil), call(t, r, o.method, p, service, "{}", nil)
			// 403 forbidden is the role's; another 403 (challenge_failed) is the request's.
			forbidden := byUser.status == http.StatusForbidden && byUser.code == "forbidden" ||
				byService.status == http.StatusForbidden && byService.code == "forbidden"
			listed := res[403] != nil && slices.Contains(d.errorCodes(res[403]), "forbidden")
			if forbidden != listed {
				t.Errorf("with a user's token: got %d %s, with a service's %d %s, and the document lists 403 forbidden: %v",
					byUser.status, byUser.code, byService.status, byService.code, listed)
			}
			got = call(t, r, o.method, p, admin, "{}", nil)
			if got.status == http.StatusUnauthorized || got.status == http.StatusForbidden {
				t.Errorf("with an admin's token: got %d %s", got.status, got.code)
			}
		})
	}
}

// TestEveryPathResponses checks the answers the document promises on every path: 405
// with Allow for a method a path does not serve, 404 for an unknown path, 413 for a
// large body.
func TestEveryPathResponses(t *testing.T) {
	r := router(t, stub{})
	got := call(t, r, http.MethodDelete, "/api/v1/activities/1", "", "", nil)
	if got.status != http.StatusMethodNotAllowed || got.code != "method_not_allowed" || got.header.Get("Allow") != "GET, HEAD" {
		t.Errorf("DELETE /api/v1/activities/1: got %d %s Allow %q, want 405 method_not_allowed Allow GET, HEAD",
			got.status, got.code, got.header.Get("Allow"))
	}
	if got := call(t, r, http.MethodGet, "/api/v1/no-such-thing", "", "", nil); got.status != 404 || got.code != "not_found" {
		t.Errorf("unknown path: got %d %s, want 404 not_found", got.status, got.code)
	}
	big := `{"name":"` + strings.Repeat("x", 64<<10) + `"}`
	if got := call(t, r, http.MethodPost, "/api/v1/admin/activities", token(t, 1, true), big, nil); got.status != 413 || got.code != "payload_too_large" {
		t.Errorf("body over 64 KiB: got %d %s, want 413 payload_too_large", got.status, got.code)
	}
}

// TestPreflightMatchesRouter checks the Preflight response against the router with
// an origin listed: on every documented path under /api/v1, a preflight from it is 204
// with the methods the document gives the path and the headers the document names.
func TestPreflightMatchesRouter(t *testing.T) {
	d := load(t)
	const origin = "https://shop.example"
	r := handler.New(handlertest.Services(stub{}), handler.Options{JWTSecret: secret, CORSOrigins: []string{origin}}).Routes()
	pre := get(d.root, "components", "responses", "Preflight", "headers")
	allowHeaders := asStrings(get(pre, "Access-Control-Allow-Headers", "schema", "enum"))
	ages, _ := get(pre, "Access-Control-Max-Age", "schema", "enum").([]any)
	if len(allowHeaders) != 1 || len(ages) != 1 {
		t.Fatalf("components.responses.Preflight: Allow-Headers %v, Max-Age %v, want one value each", allowHeaders, ages)
	}
	maxAge := fmt.Sprint(ages[0])
	methods := map[string][]string{}
	for _, o := range d.operations() {
		if strings.HasPrefix(o.path, "/api/v1/") {
			methods[o.path] = append(methods[o.path], o.method)
			if o.method == http.MethodGet {
				methods[o.path] = append(methods[o.path], http.MethodHead)
			}
		}
	}
	for path, want := range methods {
		slices.Sort(want)
		got := call(t, r, http.MethodOptions, concrete(path), "", "", map[string][]string{
			"Origin": {origin}, "Access-Control-Request-Method": {want[0]}})
		allowed := strings.Split(got.header.Get("Access-Control-Allow-Methods"), ", ")
		slices.Sort(allowed)
		if got.status != http.StatusNoContent || !slices.Equal(allowed, want) || got.header.Get("Access-Control-Allow-Origin") != origin ||
			got.header.Get("Access-Control-Allow-Headers") != allowHeaders[0] || got.header.Get("Access-Control-Max-Age") != maxAge {
			t.Errorf("preflight of %s: %d %v; want 204 with methods %v and the documented headers", path, got.status, got.header, want)
		}
	}
}

// TestBuyStatuses checks the two success statuses of a purchase: 202 for a new order,
// 200 for a replay, both documented.
func TestBuyStatuses(t *testing.T) {
	d := load(t)
	var buy operation
	for _, o := range d.operations() {
		if o.method == "POST" && o.path == "/api/v1/activities/{id}/orders" {
			buy = o
		}
	}
	res := d.responses(buy)
	for _, replayed := range []bool{false, true} {
		got := call(t, router(t, stub{replayed: replayed}), "POST", "/api/v1/activities/7/orders", token(t, 42, false), `{"quantity":1}`, nil)
		if _, ok := res[got.status]; !ok || got.status >= 300 {
			t.Errorf("purchase (replayed %v): got %d, which the document does not list as a success", replayed, got.status)
		}
	}
}

// TestIdempotencyKeyPattern checks the document's pattern against the handler's own
// check of the header.
func TestIdempotencyKeyPattern(t *testing.T) {
	d := load(t)
	param := d.resolve(get(d.root, "components", "parameters", "IdempotencyKey"))
	if get(param, "name") != "Idempotency-Key" || get(param, "in") != "header" {
		t.Fatalf("components.parameters.IdempotencyKey: got %v", param)
	}
	pattern, _ := get(param, "schema", "pattern").(string)
	re, err := regexp.Compile(pattern)
	if err != nil || pattern == "" {
		t.Fatalf("Idempotency-Key pattern %q: %v", pattern, err)
	}
	r := router(t, stub{})
	user := token(t, 42, false)
	keys := []string{"a", "Z9", "abc-DEF_123", strings.Repeat("k", 64), strings.Repeat("k", 65), "",
		"has space", "a.b", "a/b", "ключ", "é", "a+b", "a=b", "01JD6Y4ZQ2H3N8V5XK7M9P0RST"}
	for _, k := range keys {
		// With a good key the handler goes on to the body, whose quantity is missing.
		got := call(t, r, "POST", "/api/v1/activities/1/orders", user, `{}`, map[string][]string{"Idempotency-Key": {k}})
		refused := got.status == 400 && strings.Contains(got.message, "Idempotency-Key")
		if refused == re.MatchString(k) {
			t.Errorf("key %q: pattern matches %v, handler answered %d %q", k, re.MatchString(k), got.status, got.message)
		}
	}
}

// TestNewActivityBounds sends the documented bounds of a new sale to the real handler:
// each bound itself is accepted, one step past it is 400 naming the field, and each
// required field is required.
func TestNewActivityBounds(t *testing.T) {
	d := load(t)
	s := d.schema("NewActivity")
	props, _ := s["properties"].(map[string]any)
	r := router(t, stub{})
	admin := token(t, 1, true)
	now := time.Now().UTC()
	valid := func() map[string]any {
		return map[string]any{"name": "n", "product_name": "p", "price_cents": 100, "stock": 10,
			"per_user_limit": 1, "starts_at": now.Format(time.RFC3339), "ends_at": now.Add(time.Hour).Format(time.RFC3339),
			"pay_window_seconds": 900}
	}
	send := func(body map[string]any) answer {
		b, _ := json.Marshal(body)
		return call(t, r, "POST", "/api/v1/admin/activities", admin, string(b), nil)
	}
	if got := send(valid()); got.status != http.StatusCreated {
		t.Fatalf("a valid sale: got %d %s %q", got.status, got.code, got.message)
	}
	checked := 0
	for field, p := range props {
		p := d.resolve(p)
		try := func(what string, v any, ok bool) {
			shown := v
			if s, isString := v.(string); isString && len(s) > 20 {
				shown = fmt.Sprintf("%d characters", len([]rune(s)))
			}
			body := valid()
			if strings.HasPrefix(field, "group_") { // the group fields belong to a group-buy sale
				body["kind"], body["group_size"], body["group_window_seconds"] = "group", 3, 60
			}
			if field == "per_variant_limit" { // a sale of variants', at most per_user_limit
				delete(body, "stock")
				body["variants"], body["per_user_limit"] = []any{map[string]any{"name": "M", "stock": 1}}, sale.MaxPerUserLimit
			}
			body[field] = v
			got := send(body)
			if ok && got.status != http.StatusCreated {
				t.Errorf("%s %s (%v): got %d %q, want 201", field, what, shown, got.status, got.message)
			}
			if !ok && (got.status != http.StatusBadRequest || !strings.Contains(strings.ToLower(got.message), field)) {
				t.Errorf("%s %s (%v): got %d %q, want 400 naming %s", field, what, shown, got.status, got.message, field)
			}
			checked++
		}
		if min, ok := asInt(get(p, "minimum")); ok {
			try("minimum", min, true)
			try("below minimum", min-1, false)
		}
		if max, ok := asInt(get(p, "maximum")); ok {
			try("maximum", max, true)
			try("above maximum", max+1, false)
		}
		if n, ok := asInt(get(p, "minLength")); ok && n > 0 {
			try("minLength", strings.Repeat("é", int(n)), true)
			try("below minLength", strings.Repeat("é", int(n)-1), false)
		}
		if n, ok := asInt(get(p, "maxLength")); ok {
			try("maxLength", strings.Repeat("é", int(n)), true)
			try("above maxLength", strings.Repeat("é", int(n)+1), false)
		}
		if get(p, "format") == "date-time" {
			try("not RFC 3339", "2026-11-21 20:00:00", false)
		}
	}
	if checked < 16 {
		t.Errorf("only %d bound checks ran; the NewActivity schema lost its bounds", checked)
	}

	required := asStrings(s["required"])
	want := []string{"ends_at", "name", "per_user_limit", "price_cents", "product_name", "starts_at"}
	if !slices.Equal(required, want) {
		t.Errorf("NewActivity required: got %v, want the contract's %v", required, want)
	}
	// One of stock and variants: the sale's units.
	var oneOf []string
	for _, alt := range get(s, "oneOf").([]any) {
		oneOf = append(oneOf, asStrings(get(alt, "required"))...)
	}
	if !slices.Equal(oneOf, []string{"stock", "variants"}) {
		t.Errorf("NewActivity oneOf required: got %v, want [stock variants]", oneOf)
	}
	body := valid()
	delete(body, "stock")
	if got := send(body); got.status != 400 || !strings.Contains(got.message, "stock") {
		t.Errorf("neither stock nor variants: got %d %q, want 400 naming stock", got.status, got.message)
	}
	body["variants"] = []any{map[string]any{"name": "M", "stock": 1}}
	if got := send(body); got.status != http.StatusCreated {
		t.Errorf("variants without stock: got %d %q, want 201", got.status, got.message)
	}
	for field := range props {
		if field == "stock" {
			continue // above
		}
		body := valid()
		delete(body, field)
		got := send(body)
		isRequired := slices.Contains(required, field)
		switch {
		case isRequired && (got.status != 400 || !strings.Contains(strings.ToLower(got.message), field)):
			t.Errorf("without %s: got %d %q, want 400 naming it", field, got.status, got.message)
		case !isRequired && got.status != http.StatusCreated:
			t.Errorf("without optional %s: got %d %q, want 201", field, got.status, got.message)
		}
	}
	body = valid()
	body["ends_at"] = body["starts_at"]
	if got := send(body); got.status != 400 || !strings.Contains(strings.ToLower(got.message), "ends_at") {
		t.Errorf("ends_at equal to starts_at: got %d %q, want 400 naming ends_at", got.status, got.message)
	}
}

// TestBoundsMatchConstants checks the bounds that the sale service enforces (and the
// test above cannot reach without Redis and MySQL) against its constants.
func TestBoundsMatchConstants(t *testing.T) {
	d := load(t)
	tests := []struct {
		schema, field, keyword string
		want                   int64
	}{
		{"NewActivity", "name", "maxLength", sale.MaxNameLength},
		{"NewActivity", "product_name", "maxLength", sale.MaxNameLength},
		{"NewActivity", "price_cents", "maximum", sale.MaxPriceCents},
		{"NewActivity", "stock", "maximum", sale.MaxStock},
		{"NewActivity", "per_user_limit", "maximum", sale.MaxPerUserLimit},
		{"NewActivity", "pay_window_seconds", "minimum", sale.MinPayWindow},
		{"NewActivity", "pay_window_seconds", "maximum", sale.MaxPayWindow},
		{"NewActivity", "pay_window_seconds", "default", sale.DefaultPayWindow},
		{"ActivityPatch", "per_user_limit", "minimum", 1},
		{"ActivityPatch", "per_user_limit", "maximum", sale.MaxPerUserLimit},
		{"NewVariant", "name", "maxLength", sale.MaxVariantName},
		{"NewVariant", "stock", "maximum", sale.MaxStock},
		{"NewVariant", "external_ref", "maxLength", sale.MaxExternalRef},
		{"NewActivity", "variants", "maxItems", sale.MaxVariants},
		{"NewActivity", "per_variant_limit", "maximum", sale.MaxPerUserLimit},
		{"BuyRequest", "quantity", "minimum", 1},
		{"BuyRequest", "quantity", "maximum", sale.MaxPerUserLimit},
		{"Activity", "name", "maxLength", sale.MaxNameLength},
		{"Activity", "price_cents", "maximum", sale.MaxPriceCents},
		{"Activity", "per_user_limit", "maximum", sale.MaxPerUserLimit},
		{"Activity", "pay_window_seconds", "minimum", sale.MinPayWindow},
		{"Activity", "pay_window_seconds", "maximum", sale.MaxPayWindow},
		{"NewActivity", "admit_per_second", "maximum", sale.MaxAdmitPerSecond},
		{"NewActivity", "pass_ttl_seconds", "minimum", sale.MinPassTTL},
		{"NewActivity", "pass_ttl_seconds", "maximum", sale.MaxPassTTL},
		{"NewActivity", "pass_ttl_seconds", "default", sale.DefaultPassTTL},
		{"NewActivity", "prequeue_seconds", "maximum", sale.MaxPrequeue},
		{"NewActivity", "prequeue_seconds", "default", sale.DefaultPrequeue},
		{"NewActivity", "challenge_cost", "minimum", sale.MinChallengeCost},
		{"NewActivity", "challenge_cost", "maximum", sale.MaxChallengeCost},
		{"NewActivity", "challenge_cost", "default", sale.DefaultChallengeCost},
		{"ActivityPatch", "admit_per_second", "maximum", sale.MaxAdmitPerSecond},
		{"ActivityPatch", "pass_ttl_seconds", "minimum", sale.MinPassTTL},
		{"ActivityPatch", "challenge_cost", "maximum", sale.MaxChallengeCost},
		{"NewActivity", "early_access_seconds", "maximum", sale.MaxEarlyAccess},
		{"ActivityPatch", "early_access_seconds", "maximum", sale.MaxEarlyAccess},
		{"Activity", "early_access_seconds", "maximum", sale.MaxEarlyAccess},
		{"NewAccessCodes", "count", "maximum", accesscode.MaxPerCall},
		{"NewAccessCodes", "codes", "maxItems", accesscode.MaxPerCall},
	}
	for _, tt := range tests {
		got, ok := asInt(get(d.schema(tt.schema), "properties", tt.field, tt.keyword))
		if !ok || got != tt.want {
			t.Errorf("%s.%s %s: got %v, want %d", tt.schema, tt.field, tt.keyword,
				get(d.schema(tt.schema), "properties", tt.field, tt.keyword), tt.want)
		}
	}
	for i, want := range []int64{1, sale.MaxStock} { // add_stock's number, and each variant's in its object
		for j, alt := range get(d.schema("ActivityPatch"), "properties", "add_stock", "oneOf").([]any) {
			if j == 1 {
				alt = get(alt, "additionalProperties")
			}
			keyword := []string{"minimum", "maximum"}[i]
			if got, ok := asInt(get(alt, keyword)); !ok || got != want {
				t.Errorf("ActivityPatch.add_stock oneOf[%d] %s: got %v, want %d", j, keyword, get(alt, keyword), want)
			}
		}
	}
	if got := asStrings(get(d.schema("BuyRequest"), "required")); !slices.Equal(got, []string{"quantity"}) {
		t.Errorf("BuyRequest required: got %v, want [quantity]", got)
	}
	var anyOf []string
	for _, alt := range get(d.schema("ActivityPatch"), "anyOf").([]any) {
		anyOf = append(anyOf, asStrings(get(alt, "required"))...)
	}
	sort.Strings(anyOf)
	if want := []string{"add_stock", "admit_per_second", "challenge", "challenge_cost", "early_access_seconds", "ends_at",
		"external_ref", "metadata",
		"pass_ttl_seconds", "per_user_limit", "prequeue_seconds", "waiting_room"}; !slices.Equal(anyOf, want) {
		t.Errorf("ActivityPatch anyOf required: got %v, want one of each of %v", anyOf, want)
	}
	if got, want := asStrings(get(d.schema("Activity"), "properties", "status", "enum")),
		[]string{sale.StatusActive, sale.StatusEnded, sale.StatusSoldOut, sale.StatusUpcoming}; !slices.Equal(got, want) {
		t.Errorf("Activity status enum: got %v, want %v", got, want)
	}
	if got, want := asStrings(get(d.schema("Order"), "properties", "status", "enum")),
		[]string{store.StatusCancelled, store.StatusCreated, store.StatusFailed, store.StatusGrouping, store.StatusPaid,
			store.StatusQueued, store.StatusRefunded}; !slices.Equal(got, want) {
		t.Errorf("Order status enum: got %v, want %v", got, want)
	}
}

// TestSchemasMatchJSON checks the response schemas against the Go types the handlers
// encode: the same fields, required exactly when never omitted, and matching types.
func TestSchemasMatchJSON(t *testing.T) {
	d := load(t)
	tests := []struct {
		schema string
		typ    reflect.Type
	}{
		{"Activity", reflect.TypeFor[sale.Activity]()},
		{"Order", reflect.TypeFor[sale.Order]()},
		{"Group", reflect.TypeFor[sale.Group]()},
		{"Stats", reflect.TypeFor[sale.Stats]()},
		{"Ledger", reflect.TypeFor[sale.Ledger]()},
		{"Instance", reflect.TypeFor[presence.Instance]()},
		{"Ticket", reflect.TypeFor[waitingroom.Ticket]()},
		{"LineFigures", reflect.TypeFor[waitingroom.Figures]()},
		{"LineStatus", reflect.TypeFor[waitingroom.Status]()},
		{"Challenge", reflect.TypeFor[altcha.Challenge]()},
		{"Webhook", reflect.TypeFor[outbox.Webhook]()},
		{"Delivery", reflect.TypeFor[outbox.Delivery]()},
		{"Funnel", reflect.TypeFor[funnel.Figures]()},
	}
	for _, tt := range tests {
		checkSchema(t, d, tt.schema, d.schema(tt.schema), tt.typ)
	}
	for list, item := range map[string]string{"ActivityList": "activities", "OrderList": "orders", "InstanceList": "instances",
		"WebhookList": "webhooks", "DeliveryList": "deliveries"} {
		s := d.schema(list)
		want := []string{item}
		if list == "ActivityList" { // paged: next names the next page, null after the last
			want = append(want, "next")
			if get(s, "properties", "next", "nullable") != true {
				t.Errorf("%s.next is not nullable", list)
			}
		}
		if got := asStrings(s["required"]); !slices.Equal(got, want) {
			t.Errorf("%s required: got %v, want %v", list, got, want)
		}
		if get(s, "properties", item, "type") != "array" {
			t.Errorf("%s.%s is not an array", list, item)
		}
	}
}

// timeType is the type of every time in an answer, written in the API's one format; a
// time.Time would be written with as many digits as it has.
var timeType = reflect.TypeFor[apitime.Time]()

// jsonFields are the fields encoding/json writes for typ: its own, and those of the
// structs it embeds without a JSON name, in their place.
func jsonFields(typ reflect.Type) []reflect.StructField {
	var out []reflect.StructField
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.Anonymous && f.Tag.Get("json") == "" && f.Type.Kind() == reflect.Struct {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		out = append(out, f)
	}
	return out
}

func checkSchema(t *testing.T, d doc, name string, s map[string]any, typ reflect.Type) {
	t.Helper()
	props, _ := s["properties"].(map[string]any)
	var fields, required []string
	for _, f := range jsonFields(typ) {
		tag, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "-" || !f.IsExported() {
			continue
		}
		if tag == "" {
			tag = f.Name
		}
		fields = append(fields, tag)
		if !strings.Contains(opts, "omitempty") {
			required = append(required, tag)
		}
		p, ok := d.resolve(props[tag]).(map[string]any)
		if !ok {
			continue // reported below
		}
		ft := f.Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		var want string
		switch {
		case ft == timeType:
			want = "string"
			if p["format"] != "date-time" {
				t.Errorf("%s.%s: format %v, want date-time", name, tag, p["format"])
			}
		case ft == reflect.TypeFor[time.Time]():
			t.Errorf("%s.%s: a time.Time, want an apitime.Time (the API's one format)", name, tag)
			continue
		case ft == reflect.TypeFor[json.RawMessage](): // a JSON object kept as sent (a sale's metadata)
			want = "object"
		case ft.Kind() == reflect.String:
			want = "string"
		case ft.Kind() >= reflect.Int && ft.Kind() <= reflect.Uint64:
			want = "integer"
		case ft.Kind() == reflect.Bool:
			want = "boolean"
		case ft.Kind() == reflect.Map && ft.Key().Kind() == reflect.String && ft.Elem().Kind() == reflect.Float64:
			want = "object"
			if get(p, "additionalProperties", "type") != "number" {
				t.Errorf("%s.%s: a map of numbers without additionalProperties of type number", name, tag)
			}
		case ft.Kind() == reflect.Float64:
			want = "number"
		case ft.Kind() == reflect.Map && ft.Key().Kind() == reflect.String && ft.Elem().Kind() == reflect.Int64:
			want = "object"
			if get(p, "additionalProperties", "type") != "integer" {
				t.Errorf("%s.%s: a map of integers without additionalProperties of type integer", name, tag)
			}
		case ft.Kind() == reflect.Struct:
			want = "object"
			checkSchema(t, d, name+"."+tag, p, ft)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.String:
			want = "array"
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() >= reflect.Int && ft.Elem().Kind() <= reflect.Uint64:
			want = "array"
			if get(p, "items", "type") != "integer" {
				t.Errorf("%s.%s: an array of integers whose items are not of type integer", name, tag)
			}
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			want = "array"
			if items, ok := d.resolve(p["items"]).(map[string]any); ok {
				checkSchema(t, d, name+"."+tag+"[]", items, ft.Elem())
			} else {
				t.Errorf("%s.%s: an array without items", name, tag)
			}
		default:
			t.Errorf("%s.%s: Go type %s is not handled by this test", name, tag, ft)
		}
		if p["type"] != want {
			t.Errorf("%s.%s: type %v, want %s (Go %s)", name, tag, p["type"], want, f.Type)
		}
	}
	sort.Strings(fields)
	sort.Strings(required)
	var documented []string
	for k := range props {
		documented = append(documented, k)
	}
	sort.Strings(documented)
	if !slices.Equal(documented, fields) {
		t.Errorf("%s properties:\n got %v\nwant %v (the JSON of %s)", name, documented, fields, typ)
	}
	if got := asStrings(s["required"]); !slices.Equal(got, required) {
		t.Errorf("%s required:\n got %v\nwant %v (fields never omitted)", name, got, required)
	}
}
