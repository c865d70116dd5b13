// Package config reads the settings both binaries share from the environment, and
// opens the Redis and MySQL clients they describe. Every variable, its default, which
// binary reads it and whether it is a secret are listed in one table, Vars.
package config

import (
	"context"
	"crypto/tls"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"
	gormmysql "gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"seckill/internal/auth"
)

// DevJWTSecret is the signing secret used in dev mode when SECKILL_JWT_SECRET is unset.
// It is public, so dev mode must never face real users.
const DevJWTSecret = "seckill-dev-secret-do-not-use-in-production"

// Config is what cmd/api and cmd/worker read from the environment (Vars lists every
// variable, its default and which binary reads it).
type Config struct {
	// Env is SECKILL_ENV: "dev" allows the public DevJWTSecret; anything else is production.
	Env string
	// HTTPAddr is SECKILL_HTTP_ADDR [127.0.0.1:8080], where the API listens.
	HTTPAddr string
	// MetricsAddr is SECKILL_METRICS_ADDR [127.0.0.1:9090], where the API serves
	// /metrics, never on HTTPAddr.
	MetricsAddr string
	// WorkerMetricsAddr is SECKILL_WORKER_METRICS_ADDR [127.0.0.1:9091], where the worker
	// serves /metrics and its probes.
	WorkerMetricsAddr string
	// RedisAddrs is SECKILL_REDIS_ADDR [127.0.0.1:6379]: one address, or a
	// comma-separated list (a cluster's seed nodes, or Sentinels).
	RedisAddrs []string
	// RedisCluster is SECKILL_REDIS_CLUSTER [false]: true talks to a Redis Cluster whose
	// seed nodes are RedisAddrs.
	RedisCluster bool
	// RedisMasterName is SECKILL_REDIS_MASTER_NAME [unset]: set, RedisAddrs are Sentinels
	// and this is the name of the master they monitor.
	RedisMasterName string
	// RedisUsername and RedisPassword are SECKILL_REDIS_USERNAME and
	// SECKILL_REDIS_PASSWORD [unset]: the ACL user of the data nodes and its password.
	RedisUsername, RedisPassword string
	// RedisSentinelUsername and RedisSentinelPassword are SECKILL_REDIS_SENTINEL_USERNAME
	// and SECKILL_REDIS_SENTINEL_PASSWORD [unset]: the Sentinels' own user and password.
	RedisSentinelUsername, RedisSentinelPassword string
	// RedisTLS is what SECKILL_REDIS_TLS and its files make of TLS: nil for plaintext,
	// else the configuration every connection to a node or Sentinel uses.
	RedisTLS *tls.Config
	// MySQLTLS is SECKILL_MYSQL_TLS_CA_FILE's: nil for the DSN's own choice, else the
	// configuration every MySQL connection uses.
	MySQLTLS *tls.Config
	// MinReplicas is SECKILL_REDIS_MIN_REPLICAS [0]: a purchase is answered 202 only once
	// this many replicas of its master hold its reservation (WAIT after a barrier write,
	// once per group of purchases per master).
	MinReplicas int
	// RedisDurability is SECKILL_REDIS_DURABILITY [required]: "required" starts the API,
	// outside dev mode, only on a Redis that keeps an acknowledged purchase through a
	// crash (CheckDurability); "none" starts it anyway.
	RedisDurability string
	// TrustedProxies is SECKILL_TRUSTED_PROXIES [none]: comma-separated CIDRs (or
	// addresses) whose X-Forwarded-For the API believes for the client IP.
	TrustedProxies []string
	// CORSOrigins is SECKILL_CORS_ORIGINS [none: no cross-origin access]: the origins
	// (scheme://host[:port]) whose pages may call /api/v1 from a browser.
	CORSOrigins []string
	// MySQLDSN is SECKILL_MYSQL_DSN [seckill:seckill@tcp(127.0.0.1:3306)/seckill?parseTime=true].
	MySQLDSN string
	// JWTSecret is SECKILL_JWT_SECRET, at least 32 bytes; required outside dev mode.
	JWTSecret string
	// JWKSURL is SECKILL_JWT_JWKS_URL [unset]: a shop's identity provider's JWK Set (an
	// http or https URL); tokens signed RS256 or ES256 by one of its keys are accepted
	// beside the HS256 ones.
	JWKSURL string
	// JWTIssuer and JWTAudience are SECKILL_JWT_ISSUER and SECKILL_JWT_AUDIENCE [unset]:
	// when set, the iss and aud the identity provider's tokens must carry.
	JWTIssuer, JWTAudience string
	// JWTUserClaim is SECKILL_JWT_USER_CLAIM [sub], the claim of the identity provider's
	// tokens that names the buyer (any subject); JWTRoleClaim is SECKILL_JWT_ROLE_CLAIM
	// [role], the one that holds its role names (a string or a list).
	JWTUserClaim, JWTRoleClaim string
	// JWTAdminRoles and JWTServiceRoles are SECKILL_JWT_ADMIN_ROLES and
	// SECKILL_JWT_SERVICE_ROLES [none]: the provider's role names that make its token an
	// admin's or a service's; any other valid token is a buyer's.
	JWTAdminRoles, JWTServiceRoles []string
	// JWTLeeway is SECKILL_JWT_LEEWAY [30s, at most 5m]: the clock skew allowed on the
	// provider's exp and nbf.
	JWTLeeway time.Duration
	// WebhookAllowPrivate is SECKILL_WEBHOOK_ALLOW_PRIVATE [true in dev mode, else
	// false]: whether webhook URLs may point at loopback and private addresses.
	WebhookAllowPrivate bool
	// BuyerPays is SECKILL_BUYER_PAYS [true in dev mode, else false]: whether a buyer may
	// mark their own order paid (a simulated payment).
	BuyerPays bool
	// CheckoutURL is SECKILL_CHECKOUT_URL [unset]: the shop's checkout page, a URL
	// template with {order_id} and {activity_id} (checkCheckoutURL).
	CheckoutURL string
	// RateUser is SECKILL_RATE_USER [20]: requests per second per user; 0 turns the limit off.
	RateUser float64
	// RateIP is SECKILL_RATE_IP [200]: requests per second per client IP; 0 turns the limit off.
	RateIP float64
	// InFlight is SECKILL_PURCHASES_IN_FLIGHT [256]: purchases one API process answers at
	// once; past it a purchase is refused 429 with Retry-After at once. 0: no bound.
	InFlight int
	// SaleInFlight is SECKILL_SALE_PURCHASES_IN_FLIGHT [192]: the same for one sale, so a
	// hot sale leaves room for the others. 0: no bound.
	SaleInFlight int
	// BodyTimeout is SECKILL_BODY_TIMEOUT [2s]: how long a request's whole body may take
	// to arrive; past it the answer is 408 and the connection is closed.
	BodyTimeout time.Duration
	// LockWait is SECKILL_LOCK_WAIT [500ms]: how long a purchase waits for the same user's
	// earlier purchase in the same sale before answering 429 busy.
	LockWait time.Duration
	// WorkerConcurrency is SECKILL_WORKER_CONCURRENCY [8]: tasks of orders a worker
	// writes at once.
	WorkerConcurrency int
	// PersistBatch is SECKILL_PERSIST_BATCH [250]: most orders the worker writes in one
	// MySQL transaction.
	PersistBatch int
	// Pprof is SECKILL_PPROF [false]: true serves net/http/pprof on the metrics address.
	Pprof bool
	// SaleRetention is SECKILL_SALE_RETENTION [1h]: how long a sale's Redis state stays
	// after its end and after its last order is final, before the worker archives the
	// sale (internal/upkeep/archive.go); 0 to MaxSaleRetention.
	SaleRetention time.Duration
	// ClockOffset is SECKILL_CLOCK_OFFSET [0]: shifts the API's own clock, for tests of
	// an instance whose clock is wrong (sale windows and passes are judged by Redis'
	// clock whatever it says). Never set it in production.
	ClockOffset time.Duration
	// ShutdownDelay is SECKILL_SHUTDOWN_DELAY [5s]: on SIGTERM or SIGINT the API answers
	// /readyz 503 at once and serves every request this long before it stops accepting.
	ShutdownDelay time.Duration
	// ShutdownTimeout is SECKILL_SHUTDOWN_TIMEOUT [20s]: then how long the API may take to
	// finish its requests and hand their orders on, and the worker (from SIGTERM) to
	// finish or give back its tasks.
	ShutdownTimeout time.Duration

	shown []string // what the start-up log shows of each variable (String)
}

