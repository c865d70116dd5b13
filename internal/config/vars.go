package config

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// Var is one environment variable the binaries read. Vars lists them all; Load reads
// each through one lookup that applies the default and, for a secret, <Name>_FILE.
type Var struct {
	// Name is the variable's name.
	Name string
	// Default is the value used when the variable is unset or empty ("" when there is none).
	Default string
	// DevDefault, when not "", replaces Default in dev mode (SECKILL_ENV=dev).
	DevDefault string
	// Binaries says which binaries read it: "api", "worker" or "api, worker".
	Binaries string
	// Secret marks a value that may instead be given as the path of a file that holds it,
	// in <Name>_FILE, and that no log line shows.
	Secret bool
	// Runtime marks a variable that the Go runtime reads, not Load: the binaries apply
	// Default when it is unset (SetRuntimeDefaults).
	Runtime bool
	// Doc says what it does, in a sentence or two.
	Doc string
}

// Binaries of Var.Binaries.
const (
	API    = "api"
	Worker = "worker"
	Both   = "api, worker"
)

// Vars is every variable the binaries read, in the order the start-up log lists them.
var Vars = []Var{
	{Name: "SECKILL_ENV", Binaries: Both,
		Doc: "`dev` allows the public development JWT secret (and says so in the log) and private webhook URLs; anything else is production."},
	{Name: "SECKILL_HTTP_ADDR", Default: "127.0.0.1:8080", Binaries: API,
		Doc: "Where the API listens."},
	{Name: "SECKILL_METRICS_ADDR", Default: "127.0.0.1:9090", Binaries: API,
		Doc: "Where the API serves /metrics (and /debug/pprof/ with SECKILL_PPROF), never on SECKILL_HTTP_ADDR: keep it internal."},
	{Name: "SECKILL_WORKER_METRICS_ADDR", Default: "127.0.0.1:9091", Binaries: Worker,
		Doc: "Where the worker serves /metrics, /healthz, /readyz (and /debug/pprof/ with SECKILL_PPROF): keep it internal."},
	{Name: "SECKILL_REDIS_ADDR", Default: "127.0.0.1:6379", Binaries: Both,
		Doc: "One host:port, or a comma-separated list: a cluster's seed nodes, or Sentinels."},
	{Name: "SECKILL_REDIS_CLUSTER", Default: "false", Binaries: Both,
		Doc: "`true`: the addresses are seed nodes of a Redis Cluster."},
	{Name: "SECKILL_REDIS_MASTER_NAME", Binaries: Both,
		Doc: "Set: the addresses are Sentinels and this is the name of the master they monitor."},
	{Name: "SECKILL_REDIS_USERNAME", Binaries: Both,
		Doc: "The ACL user for the Redis data nodes (one server, the Sentinel-monitored master and replicas, or the Cluster); unset: the default user."},
	{Name: "SECKILL_REDIS_PASSWORD", Binaries: Both, Secret: true,
		Doc: "The password of SECKILL_REDIS_USERNAME (or, without a user, of requirepass) on the data nodes."},
	{Name: "SECKILL_REDIS_SENTINEL_USERNAME", Binaries: Both,
		Doc: "The ACL user for the Sentinels, which have users of their own."},
	{Name: "SECKILL_REDIS_SENTINEL_PASSWORD", Binaries: Both, Secret: true,
		Doc: "The password of SECKILL_REDIS_SENTINEL_USERNAME (or of the Sentinels' requirepass)."},
	{Name: "SECKILL_REDIS_TLS", Default: "false", Binaries: Both,
		Doc: "`true` speaks TLS to every Redis node and Sentinel and verifies each server's certificate; never plaintext, never unverified."},
	{Name: "SECKILL_REDIS_TLS_CA_FILE", Binaries: Both,
		Doc: "PEM file of the certificate authorities that sign the servers' certificates; unset: the system's roots."},
	{Name: "SECKILL_REDIS_TLS_SERVER_NAME", Binaries: Both,
		Doc: "The name the servers' certificates must carry; unset: the host of each address dialled."},
	{Name: "SECKILL_REDIS_TLS_CERT_FILE", Binaries: Both,
		Doc: "PEM client certificate presented to the servers (mutual TLS), with SECKILL_REDIS_TLS_KEY_FILE."},
	{Name: "SECKILL_REDIS_TLS_KEY_FILE", Binaries: Both,
		Doc: "PEM private key of SECKILL_REDIS_TLS_CERT_FILE."},
	{Name: "SECKILL_REDIS_MIN_REPLICAS", Default: "0", Binaries: API,
		Doc: "A purchase is answered 202 only once this many replicas of its master hold its reservation."},
	{Name: "SECKILL_REDIS_DURABILITY", Default: "required", Binaries: API,
		Doc: "`required`: outside dev mode the API starts only on a Redis that keeps an acknowledged purchase through a crash, AOF on (`INFO persistence`) on every master, or SECKILL_REDIS_MIN_REPLICAS >= 1. `none` starts anyway, and the log and /readyz (`\"durable\": false`) say a Redis crash can lose acknowledged orders."},
	{Name: "SECKILL_TRUSTED_PROXIES", Binaries: API,
		Doc: "Comma-separated CIDRs or addresses whose X-Forwarded-For names the client IP; none by default."},
	{Name: "SECKILL_CORS_ORIGINS", Binaries: API,
		Doc: "Comma-separated origins (`https://shop.example`: scheme://host[:port], as the browser sends Origin) whose pages may call /api/v1 from a browser; none by default. A malformed entry stops the start."},
	{Name: "SECKILL_MYSQL_DSN", Default: "seckill:seckill@tcp(127.0.0.1:3306)/seckill?parseTime=true", Binaries: Both, Secret: true,
		Doc: "The MySQL data source name (go-sql-driver syntax); it holds the password, so it is a secret."},
	{Name: "SECKILL_MYSQL_TLS_CA_FILE", Binaries: Both,
		Doc: "Set: every MySQL connection uses TLS and verifies the server's certificate against this PEM file of certificate authorities (and its name against the DSN's host)."},
	{Name: "SECKILL_JWT_SECRET", DevDefault: DevJWTSecret, Binaries: Both, Secret: true,
		Doc: "The HS256 signing secret of tokens and sale passes, at least 32 bytes; required outside dev mode, where the public development secret stands in."},
	{Name: "SECKILL_JWT_JWKS_URL", Binaries: Both,
		Doc: "A shop's identity provider's JWK Set, an https URL (plain http only to a loopback host): its RS256/ES256 tokens are accepted beside the HS256 ones. Outside dev mode it needs SECKILL_JWT_ISSUER and SECKILL_JWT_AUDIENCE."},
	{Name: "SECKILL_JWT_ISSUER", Binaries: Both,
		Doc: "The `iss` the identity provider's tokens must carry; required with a JWKS outside dev mode."},
	{Name: "SECKILL_JWT_AUDIENCE", Binaries: Both,
		Doc: "The `aud` the identity provider's tokens must carry; required with a JWKS outside dev mode."},
	{Name: "SECKILL_JWT_USER_CLAIM", Default: "sub", Binaries: API,
		Doc: "The identity provider's claim that names the buyer: any subject, or a JSON integer read as its decimal."},
	{Name: "SECKILL_JWT_ROLE_CLAIM", Default: "role", Binaries: API,
		Doc: "The identity provider's claim that holds its role names (a string or a list)."},
	{Name: "SECKILL_JWT_ADMIN_ROLES", Binaries: API,
		Doc: "Comma-separated role names of the identity provider that make its token this service's admin; none by default."},
	{Name: "SECKILL_JWT_SERVICE_ROLES", Binaries: API,
		Doc: "Comma-separated role names of the identity provider that make its token a shop's back end (role service); none by default. Any other valid token is a buyer's."},
	{Name: "SECKILL_JWT_LEEWAY", Default: "30s", Binaries: API,
		Doc: "Clock skew allowed on the identity provider's exp and nbf, at most 5m."},
	{Name: "SECKILL_WEBHOOK_ALLOW_PRIVATE", Default: "false", DevDefault: "true", Binaries: Both,
		Doc: "Whether webhook URLs may point at loopback and private addresses."},
	{Name: "SECKILL_BUYER_PAYS", Default: "false", DevDefault: "true", Binaries: API,
		Doc: "`true` lets a buyer mark their own order paid, a simulated payment for a demo; otherwise payments are confirmed by the shop's back end (a `service` token) or an admin, and a buyer's pay is `403 payment_by_shop`."},
	{Name: "SECKILL_CHECKOUT_URL", Binaries: Both,
		Doc: "The shop's checkout page as a URL template with `{order_id}` (and optionally `{activity_id}`), such as `https://shop.example/checkout?order={order_id}`: a created order, in answers and events, carries it expanded as `checkout_url`, and the buyer's page sends the buyer there to pay. An absolute https URL (http on loopback in dev mode); anything else stops the start."},
	{Name: "SECKILL_RATE_USER", Default: "20", Binaries: API,
		Doc: "Requests per second per user, across all API instances; 0 turns the limit off."},
	{Name: "SECKILL_RATE_IP", Default: "200", Binaries: API,
		Doc: "Requests per second per client IP; 0 turns the limit off."},
	{Name: "SECKILL_PURCHASES_IN_FLIGHT", Default: "256", Binaries: API,
		Doc: "Purchases one API process answers at once; past it a purchase gets 429 at once. 0: no bound."},
	{Name: "SECKILL_SALE_PURCHASES_IN_FLIGHT", Default: "192", Binaries: API,
		Doc: "The same for one sale, so a hot sale leaves room for the others. 0: no bound."},
	{Name: "SECKILL_BODY_TIMEOUT", Default: "2s", Binaries: API,
		Doc: "How long a request's whole body may take to arrive, from its headers; past it the answer is 408 request_timeout and the connection is closed. A purchase takes its place in flight only once its body has arrived."},
	{Name: "SECKILL_LOCK_WAIT", Default: "500ms", Binaries: API,
		Doc: "How long a purchase waits for the same user's earlier purchase in the same sale before 429 busy."},
	{Name: "SECKILL_WORKER_CONCURRENCY", Default: "8", Binaries: Worker,
		Doc: "Tasks of orders a worker writes at once."},
	{Name: "SECKILL_PERSIST_BATCH", Default: "250", Binaries: Worker,
		Doc: "Most orders the worker writes in one MySQL transaction."},
	{Name: "SECKILL_PPROF", Default: "false", Binaries: Both,
		Doc: "`true` serves net/http/pprof at /debug/pprof/ on the metrics address (SECKILL_METRICS_ADDR, SECKILL_WORKER_METRICS_ADDR), for profiling; off by default."},
	{Name: "SECKILL_SHUTDOWN_DELAY", Default: "5s", Binaries: API,
		Doc: "On SIGTERM or SIGINT the API answers /readyz 503 at once and goes on serving every request this long, so load balancers and Kubernetes stop sending to it, before it stops accepting."},
	{Name: "SECKILL_SHUTDOWN_TIMEOUT", Default: "20s", Binaries: Both,
		Doc: "Then how long the API may take to let its connections go, finish its requests and hand their orders to the queue; and how long the worker may take, from SIGTERM, to finish or give back its tasks. Each exits at the end of it whatever is left."},
	{Name: "SECKILL_CLOCK_OFFSET", Default: "0s", Binaries: API,
		Doc: "Shifts the API's own clock, for tests of an instance whose clock is wrong. Never set it in production."},
	{Name: "GOGC", Default: "400", Binaries: Both, Runtime: true,
		Doc: "The Go collector's heap growth per cycle, in percent: the binaries collect a quarter as often as Go's default (100), trading some tens of MB for CPU under a crowd."},
	{Name: "GOMEMLIMIT", Default: "200MiB", Binaries: API, Runtime: true,
		Doc: "The Go heap's soft limit: past it the collector works harder rather than let a crowd of connections grow the heap 5x."},
}

