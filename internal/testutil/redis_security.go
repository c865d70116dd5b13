package testutil

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"seckill/internal/config"
)

// RedisSecurity locks a test's Redis servers, Sentinels and Clusters down as a managed
// Redis is: TLS only (no plaintext port), client certificates required when
// ClientCerts, no access without a password, an administrator for the test's own
// helpers and for replication, and the service's user, who may do only what
// config.RedisACL allows (on Sentinels, what config.RedisSentinelACL allows).
//
// The administrator is the default user with a password, not a user beside a default
// user turned off: Redis replays the AOF as the default user, and up to Redis 8.2 it
// checks the default user's rights on every MULTI/EXEC it replays, so with the default
// user off a restart from the AOF silently drops each multi-write Lua script's effects
// (redis/redis issue 14541; docs/connecting.md).
type RedisSecurity struct {
	TLS *TLSFiles
	// ClientCerts makes the servers require a client certificate (mutual TLS).
	ClientCerts bool
	// Admin and AdminPassword: every right; the tests' helpers and the replicas use them.
	// Admin is "default".
	Admin, AdminPassword string
	// User and Password: the service's user on the data nodes (config.RedisACL).
	User, Password string
	// SentinelUser and SentinelPassword: the service's user on the Sentinels (config.RedisSentinelACL).
	SentinelUser, SentinelPassword string
}

// NewRedisSecurity makes fresh certificates and passwords, client certificates required.
func NewRedisSecurity(t testing.TB) *RedisSecurity {
	t.Helper()
	return &RedisSecurity{TLS: NewTLSFiles(t), ClientCerts: true,
		Admin: "default", AdminPassword: secret(t),
		User: "seckill", Password: secret(t),
		SentinelUser: "seckill-sentinel", SentinelPassword: secret(t)}
}

func secret(t testing.TB) string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return "pw-" + hex.EncodeToString(b[:])
}

// The security of the tests that asked for it with SecureRedis, by test name.
var (
	secureMu    sync.Mutex
	secureTests = map[string]*RedisSecurity{}
)

// SecureRedis makes every Redis server, Sentinel set and Cluster that t and its
// subtests start through this package (StartRedis, StartStack, StartSentinel,
// StartCluster) a locked-down one (RedisSecurity), their Topology giving the service
// the settings to reach them as its restricted user. Each such server's ACL LOG is
// checked when the test ends: a command the service was refused fails it. Existing
// scenarios run unchanged under it.
func SecureRedis(t testing.TB) *RedisSecurity {
	t.Helper()
	sec := NewRedisSecurity(t)
	secureMu.Lock()
	secureTests[t.Name()] = sec
	secureMu.Unlock()
	t.Cleanup(func() {
		secureMu.Lock()
		delete(secureTests, t.Name())
		secureMu.Unlock()
	})
	return sec
}

// Secured reports whether t or a test above it asked for SecureRedis.
func Secured(t testing.TB) bool { return securityOf(t) != nil }

// securityOf is the RedisSecurity SecureRedis set for t or a test above it, nil if none.
func securityOf(t testing.TB) *RedisSecurity {
	if _, ok := t.(*mainTB); ok {
		return nil
	}
	secureMu.Lock()
	defer secureMu.Unlock()
	for name := t.Name(); ; {
		if sec := secureTests[name]; sec != nil {
			return sec
		}
		i := strings.LastIndexByte(name, '/')
		if i < 0 {
			return nil
		}
		name = name[:i]
	}
}

// serverArgs are a redis-server's arguments for a server listening on port alone,
// over TLS, with the users.
func (sec *RedisSecurity) serverArgs(port int) []string {
	return append([]string{"--port", "0", "--tls-port", strconv.Itoa(port),
		"--tls-cert-file", sec.TLS.CertFile, "--tls-key-file", sec.TLS.KeyFile, "--tls-ca-cert-file", sec.TLS.CAFile,
		"--tls-auth-clients", yesNo(sec.ClientCerts), "--tls-replication", "yes",
		"--masteruser", sec.Admin, "--masterauth", sec.AdminPassword,
		"--user", sec.Admin, "on", ">" + sec.AdminPassword, "~*", "&*", "+@all",
		"--user", sec.User, "on", ">" + sec.Password}, strings.Fields(config.RedisACLRule())...)
}