// MaxSaleRetention is the longest SECKILL_SALE_RETENTION: a sale's state stays in Redis
// at most this long once it is over.
const MaxSaleRetention = 30 * 24 * time.Hour

// Load reads the environment, each variable through Vars (its default, and
// <NAME>_FILE for a secret). It fails on malformed values, naming each variable at
// fault, and, outside dev mode, on a missing or short JWT secret.
func Load() (Config, error) {
	l := &loader{}
	c := Config{Env: l.str("SECKILL_ENV")}
	l.dev = c.Dev()
	c.HTTPAddr = l.str("SECKILL_HTTP_ADDR")
	c.MetricsAddr = l.str("SECKILL_METRICS_ADDR")
	c.WorkerMetricsAddr = l.str("SECKILL_WORKER_METRICS_ADDR")
	c.RedisAddrs = l.list("SECKILL_REDIS_ADDR")
	c.RedisCluster = l.boolean("SECKILL_REDIS_CLUSTER")
	c.RedisMasterName = l.str("SECKILL_REDIS_MASTER_NAME")
	c.RedisUsername = l.str("SECKILL_REDIS_USERNAME")
	c.RedisPassword = l.str("SECKILL_REDIS_PASSWORD")
	c.RedisSentinelUsername = l.str("SECKILL_REDIS_SENTINEL_USERNAME")
	c.RedisSentinelPassword = l.str("SECKILL_REDIS_SENTINEL_PASSWORD")
	c.RedisTLS = l.redisTLS()
	c.MinReplicas = l.whole("SECKILL_REDIS_MIN_REPLICAS")
	c.RedisDurability = l.str("SECKILL_REDIS_DURABILITY")
	if c.RedisDurability != DurabilityRequired && c.RedisDurability != DurabilityNone {
		l.fail(fmt.Errorf("SECKILL_REDIS_DURABILITY: want %s or %s, got %q", DurabilityRequired, DurabilityNone, c.RedisDurability))
	}
	c.TrustedProxies = l.list("SECKILL_TRUSTED_PROXIES")
	c.CORSOrigins = l.list("SECKILL_CORS_ORIGINS")
	c.MySQLDSN = l.str("SECKILL_MYSQL_DSN")
	c.MySQLTLS = l.mysqlTLS()
	c.JWTSecret = l.str("SECKILL_JWT_SECRET")
	c.JWKSURL = l.str("SECKILL_JWT_JWKS_URL")
	c.JWTIssuer = l.str("SECKILL_JWT_ISSUER")
	c.JWTAudience = l.str("SECKILL_JWT_AUDIENCE")
	c.JWTUserClaim = l.str("SECKILL_JWT_USER_CLAIM")
	c.JWTRoleClaim = l.str("SECKILL_JWT_ROLE_CLAIM")
	c.JWTAdminRoles = l.list("SECKILL_JWT_ADMIN_ROLES")
	c.JWTServiceRoles = l.list("SECKILL_JWT_SERVICE_ROLES")
	c.JWTLeeway = l.durationIn("SECKILL_JWT_LEEWAY", 0, 5*time.Minute)
	c.WebhookAllowPrivate = l.boolean("SECKILL_WEBHOOK_ALLOW_PRIVATE")
	c.BuyerPays = l.boolean("SECKILL_BUYER_PAYS")
	c.CheckoutURL = l.str("SECKILL_CHECKOUT_URL")
	c.RateUser = l.number("SECKILL_RATE_USER")
	c.RateIP = l.number("SECKILL_RATE_IP")
	c.InFlight = l.whole("SECKILL_PURCHASES_IN_FLIGHT")
	c.SaleInFlight = l.whole("SECKILL_SALE_PURCHASES_IN_FLIGHT")
	c.BodyTimeout = l.durationIn("SECKILL_BODY_TIMEOUT", 100*time.Millisecond, time.Minute)
	c.LockWait = l.duration("SECKILL_LOCK_WAIT", "500ms")
	c.WorkerConcurrency = l.whole("SECKILL_WORKER_CONCURRENCY")
	c.PersistBatch = l.whole("SECKILL_PERSIST_BATCH")
	c.Pprof = l.boolean("SECKILL_PPROF")
	c.SaleRetention = l.duration("SECKILL_SALE_RETENTION", "1h")
	c.ClockOffset = l.duration("SECKILL_CLOCK_OFFSET", "-90s")
	c.ShutdownDelay = l.duration("SECKILL_SHUTDOWN_DELAY", "5s")
	c.ShutdownTimeout = l.duration("SECKILL_SHUTDOWN_TIMEOUT", "20s")

	if c.JWKSURL != "" {
		l.checkIdP(c)
	}
	switch {
	case len(c.RedisAddrs) == 0:
		l.fail(errors.New("SECKILL_REDIS_ADDR: want at least one host:port"))
	case c.RedisCluster && c.RedisMasterName != "":
		l.fail(errors.New("SECKILL_REDIS_CLUSTER and SECKILL_REDIS_MASTER_NAME exclude each other"))
	case !c.RedisCluster && c.RedisMasterName == "" && len(c.RedisAddrs) > 1:
		l.fail(errors.New("SECKILL_REDIS_ADDR lists several addresses: set SECKILL_REDIS_CLUSTER=true or SECKILL_REDIS_MASTER_NAME"))
	}
	for _, p := range c.TrustedProxies {
		if _, err := netip.ParsePrefix(p); err != nil {
			if _, err := netip.ParseAddr(p); err != nil {
				l.fail(fmt.Errorf("SECKILL_TRUSTED_PROXIES: %q is neither a CIDR nor an address", p))
			}
		}
	}
	for _, o := range c.CORSOrigins {
		if err := checkOrigin(o); err != nil {
			l.fail(fmt.Errorf("SECKILL_CORS_ORIGINS: %q is not an origin: %w (want scheme://host[:port], as a browser sends it in Origin)", o, err))
		}
	}
	if c.CheckoutURL != "" {
		if err := checkCheckoutURL(c.CheckoutURL, c.Dev()); err != nil {
			l.fail(fmt.Errorf("SECKILL_CHECKOUT_URL: %q: %w", c.CheckoutURL, err))
		}
	}
	if c.LockWait < 0 {
		l.fail(errors.New("SECKILL_LOCK_WAIT: want a duration such as 500ms"))
	}
	if c.SaleRetention < 0 || c.SaleRetention > MaxSaleRetention {
		l.fail(fmt.Errorf("SECKILL_SALE_RETENTION: want a duration from 0s to 720h (30 days), got %v", c.SaleRetention))
	}
	if c.ShutdownDelay < 0 || c.ShutdownTimeout < 0 {
		l.fail(errors.New("SECKILL_SHUTDOWN_DELAY and SECKILL_SHUTDOWN_TIMEOUT: want durations >= 0 such as 5s and 20s"))
	}
	switch {
	case l.failed["SECKILL_JWT_SECRET"]: // already reported
	case c.JWTSecret == "":
		l.fail(errors.New("SECKILL_JWT_SECRET is required outside dev mode (SECKILL_ENV=dev)"))
	case len(c.JWTSecret) < 32:
		l.fail(errors.New("SECKILL_JWT_SECRET must be at least 32 bytes"))
	case !l.dev && c.UsesDevSecret():
		l.fail(errors.New("SECKILL_JWT_SECRET is the public development secret, with which anyone can sign admin tokens: set a secret of your own (the dev secret is for SECKILL_ENV=dev only)"))
	}
	if c.WorkerConcurrency < 1 || c.PersistBatch < 1 {
		l.fail(errors.New("SECKILL_WORKER_CONCURRENCY and SECKILL_PERSIST_BATCH must be at least 1"))
	}
	c.shown = l.shown
	return c, l.err()
}

