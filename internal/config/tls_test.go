package config_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"seckill/internal/config"
	"seckill/internal/testutil"
)

// The TLS settings: files read at start, each fault named; TLS files without
// SECKILL_REDIS_TLS=true refused rather than ignored.
func TestTLSSettings(t *testing.T) {
	f := testutil.NewTLSFiles(t)
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("no certificate here\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.pem")
	names := []string{"SECKILL_REDIS_TLS", "SECKILL_REDIS_TLS_CA_FILE", "SECKILL_REDIS_TLS_SERVER_NAME",
		"SECKILL_REDIS_TLS_CERT_FILE", "SECKILL_REDIS_TLS_KEY_FILE", "SECKILL_MYSQL_TLS_CA_FILE"}
	tests := []struct {
		name     string
		env      map[string]string
		redisTLS bool // a TLS configuration for Redis
		certs    int  // client certificates in it
		mysqlTLS bool
		wantErr  string
	}{
		{"off", nil, false, 0, false, ""},
		{"the system's roots", map[string]string{"SECKILL_REDIS_TLS": "true"}, true, 0, false, ""},
		{"a CA, a name and a client certificate", map[string]string{"SECKILL_REDIS_TLS": "true", "SECKILL_REDIS_TLS_CA_FILE": f.CAFile,
			"SECKILL_REDIS_TLS_SERVER_NAME": "redis.test", "SECKILL_REDIS_TLS_CERT_FILE": f.ClientCertFile,
			"SECKILL_REDIS_TLS_KEY_FILE": f.ClientKeyFile}, true, 1, false, ""},
		{"MySQL's CA", map[string]string{"SECKILL_MYSQL_TLS_CA_FILE": f.CAFile}, false, 0, true, ""},
		{"a CA file missing", map[string]string{"SECKILL_REDIS_TLS": "true", "SECKILL_REDIS_TLS_CA_FILE": missing}, false, 0, false, "SECKILL_REDIS_TLS_CA_FILE"},
		{"a CA file of no certificate", map[string]string{"SECKILL_REDIS_TLS": "true", "SECKILL_REDIS_TLS_CA_FILE": garbage}, false, 0, false, "SECKILL_REDIS_TLS_CA_FILE: no PEM"},
		{"a certificate without its key", map[string]string{"SECKILL_REDIS_TLS": "true", "SECKILL_REDIS_TLS_CERT_FILE": f.ClientCertFile}, false, 0, false, "go together"},
		{"a key file missing", map[string]string{"SECKILL_REDIS_TLS": "true", "SECKILL_REDIS_TLS_CERT_FILE": f.ClientCertFile,
			"SECKILL_REDIS_TLS_KEY_FILE": missing}, false, 0, false, "SECKILL_REDIS_TLS_KEY_FILE"},
		{"a key of another certificate", map[string]string{"SECKILL_REDIS_TLS": "true", "SECKILL_REDIS_TLS_CERT_FILE": f.ClientCertFile,
			"SECKILL_REDIS_TLS_KEY_FILE": f.KeyFile}, false, 0, false, "does not match"},
		{"a key file that is a certificate", map[string]string{"SECKILL_REDIS_TLS": "true", "SECKILL_REDIS_TLS_CERT_FILE": f.ClientCertFile,
			"SECKILL_REDIS_TLS_KEY_FILE": f.ClientCertFile}, false, 0, false, "SECKILL_REDIS_TLS_KEY_FILE"},
		{"TLS files with TLS off", map[string]string{"SECKILL_REDIS_TLS_CA_FILE": f.CAFile, "SECKILL_REDIS_TLS_SERVER_NAME": "redis.test"}, false, 0, false,
			"SECKILL_REDIS_TLS_CA_FILE, SECKILL_REDIS_TLS_SERVER_NAME set but SECKILL_REDIS_TLS is not true"},
		{"TLS not a boolean", map[string]string{"SECKILL_REDIS_TLS": "yes"}, false, 0, false, "SECKILL_REDIS_TLS: want true or false"},
		{"MySQL's CA file missing", map[string]string{"SECKILL_MYSQL_TLS_CA_FILE": missing}, false, 0, false, "SECKILL_MYSQL_TLS_CA_FILE"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("SECKILL_ENV", "dev")
			for _, n := range names {
				t.Setenv(n, tc.env[n])
			}
			c, err := config.Load()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("err = %v, want one error naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (c.RedisTLS != nil) != tc.redisTLS || (c.MySQLTLS != nil) != tc.mysqlTLS {
				t.Fatalf("Redis TLS %v, MySQL TLS %v; want %v, %v", c.RedisTLS != nil, c.MySQLTLS != nil, tc.redisTLS, tc.mysqlTLS)
			}
			if c.RedisTLS == nil {
				return
			}
			if len(c.RedisTLS.Certificates) != tc.certs || c.RedisTLS.InsecureSkipVerify || c.RedisTLS.ServerName != tc.env["SECKILL_REDIS_TLS_SERVER_NAME"] ||
				(c.RedisTLS.RootCAs == nil) != (tc.env["SECKILL_REDIS_TLS_CA_FILE"] == "") {
				t.Errorf("TLS configuration: %d client certificates, skip verify %v, name %q, own roots %v",
					len(c.RedisTLS.Certificates), c.RedisTLS.InsecureSkipVerify, c.RedisTLS.ServerName, c.RedisTLS.RootCAs != nil)
			}
		})
	}
}

// The ACL rule docs/connecting.md shows is config.RedisACL, each part with its reason.
func TestConnectingShowsTheACLRule(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "connecting.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	if !strings.Contains(doc, config.RedisACLRule()) {
		t.Errorf("docs/connecting.md lacks the rule as one line:\n%s", config.RedisACLRule())
	}
	for _, p := range config.RedisACL {
		if !strings.Contains(doc, "`"+strings.ReplaceAll(p.Rule, "|", `\|`)+"`") { // | escaped in a table
			t.Errorf("docs/connecting.md lacks the part `%s` and why", p.Rule)
		}
	}
	if !strings.Contains(doc, config.RedisSentinelACL) {
		t.Errorf("docs/connecting.md lacks the Sentinel user's rule %s", config.RedisSentinelACL)
	}
}