// lookup returns the table's entry for name. A name missing from the table is a
// mistake in this package, which every test of Load finds.
func lookup(name string) Var {
	for _, v := range Vars {
		if v.Name == name {
			return v
		}
	}
	panic("config: " + name + " is not in config.Vars")
}

// value is the one reading of a variable: its value in the environment, else for a
// secret the content of the file <Name>_FILE names (one trailing newline dropped),
// else the default. An empty variable counts as unset. Setting both a secret and its
// _FILE, or naming a file that cannot be read or is empty, is an error naming the
// variable; the error never holds the value.
func (v Var) value(dev bool) (val, from string, err error) {
	val, from = os.Getenv(v.Name), "environment"
	if v.Secret {
		if path := os.Getenv(v.Name + "_FILE"); path != "" {
			if val != "" {
				return "", "", fmt.Errorf("%s and %s_FILE are both set: give one", v.Name, v.Name)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return "", "", fmt.Errorf("%s_FILE: %w", v.Name, err)
			}
			val = strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
			if val == "" {
				return "", "", fmt.Errorf("%s_FILE: %s is empty", v.Name, path)
			}
			return val, "file " + path, nil
		}
	}
	switch {
	case val != "":
		return val, from, nil
	case dev && v.DevDefault != "":
		return v.DevDefault, "dev default", nil
	case v.Default != "":
		return v.Default, "default", nil
	}
	return "", "unset", nil
}