// checkIdP refuses a key set URL that is not one, and, outside dev mode, an identity
// provider's settings that would accept forged or foreign tokens: a key set fetched
// over plain http (anyone on the path could add a key and sign admin tokens) unless
// from this machine, and one without an issuer or an audience (every token the
// provider ever signed, for any application, would pass).
func (l *loader) checkIdP(c Config) {
	u, err := url.Parse(c.JWKSURL)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		l.fail(fmt.Errorf("SECKILL_JWT_JWKS_URL: want an https URL, got %q", c.JWKSURL))
	case !l.dev && u.Scheme == "http" && !loopbackHost(u.Hostname()):
		l.fail(fmt.Errorf("SECKILL_JWT_JWKS_URL: %q is plain http: anyone on the path could add a key and sign admin tokens; want https (http only to a loopback host)", c.JWKSURL))
	}
	if l.dev {
		return
	}
	if c.JWTIssuer == "" {
		l.fail(errors.New("SECKILL_JWT_ISSUER is required with SECKILL_JWT_JWKS_URL: without it, a token the provider signed for any issuer is accepted"))
	}
	if c.JWTAudience == "" {
		l.fail(errors.New("SECKILL_JWT_AUDIENCE is required with SECKILL_JWT_JWKS_URL: without it, a token the provider signed for any application is accepted"))
	}
}