// sentinelConf is the lines of a Sentinel's configuration file that make it speak TLS
// alone, to its clients and to the servers and Sentinels it watches, with the users:
// head goes first, tail after the master's "sentinel monitor" line.
func (sec *RedisSecurity) sentinelConf(port int, masterName string) (head, tail string) {
	head = fmt.Sprintf(`port 0
tls-port %d
tls-cert-file %s
tls-key-file %s
tls-ca-cert-file %s
tls-auth-clients %s
tls-replication yes
user %s on >%s ~* &* +@all
user %s on >%s %s
sentinel sentinel-user %s
sentinel sentinel-pass %s
`, port, sec.TLS.CertFile, sec.TLS.KeyFile, sec.TLS.CAFile, yesNo(sec.ClientCerts),
		sec.Admin, sec.AdminPassword, sec.SentinelUser, sec.SentinelPassword, config.RedisSentinelACL, sec.Admin, sec.AdminPassword)
	tail = fmt.Sprintf("sentinel auth-user %s %s\nsentinel auth-pass %s %s\n", masterName, sec.Admin, masterName, sec.AdminPassword)
	return head, tail
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// env is the service's settings for this security: TLS with the authority (and the
// client certificate), its user and password, and with sentinels its Sentinel user.
func (sec *RedisSecurity) env(sentinels bool) []string {
	if sec == nil {
		return nil
	}
	env := []string{"SECKILL_REDIS_TLS=true", "SECKILL_REDIS_TLS_CA_FILE=" + sec.TLS.CAFile,
		"SECKILL_REDIS_USERNAME=" + sec.User, "SECKILL_REDIS_PASSWORD=" + sec.Password}
	if sec.ClientCerts {
		env = append(env, "SECKILL_REDIS_TLS_CERT_FILE="+sec.TLS.ClientCertFile, "SECKILL_REDIS_TLS_KEY_FILE="+sec.TLS.ClientKeyFile)
	}
	if sentinels {
		env = append(env, "SECKILL_REDIS_SENTINEL_USERNAME="+sec.SentinelUser, "SECKILL_REDIS_SENTINEL_PASSWORD="+sec.SentinelPassword)
	}
	return env
}

// adminOptions are the options of the tests' own connections to addr: the
// administrator over TLS under a security, a plain connection without one.
func (sec *RedisSecurity) adminOptions(addr string) *redis.Options {
	o := &redis.Options{Addr: addr, DisableIdentity: true}
	if sec != nil {
		o.Username, o.Password, o.TLSConfig = sec.Admin, sec.AdminPassword, sec.TLS.ClientConfig()
	}
	return o
}

// cliArgs are redis-cli's arguments to reach a server under the security as the
// administrator (none without one).
func (sec *RedisSecurity) cliArgs() []string {
	if sec == nil {
		return nil
	}
	return []string{"--tls", "--cacert", sec.TLS.CAFile, "--cert", sec.TLS.ClientCertFile, "--key", sec.TLS.ClientKeyFile,
		"--user", sec.Admin, "--pass", sec.AdminPassword, "--no-auth-warning"}
}

// ACLLog returns the server's ACL LOG: the commands, keys and channels it refused, and
// the failed logins, one line each.
func (s *RedisServer) ACLLog(t testing.TB) []string {
	t.Helper()
	entries, err := s.do("ACL", "LOG").Slice()
	if err != nil {
		t.Fatalf("ACL LOG on %s: %v", s.Addr, err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, fmt.Sprint(e))
	}
	return out
}

// CheckACLLog fails the test with every entry of its nodes' ACL LOG, and empties them:
// for a cluster a package shares, at the end of each test that runs on it secured.
func (c *Cluster) CheckACLLog(t testing.TB) {
	t.Helper()
	for _, n := range c.nodes {
		n.checkACLLog(t)
		_ = n.do("ACL", "LOG", "RESET").Err()
	}
}

// checkACLLog fails the test with every entry of the server's ACL LOG.
func (s *RedisServer) checkACLLog(t testing.TB) {
	t.Helper()
	if err := s.ping(); err != nil {
		return // killed by the test, or paused: nothing to read
	}
	for _, e := range s.ACLLog(t) {
		t.Errorf("%s refused the service: %s", s.Addr, e)
	}
}

// pingTimeout bounds the helpers' probes of a plain server; a TLS handshake gets
// five times as long.
const pingTimeout = 300 * time.Millisecond

// probeClient returns a client of one connection for the helpers' probes, whose
// connection and reads time out after timeout (five times that over TLS).
func (s *RedisServer) probeClient(timeout time.Duration) *redis.Client {
	o := s.sec.adminOptions(s.Addr)
	if s.sec != nil {
		timeout *= 5
	}
	o.DialTimeout, o.ReadTimeout, o.MaxRetries, o.PoolSize, o.DialerRetries = timeout, timeout, -1, 1, 1
	return redis.NewClient(o)
}

// probeContext bounds one probe: pingTimeout, five times that over TLS.
func (s *RedisServer) probeContext() (context.Context, context.CancelFunc) {
	d := pingTimeout
	if s.sec != nil {
		d *= 5
	}
	return context.WithTimeout(context.Background(), d)
}

// ping reports whether the server answers a PING now.
func (s *RedisServer) ping() error {
	c := s.probeClient(200 * time.Millisecond)
	defer c.Close()
	ctx, cancel := s.probeContext()
	defer cancel()
	return c.Ping(ctx).Err()
}

// do runs one command on the server as the administrator, over a connection of its own.
func (s *RedisServer) do(args ...any) *redis.Cmd {
	c := s.probeClient(2 * time.Second)
	defer c.Close()
	return c.Do(context.Background(), args...)
}

// info returns a section of INFO, "" when the server does not answer.
func (s *RedisServer) info(section string) string {
	txt, _ := s.do("INFO", section).Text()
	return txt
}