// shown is what the start-up log shows of a variable's value: a secret shows only
// where it came from (a DSN also its user, host and database).
func (v Var) shown(val, from string) string {
	switch {
	case !v.Secret:
		return strconv.Quote(val)
	case from == "unset":
		return "unset"
	case v.Name == "SECKILL_JWT_SECRET" && val == DevJWTSecret:
		return "dev default (public!)"
	case v.Name == "SECKILL_MYSQL_DSN":
		return strconv.Quote(maskDSN(val)) + " (" + from + ")"
	}
	return "set (" + from + ")"
}

// maskDSN hides the password of user:password@tcp(...)/db.
func maskDSN(dsn string) string {
	at := strings.LastIndex(dsn, "@")
	colon := strings.Index(dsn, ":")
	if at < 0 || colon < 0 || colon > at {
		return dsn
	}
	return dsn[:colon+1] + "***" + dsn[at:]
}

// loader reads variables for Load, collecting every error so one start names them all,
// and what the start-up log may show of each.
type loader struct {
	dev    bool
	errs   []error
	shown  []string
	failed map[string]bool // variables whose value could not be read at all
}

// str is the variable's value (value), recorded for the log.
func (l *loader) str(name string) string {
	v := lookup(name)
	val, from, err := v.value(l.dev)
	if err != nil {
		l.errs = append(l.errs, err)
		if l.failed == nil {
			l.failed = map[string]bool{}
		}
		l.failed[name] = true
		return ""
	}
	l.shown = append(l.shown, name+"="+v.shown(val, from))
	return val
}