// loopbackHost reports whether host is this machine: localhost or a loopback address.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

// Dev reports whether SECKILL_ENV is "dev".
func (c Config) Dev() bool { return c.Env == "dev" }

// UsesDevSecret reports whether tokens are signed with the public DevJWTSecret.
func (c Config) UsesDevSecret() bool { return c.JWTSecret == DevJWTSecret }

// String lists the settings Load read, for the start-up log: every variable of Vars
// by name, a secret (Var.Secret) only as where it came from.
func (c Config) String() string { return strings.Join(c.shown, " ") }

// checkOrigin says why o is not an origin as a browser writes it in the Origin header
// (the API compares the header with the list byte for byte): http or https, a host in
// lower case ASCII (a name in punycode, an IPv4 address or an IPv6 one in brackets), a
// port only when it is not the scheme's default, and nothing after.
func checkOrigin(o string) error {
	scheme, rest, ok := strings.Cut(o, "://")
	host, port, hasPort := rest, "", false
	if i := strings.LastIndexByte(rest, ':'); i >= 0 && !strings.Contains(rest[i:], "]") {
		host, port, hasPort = rest[:i], rest[i+1:], true
	}
	switch {
	case strings.Contains(o, "*"):
		return errors.New("no wildcard: list each origin")
	case !ok || scheme != "http" && scheme != "https":
		return errors.New("it must start with http:// or https://")
	case strings.ContainsAny(rest, "/?#"):
		return errors.New("no path, query or trailing slash")
	case strings.Contains(rest, "@"):
		return errors.New("no user or password")
	case o != strings.ToLower(o):
		return errors.New("browsers send it in lower case")
	case !originHost.MatchString(host):
		return errors.New("the host must be a name (non-ASCII names in punycode), an IPv4 address or [an IPv6 one]")
	case port == "80" && scheme == "http" || port == "443" && scheme == "https":
		return errors.New("browsers leave the scheme's default port out")
	}
	if n, err := strconv.Atoi(port); hasPort && (err != nil || n > 65535 || !originPort.MatchString(port)) {
		return errors.New("the port must be a number from 1 to 65535")
	}
	return nil
}

