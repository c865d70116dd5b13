package config

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestRedisTopology(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    string   // topology
		addrs   []string // parsed SECKILL_REDIS_ADDR
		wantErr string   // part of the error, "" for none
	}{
		{"default", nil, "single", []string{"127.0.0.1:6379"}, ""},
		{"cluster seeds", map[string]string{"SECKILL_REDIS_ADDR": "a:1, b:2,c:3", "SECKILL_REDIS_CLUSTER": "true"},
			"cluster", []string{"a:1", "b:2", "c:3"}, ""},
		{"sentinels", map[string]string{"SECKILL_REDIS_ADDR": "a:1,b:2", "SECKILL_REDIS_MASTER_NAME": "m"},
			"sentinel", []string{"a:1", "b:2"}, ""},
		{"a list without a topology", map[string]string{"SECKILL_REDIS_ADDR": "a:1,b:2"}, "", nil, "lists several"},
		{"both", map[string]string{"SECKILL_REDIS_CLUSTER": "true", "SECKILL_REDIS_MASTER_NAME": "m"}, "", nil, "exclude"},
		{"not a boolean", map[string]string{"SECKILL_REDIS_CLUSTER": "yes"}, "", nil, "SECKILL_REDIS_CLUSTER"},
		{"min replicas", map[string]string{"SECKILL_REDIS_MIN_REPLICAS": "-1"}, "", nil, "SECKILL_REDIS_MIN_REPLICAS"},
		{"trusted proxies", map[string]string{"SECKILL_TRUSTED_PROXIES": "10.0.0.0/8,127.0.0.1"}, "single", []string{"127.0.0.1:6379"}, ""},
		{"a bad proxy", map[string]string{"SECKILL_TRUSTED_PROXIES": "10.0.0.0/33"}, "", nil, "SECKILL_TRUSTED_PROXIES"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("SECKILL_ENV", "dev")
			c, loaded := load(t, tc.env, tc.wantErr, "SECKILL_REDIS_ADDR", "SECKILL_REDIS_CLUSTER", "SECKILL_REDIS_MASTER_NAME",
				"SECKILL_REDIS_MIN_REPLICAS", "SECKILL_TRUSTED_PROXIES")
			if !loaded {
				return
			}
			if got := c.RedisTopology(); got != tc.want {
				t.Errorf("topology = %s, want %s", got, tc.want)
			}
			if strings.Join(c.RedisAddrs, " ") != strings.Join(tc.addrs, " ") {
				t.Errorf("addrs = %q, want %q", c.RedisAddrs, tc.addrs)
			}
			rdb := c.Redis()
			defer rdb.Close()
			var ok bool
			switch tc.want {
			case "cluster":
				_, ok = rdb.(*redis.ClusterClient)
			default:
				_, ok = rdb.(*redis.Client)
			}
			if !ok {
				t.Errorf("client %T for %s", rdb, tc.want)
			}
		})
	}
}