// list splits a comma-separated value, dropping blanks.
func (l *loader) list(name string) []string {
	var out []string
	for _, f := range strings.Split(l.str(name), ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func (l *loader) boolean(name string) bool {
	switch v := l.str(name); v {
	case "false", "0", "":
		return false
	case "true", "1":
		return true
	default:
		l.errs = append(l.errs, fmt.Errorf("%s: want true or false, got %q", name, v))
		return false
	}
}

func (l *loader) number(name string) float64 {
	v := l.str(name)
	if v == "" {
		return 0
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 {
		l.errs = append(l.errs, fmt.Errorf("%s: want a number >= 0, got %q", name, v))
		return 0
	}
	return f
}

// whole is number for a count: a whole number up to MaxInt32 ("1.5" is an error, not 1).
func (l *loader) whole(name string) int {
	n := len(l.errs)
	f := l.number(name)
	if len(l.errs) == n && (f != math.Trunc(f) || f > math.MaxInt32) {
		l.errs = append(l.errs, fmt.Errorf("%s: want a whole number >= 0, got %q", name, os.Getenv(name)))
		return 0
	}
	return int(f)
}

func (l *loader) duration(name, example string) time.Duration {
	d, err := time.ParseDuration(l.str(name))
	if err != nil {
		l.errs = append(l.errs, fmt.Errorf("%s: want a duration such as %s", name, example))
	}
	return d
}

// durationIn is duration for a value that must lie within [lo, hi].
func (l *loader) durationIn(name string, lo, hi time.Duration) time.Duration {
	n := len(l.errs)
	d := l.duration(name, lookup(name).Default)
	if len(l.errs) == n && (d < lo || d > hi) {
		l.fail(fmt.Errorf("%s: want a duration from %v to %v, got %q", name, lo, hi, os.Getenv(name)))
	}
	return d
}

func (l *loader) fail(err error) { l.errs = append(l.errs, err) }

func (l *loader) err() error { return errors.Join(l.errs...) }

// SetRuntimeDefaults applies the Runtime variables' defaults that binary (API or
// Worker) sets when the environment leaves them unset; a value in the environment wins.
func SetRuntimeDefaults(binary string) {
	for _, v := range Vars {
		if !v.Runtime || os.Getenv(v.Name) != "" || !strings.Contains(v.Binaries, binary) {
			continue
		}
		switch v.Name {
		case "GOGC":
			n, _ := strconv.Atoi(v.Default)
			debug.SetGCPercent(n)
		case "GOMEMLIMIT":
			n, _ := strconv.ParseInt(strings.TrimSuffix(v.Default, "MiB"), 10, 64)
			debug.SetMemoryLimit(n << 20)
		}
	}
}