// checkCheckoutURL says why t is not a checkout URL template: an absolute https URL (or
// http on a loopback host in dev mode) once its placeholders are filled in, with
// {order_id} among them, and no other placeholder than {order_id} and {activity_id}
// (internal/sale fills them in: Checkout).
func checkCheckoutURL(t string, dev bool) error {
	for _, p := range placeholder.FindAllString(t, -1) {
		if p != "{order_id}" && p != "{activity_id}" {
			return fmt.Errorf("%s is not a placeholder (want {order_id} and {activity_id})", p)
		}
	}
	if !strings.Contains(t, "{order_id}") {
		return errors.New("it must hold {order_id}, where the order's id goes")
	}
	u, err := url.Parse(strings.NewReplacer("{order_id}", "01J0000000000000000000000042", "{activity_id}", "42").Replace(t))
	switch {
	case err != nil:
		return err
	case u.Host == "" || !u.IsAbs():
		return errors.New("want an absolute URL such as https://shop.example/checkout?order={order_id}")
	case u.User != nil:
		return errors.New("no user or password in it")
	case u.Scheme == "https":
		return nil
	case u.Scheme == "http" && dev && loopback(u.Hostname()):
		return nil
	case u.Scheme == "http" && dev:
		return errors.New("http only on a loopback host (localhost, 127.0.0.1, [::1]); https otherwise")
	}
	return errors.New("want https (http only on loopback, in dev mode)")
}