func TestShopSettings(t *testing.T) {
	tests := []struct {
		name         string
		env          map[string]string
		allowPrivate bool
		idp          bool
		wantErr      string
	}{
		{"dev defaults", map[string]string{"SECKILL_ENV": "dev"}, true, false, ""},
		{"production defaults", map[string]string{"SECKILL_JWT_SECRET": strings.Repeat("s", 32)}, false, false, ""},
		{"private allowed outside dev", map[string]string{"SECKILL_JWT_SECRET": strings.Repeat("s", 32), "SECKILL_WEBHOOK_ALLOW_PRIVATE": "true"}, true, false, ""},
		{"private refused in dev", map[string]string{"SECKILL_ENV": "dev", "SECKILL_WEBHOOK_ALLOW_PRIVATE": "false"}, false, false, ""},
		{"allow private not a boolean", map[string]string{"SECKILL_ENV": "dev", "SECKILL_WEBHOOK_ALLOW_PRIVATE": "yes"}, false, false, "SECKILL_WEBHOOK_ALLOW_PRIVATE"},
		{"a JWKS", map[string]string{"SECKILL_ENV": "dev", "SECKILL_JWT_JWKS_URL": "https://idp.example/.well-known/jwks.json",
			"SECKILL_JWT_ISSUER": "https://idp.example", "SECKILL_JWT_AUDIENCE": "seckill", "SECKILL_JWT_USER_CLAIM": "uid",
			"SECKILL_JWT_ROLE_CLAIM": "realm_access.roles"}, true, true, ""},
		{"a JWKS that is no URL", map[string]string{"SECKILL_ENV": "dev", "SECKILL_JWT_JWKS_URL": "idp.example/jwks"}, false, false, "SECKILL_JWT_JWKS_URL"},
		{"a JWKS over http in dev mode, without issuer or audience", map[string]string{"SECKILL_ENV": "dev",
			"SECKILL_JWT_JWKS_URL": "http://idp.test/jwks"}, true, true, ""},
		{"a JWKS over http to loopback", map[string]string{"SECKILL_JWT_SECRET": strings.Repeat("s", 32),
			"SECKILL_JWT_JWKS_URL": "http://127.0.0.1:8180/jwks", "SECKILL_JWT_ISSUER": "https://idp.example",
			"SECKILL_JWT_AUDIENCE": "seckill"}, false, true, ""},
		{"a JWKS over http to [::1]", map[string]string{"SECKILL_JWT_SECRET": strings.Repeat("s", 32),
			"SECKILL_JWT_JWKS_URL": "http://[::1]:8180/jwks", "SECKILL_JWT_ISSUER": "https://idp.example",
			"SECKILL_JWT_AUDIENCE": "seckill"}, false, true, ""},
		{"a JWKS over http off loopback", map[string]string{"SECKILL_JWT_SECRET": strings.Repeat("s", 32),
			"SECKILL_JWT_JWKS_URL": "http://idp.example/jwks", "SECKILL_JWT_ISSUER": "https://idp.example",
			"SECKILL_JWT_AUDIENCE": "seckill"}, false, false, "SECKILL_JWT_JWKS_URL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := load(t, tc.env, tc.wantErr, "SECKILL_ENV", "SECKILL_JWT_SECRET", "SECKILL_WEBHOOK_ALLOW_PRIVATE",
				"SECKILL_JWT_JWKS_URL", "SECKILL_JWT_ISSUER", "SECKILL_JWT_AUDIENCE", "SECKILL_JWT_USER_CLAIM", "SECKILL_JWT_ROLE_CLAIM")
			if !ok {
				return
			}
			if c.WebhookAllowPrivate != tc.allowPrivate {
				t.Errorf("WebhookAllowPrivate = %v, want %v", c.WebhookAllowPrivate, tc.allowPrivate)
			}
			idp, ok := c.IdP()
			if ok != tc.idp {
				t.Fatalf("IdP set: %v, want %v", ok, tc.idp)
			}
			or := func(v, def string) string {
				if v == "" {
					return def
				}
				return v
			}
			if ok && (idp.JWKSURL != tc.env["SECKILL_JWT_JWKS_URL"] || idp.Issuer != tc.env["SECKILL_JWT_ISSUER"] ||
				idp.Audience != tc.env["SECKILL_JWT_AUDIENCE"] || idp.UserClaim != or(tc.env["SECKILL_JWT_USER_CLAIM"], "sub") ||
				idp.RoleClaim != or(tc.env["SECKILL_JWT_ROLE_CLAIM"], "role") || idp.Leeway != 30*time.Second) {
				t.Errorf("IdP = %+v", idp)
			}
			if !ok && (c.JWTUserClaim != "sub" || c.JWTRoleClaim != "role") {
				t.Errorf("claims %q %q, want the defaults sub and role", c.JWTUserClaim, c.JWTRoleClaim)
			}
		})
	}
}