// loopback reports whether host is localhost or a loopback address.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

var placeholder = regexp.MustCompile(`\{[^{}]*\}`)

var (
	originHost = regexp.MustCompile(`^([a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*|\[[0-9a-f:.]+\])$`)
	originPort = regexp.MustCompile(`^[1-9][0-9]*$`)
)

// IdP is the identity provider the settings name, and false when SECKILL_JWT_JWKS_URL
// is unset.
func (c Config) IdP() (auth.IdPConfig, bool) {
	return auth.IdPConfig{JWKSURL: c.JWKSURL, Issuer: c.JWTIssuer, Audience: c.JWTAudience,
		UserClaim: c.JWTUserClaim, RoleClaim: c.JWTRoleClaim, AdminRoles: c.JWTAdminRoles,
		ServiceRoles: c.JWTServiceRoles, Leeway: c.JWTLeeway}, c.JWKSURL != ""
}

// RedisTopology names the Redis set-up the settings describe: "single", "sentinel"
// or "cluster".
func (c Config) RedisTopology() string {
	switch {
	case c.RedisCluster:
		return "cluster"
	case c.RedisMasterName != "":
		return "sentinel"
	}
	return "single"
}

// Redis returns the one client every part of a process uses, for the topology the
// settings name: one server, a master found through Sentinels, or a Redis Cluster.
// Timeouts are bounded, so a dead Redis fails a request in about a second instead of
// hanging it.
//
// A single server's client never retries: a command whose reply was lost is reported,
// and a purchase then gives back what its script may have taken. A cluster client must
// follow MOVED and ASK and retry TRYAGAIN and a failed node, and it replays a command
// whose reply was lost; every script is safe to run twice (the reserve script knows its
// own order, stock.Reserve), so the default budget of 3 redirects is kept. Its view of
// the slots is reloaded every second as well as on MOVED, so after a failover a client
// finds the new master within about a second of its election (docs/topologies.md).
func (c Config) Redis() redis.UniversalClient { return c.redis(256, 8) }