// Payments: the buyer's simulated payment is on in dev mode only, unless set; a checkout
// URL is an absolute https URL template with {order_id} (http on loopback in dev mode),
// and anything else stops the start naming SECKILL_CHECKOUT_URL.
func TestPaymentSettings(t *testing.T) {
	prod := strings.Repeat("s", 32)
	tests := []struct {
		name      string
		env       map[string]string
		buyerPays bool
		wantErr   string
	}{
		{"dev", map[string]string{"SECKILL_ENV": "dev"}, true, ""},
		{"production", map[string]string{"SECKILL_JWT_SECRET": prod}, false, ""},
		{"dev, buyers do not pay", map[string]string{"SECKILL_ENV": "dev", "SECKILL_BUYER_PAYS": "false"}, false, ""},
		{"production, buyers pay (a demo)", map[string]string{"SECKILL_JWT_SECRET": prod, "SECKILL_BUYER_PAYS": "true"}, true, ""},
		{"buyer pays not a boolean", map[string]string{"SECKILL_JWT_SECRET": prod, "SECKILL_BUYER_PAYS": "yes"}, false, "SECKILL_BUYER_PAYS"},
		{"a checkout", map[string]string{"SECKILL_JWT_SECRET": prod, "SECKILL_CHECKOUT_URL": "https://shop.example/pay/{activity_id}?order={order_id}"}, false, ""},
		{"http on loopback in dev mode", map[string]string{"SECKILL_ENV": "dev", "SECKILL_CHECKOUT_URL": "http://127.0.0.1:3000/pay?o={order_id}"}, true, ""},
		{"http on localhost in dev mode", map[string]string{"SECKILL_ENV": "dev", "SECKILL_CHECKOUT_URL": "http://localhost/pay/{order_id}"}, true, ""},
		{"http on [::1] in dev mode", map[string]string{"SECKILL_ENV": "dev", "SECKILL_CHECKOUT_URL": "http://[::1]:8000/{order_id}"}, true, ""},
		{"http on loopback in production", map[string]string{"SECKILL_JWT_SECRET": prod, "SECKILL_CHECKOUT_URL": "http://127.0.0.1/pay?o={order_id}"}, false, "SECKILL_CHECKOUT_URL"},
		{"http elsewhere in dev mode", map[string]string{"SECKILL_ENV": "dev", "SECKILL_CHECKOUT_URL": "http://shop.example/pay?o={order_id}"}, false, "SECKILL_CHECKOUT_URL"},
		{"no order id", map[string]string{"SECKILL_JWT_SECRET": prod, "SECKILL_CHECKOUT_URL": "https://shop.example/pay/{activity_id}"}, false, "SECKILL_CHECKOUT_URL"},
		{"an unknown placeholder", map[string]string{"SECKILL_JWT_SECRET": prod, "SECKILL_CHECKOUT_URL": "https://shop.example/pay/{order}?o={order_id}"}, false, "SECKILL_CHECKOUT_URL"},
		{"relative", map[string]string{"SECKILL_JWT_SECRET": prod, "SECKILL_CHECKOUT_URL": "/pay?o={order_id}"}, false, "SECKILL_CHECKOUT_URL"},
		{"another scheme", map[string]string{"SECKILL_JWT_SECRET": prod, "SECKILL_CHECKOUT_URL": "javascript:alert({order_id})"}, false, "SECKILL_CHECKOUT_URL"},
		{"a password in it", map[string]string{"SECKILL_JWT_SECRET": prod, "SECKILL_CHECKOUT_URL": "https://u:p@shop.example/{order_id}"}, false, "SECKILL_CHECKOUT_URL"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, ok := load(t, tc.env, tc.wantErr, "SECKILL_ENV", "SECKILL_JWT_SECRET", "SECKILL_BUYER_PAYS", "SECKILL_CHECKOUT_URL")
			if !ok {
				return
			}
			if c.BuyerPays != tc.buyerPays || c.CheckoutURL != tc.env["SECKILL_CHECKOUT_URL"] {
				t.Errorf("BuyerPays %v, CheckoutURL %q; want %v, %q", c.BuyerPays, c.CheckoutURL, tc.buyerPays, tc.env["SECKILL_CHECKOUT_URL"])
			}
		})
	}
}

// Counts take whole numbers, rates any number >= 0; anything else fails the start,
// naming the variable.
func TestNumbers(t *testing.T) {
	names := []string{"SECKILL_ENV", "SECKILL_RATE_USER", "SECKILL_REDIS_MIN_REPLICAS", "SECKILL_PURCHASES_IN_FLIGHT"}
	tests := []struct {
		name    string
		env     map[string]string
		wantErr string
	}{
		{"defaults", map[string]string{}, ""},
		{"a fractional rate", map[string]string{"SECKILL_RATE_USER": "0.5"}, ""},
		{"a count", map[string]string{"SECKILL_REDIS_MIN_REPLICAS": "2", "SECKILL_PURCHASES_IN_FLIGHT": "0"}, ""},
		{"a fractional count", map[string]string{"SECKILL_REDIS_MIN_REPLICAS": "1.5"}, "SECKILL_REDIS_MIN_REPLICAS"},
		{"a negative count", map[string]string{"SECKILL_PURCHASES_IN_FLIGHT": "-1"}, "SECKILL_PURCHASES_IN_FLIGHT"},
		{"a count too big", map[string]string{"SECKILL_PURCHASES_IN_FLIGHT": "99999999999"}, "SECKILL_PURCHASES_IN_FLIGHT"},
		{"a word", map[string]string{"SECKILL_RATE_USER": "fast"}, "SECKILL_RATE_USER"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.env["SECKILL_ENV"] = "dev"
			c, ok := load(t, tc.env, tc.wantErr, names...)
			if !ok {
				return
			}
			if v, set := tc.env["SECKILL_REDIS_MIN_REPLICAS"]; set && strconv.Itoa(c.MinReplicas) != v {
				t.Errorf("MinReplicas = %d, want %s", c.MinReplicas, v)
			}
			if v, set := tc.env["SECKILL_RATE_USER"]; set && strconv.FormatFloat(c.RateUser, 'f', -1, 64) != v {
				t.Errorf("RateUser = %g, want %s", c.RateUser, v)
			}
		})
	}
}