// redis is Redis with a pool of that size that keeps minIdle connections open.
func (c Config) redis(pool, minIdle int) redis.UniversalClient {
	const (
		dial     = time.Second
		rw       = time.Second
		poolWait = 2 * time.Second
	)
	// DisableIdentity: no CLIENT SETINFO on each new connection, so the ACL rule the
	// service needs (RedisACL) has no CLIENT subcommand in it.
	switch c.RedisTopology() {
	case "cluster":
		return redis.NewClusterClient(&redis.ClusterOptions{
			Addrs: c.RedisAddrs, PoolSize: pool, MinIdleConns: minIdle,
			DialTimeout: dial, ReadTimeout: rw, WriteTimeout: rw, PoolTimeout: poolWait,
			ClusterStateReloadInterval: time.Second,
			Username:                   c.RedisUsername, Password: c.RedisPassword, TLSConfig: c.RedisTLS, DisableIdentity: true,
		})
	case "sentinel":
		return redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName: c.RedisMasterName, SentinelAddrs: c.RedisAddrs,
			PoolSize: pool, MinIdleConns: minIdle, MaxRetries: -1,
			DialTimeout: dial, ReadTimeout: rw, WriteTimeout: rw, PoolTimeout: poolWait,
			Username: c.RedisUsername, Password: c.RedisPassword, TLSConfig: c.RedisTLS, DisableIdentity: true,
			SentinelUsername: c.RedisSentinelUsername, SentinelPassword: c.RedisSentinelPassword,
		})
	}
	return redis.NewClient(&redis.Options{
		Addr: c.RedisAddrs[0], PoolSize: pool, MinIdleConns: minIdle, MaxRetries: -1,
		DialTimeout: dial, ReadTimeout: rw, WriteTimeout: rw, PoolTimeout: poolWait,
		Username: c.RedisUsername, Password: c.RedisPassword, TLSConfig: c.RedisTLS, DisableIdentity: true,
	})
}

// RedisPipelined returns rdb's automatic pipeliner (go-redis): commands that goroutines
// issue at the same moment travel to Redis together in one pipeline, one write and one
// read for many, so a crowd of purchases costs far fewer system calls in both the API
// and Redis. Each caller still gets its own reply. A command's own context deadline is
// not honored once it is queued; rdb's read and write timeouts still bound every batch.
//
// It runs full duplex: one connection with a writer that sends commands as they come
// and a reader that hands out replies as they arrive. The default (half duplex) sends
// the next batch only once the reply to the last one is read, so a command waits for
// the batch in flight and Redis idles between batches; full duplex sells more purchases
// a second (`make loadtest` measures it).
func RedisPipelined(rdb redis.UniversalClient) (*redis.AutoPipeliner, error) {
	opts := redis.DefaultBlockingAutoPipelineOptions()
	opts.FullDuplex = true
	ap, err := rdb.AutoPipelineWithOptions(opts)
	if err != nil {
		return nil, fmt.Errorf("redis auto-pipelining: %w", err)
	}
	return ap, nil
}

// Bounds of MySQL calls, so that a MySQL that does not answer (down, or frozen: TCP
// connects still succeed and nothing answers) fails a request within about two seconds
// instead of holding it (a route that needs MySQL answers 503 within 3 s).
const (
	// mysqlDial bounds opening a connection.
	mysqlDial = time.Second
	// mysqlIO bounds each read and write on a connection: the one bound of a COMMIT,
	// which no context reaches in the driver.
	mysqlIO = 2 * time.Second
	// mysqlWait bounds a statement, and a transaction, whose context has no deadline of
	// its own (a request's), waiting for a pool connection included. Background jobs
	// and the worker's tasks set their own deadlines.
	mysqlWait = 2 * time.Second
)

// mysqlConfig is MySQLDSN parsed, with the bounds of one read or write on a connection
// (io; 0 for none) and of a connect added where the DSN sets none.
func (c Config) mysqlConfig(io time.Duration) (*mysql.Config, error) {
	dsn, err := mysql.ParseDSN(c.MySQLDSN)
	if err != nil {
		return nil, fmt.Errorf("SECKILL_MYSQL_DSN: %w", err)
	}
	if c.MySQLTLS != nil {
		if dsn.TLSConfig != "" && dsn.TLSConfig != "false" {
			return nil, fmt.Errorf("SECKILL_MYSQL_TLS_CA_FILE is set and SECKILL_MYSQL_DSN has tls=%s: give one", dsn.TLSConfig)
		}
		dsn.TLS = c.MySQLTLS.Clone() // the driver sets its ServerName to the DSN's host
	}
	dsn.ParseTime = true
	if dsn.Timeout == 0 {
		dsn.Timeout = mysqlDial
	}
	if dsn.ReadTimeout == 0 {
		dsn.ReadTimeout = io
	}
	if dsn.WriteTimeout == 0 {
		dsn.WriteTimeout = io
	}
	return dsn, nil
}

// MySQL opens MySQLDSN through GORM, bounded so that a MySQL that does not answer fails
// calls instead of hanging them: a connect waits mysqlDial, a read or write mysqlIO, and
// a statement or transaction whose context has no deadline (a request's) mysqlWait in
// all, waiting for a pool connection included. Timeouts the DSN sets itself win. It
// connects to nothing yet (CheckMySQL does, at start): a process starts while MySQL
// does not answer, and its calls fail until it does.
func (c Config) MySQL() (*gorm.DB, error) {
	dsn, err := c.mysqlConfig(mysqlIO)
	if err != nil {
		return nil, err
	}
	// Arguments are interpolated by the driver, so a statement costs one round trip
	// instead of prepare, execute and close.
	dsn.InterpolateParams = true
	conn, err := openMySQL(dsn)
	if err != nil {
		return nil, err
	}
	// SkipInitializeWithVersion: GORM would otherwise ask MySQL its version here, and a
	// process could not start while MySQL does not answer. What the version tunes is
	// unused here (the migrator, FOR SHARE, MariaDB's RETURNING: IDs come from the insert).
	db, err := gorm.Open(gormmysql.New(gormmysql.Config{Conn: conn, DSNConfig: dsn, SkipInitializeWithVersion: true}), &gorm.Config{
		SkipDefaultTransaction: true, DisableAutomaticPing: true,
		DefaultContextTimeout: mysqlWait, DefaultTransactionTimeout: mysqlWait,
		Logger: logger.New(slog.NewLogLogger(slog.Default().Handler(), slog.LevelWarn), logger.Config{
			SlowThreshold: time.Second, LogLevel: logger.Warn, IgnoreRecordNotFoundError: true}),
	})
	if err != nil {
		_ = conn.Close()
		return nil, c.mysqlError(err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, err
	}
	sqlDB.SetMaxOpenConns(64)
	sqlDB.SetMaxIdleConns(64)
	sqlDB.SetConnMaxLifetime(5 * time.Minute)
	return db, nil
}

// MySQLProbe opens MySQLDSN for the MySQL outage monitor (internal/outage): one
// connection of its own, so that a service pool busy with a crowd never looks like an
// outage.
func (c Config) MySQLProbe() (*sql.DB, error) {
	db, err := c.sqlDB(mysqlIO)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	return db, nil
}

// MySQLForMigrations opens MySQLDSN without MySQL's bound on reads: a schema change on a
// big table, or the wait for another instance's migration lock, takes longer than a
// request may. It connects at once, so that a wrong certificate or password is named
// here (mysqlError) rather than met inside the first migration; a MySQL that does not
// answer is an error too (MySQLUnreachable tells it apart).
func (c Config) MySQLForMigrations() (*sql.DB, error) {
	db, err := c.sqlDB(0)
	if err != nil {
		return nil, err
	}
	if err := ping(context.Background(), db); err != nil {
		_ = db.Close()
		return nil, c.mysqlError(err)
	}
	return db, nil
}

// ping opens a first connection to db, within mysqlWait.
func ping(ctx context.Context, db *sql.DB) error {
	ctx, cancel := context.WithTimeout(ctx, mysqlWait)
	defer cancel()
	return db.PingContext(ctx)
}

// sqlDB opens MySQLDSN with database/sql, each read and write bounded by io (0: none),
// without connecting yet.
func (c Config) sqlDB(io time.Duration) (*sql.DB, error) {
	dsn, err := c.mysqlConfig(io)
	if err != nil {
		return nil, err
	}
	return openMySQL(dsn)
}

// openMySQL returns a pool of connections to dsn: through a connector rather than a DSN
// string, since a *tls.Config cannot travel in a string, and without a driver-wide
// registry of TLS configurations.
func openMySQL(dsn *mysql.Config) (*sql.DB, error) {
	connector, err := mysql.NewConnector(dsn)
	if err != nil {
		return nil, fmt.Errorf("SECKILL_MYSQL_DSN: %w", err)
	}
	return sql.OpenDB(connector), nil
}