// load sets each variable of names to its value in env (unset when env has none) and
// loads the settings. With wantErr it checks that loading fails naming it and returns
// false; otherwise loading must succeed.
func load(t *testing.T, env map[string]string, wantErr string, names ...string) (Config, bool) {
	t.Helper()
	for _, k := range names {
		t.Setenv(k, env[k])
	}
	c, err := Load()
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Fatalf("err = %v, want one naming %q", err, wantErr)
		}
		return c, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return c, true
}

// The service's MySQL calls are bounded where the DSN sets no bound, migrations' reads
// are not, and a bound the DSN sets wins.
func TestMySQLBounds(t *testing.T) {
	tests := []struct {
		name               string
		dsn                string
		io                 time.Duration
		wantDial, wantRead time.Duration
		wantWrite          time.Duration
	}{
		{"the service's", "u:p@tcp(db:3306)/seckill", mysqlIO, mysqlDial, mysqlIO, mysqlIO},
		{"migrations'", "u:p@tcp(db:3306)/seckill", 0, mysqlDial, 0, 0},
		{"the DSN's own", "u:p@tcp(db:3306)/seckill?timeout=5s&readTimeout=30s", mysqlIO, 5 * time.Second, 30 * time.Second, mysqlIO},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Config{MySQLDSN: tc.dsn}.mysqlConfig(tc.io)
			if err != nil {
				t.Fatal(err)
			}
			if got.Timeout != tc.wantDial || got.ReadTimeout != tc.wantRead || got.WriteTimeout != tc.wantWrite || !got.ParseTime {
				t.Errorf("dial %v, read %v, write %v, parseTime %t; want %v, %v, %v, true",
					got.Timeout, got.ReadTimeout, got.WriteTimeout, got.ParseTime, tc.wantDial, tc.wantRead, tc.wantWrite)
			}
		})
	}
	if _, err := (Config{MySQLDSN: "not a dsn"}).MySQL(); err == nil || !strings.Contains(err.Error(), "SECKILL_MYSQL_DSN") {
		t.Errorf("a malformed DSN: err = %v, want one naming SECKILL_MYSQL_DSN", err)
	}
}

// SECKILL_CORS_ORIGINS takes origins as browsers send them; anything else fails the
// start, naming the variable and the entry.
func TestCORSOrigins(t *testing.T) {
	tests := []struct {
		value   string
		want    []string
		wantErr string
	}{
		{"", nil, ""},
		{"https://shop.example", []string{"https://shop.example"}, ""},
		{" https://shop.example , http://127.0.0.1:8081,http://[::1]:3000,https://xn--bcher-kva.example",
			[]string{"https://shop.example", "http://127.0.0.1:8081", "http://[::1]:3000", "https://xn--bcher-kva.example"}, ""},
		{"https://shop.example/", nil, "trailing slash"},
		{"https://shop.example/store", nil, "no path"},
		{"https://shop.example?x=1", nil, "no path"},
		{"*", nil, "wildcard"},
		{"https://*.shop.example", nil, "wildcard"},
		{"shop.example", nil, "http:// or https://"},
		{"ftp://shop.example", nil, "http:// or https://"},
		{"null", nil, "http:// or https://"},
		{"https://Shop.example", nil, "lower case"},
		{"https://shop.example:443", nil, "default port"},
		{"http://shop.example:80", nil, "default port"},
		{"https://shop.example:", nil, "port"},
		{"https://shop.example:0", nil, "port"},
		{"https://shop.example:65536", nil, "port"},
		{"https://shop.example:+1", nil, "port"},
		{"https://user@shop.example", nil, "no user"},
		{"https://bücher.example", nil, "punycode"},
		{"https://shop_example", nil, "punycode"},
		{"https://", nil, "host"},
		{"https://shop.example,https://shop.example/", nil, `"https://shop.example/"`},
	}
	for _, tc := range tests {
		t.Run(tc.value, func(t *testing.T) {
			env := map[string]string{"SECKILL_ENV": "dev", "SECKILL_CORS_ORIGINS": tc.value}
			wantErr := tc.wantErr
			if wantErr != "" {
				wantErr = "SECKILL_CORS_ORIGINS"
			}
			c, ok := load(t, env, wantErr, "SECKILL_ENV", "SECKILL_CORS_ORIGINS")
			if !ok {
				if _, err := Load(); !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("err = %v, want it to say %q", err, tc.wantErr)
				}
				return
			}
			if strings.Join(c.CORSOrigins, " ") != strings.Join(tc.want, " ") {
				t.Errorf("CORSOrigins = %q, want %q", c.CORSOrigins, tc.want)
			}
		})
	}
}
