package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"seckill/internal/testutil"
)

// refusalBound is how long a binary may take to refuse a setting that cannot work:
// the probe's steps are bounded by seconds, and a hang would show as a timeout.
const refusalBound = 30 * time.Second

// A setting that cannot work refuses the start of both binaries, within seconds, with
// one line that names the setting: never a hang, never plaintext instead of TLS.
func TestBadConnectionSettingsRefuseTheStart(t *testing.T) {
	sec := testutil.NewRedisSecurity(t)
	locked := testutil.StartRedisWith(t, sec, "--appendonly", "yes")
	plain := testutil.StartRedisWith(t, nil)
	other := testutil.NewTLSFiles(t) // an authority that signed none of the servers
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wrongPassword := filepath.Join(dir, "wrong-password")
	if err := os.WriteFile(wrongPassword, []byte("not-the-password\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.pem")

	mariaTLS := testutil.NewTLSFiles(t)
	tlsMaria := testutil.StartMariaDB(t, testutil.MariaDBOptions{TLS: mariaTLS})
	tlsDB := tlsMaria.Database(t)
	plainDB := testutil.MySQL(t)

	ss := testutil.StartSentinel(t, testutil.SentinelOptions{Security: sec})

	redisEnv := locked.Topology() // TLS, client certificate, the service's user
	tests := []struct {
		name string
		env  []string // over redisEnv and plainDB's settings
		want string   // the setting the one error line names
	}{
		{"a CA file missing", []string{"SECKILL_REDIS_TLS_CA_FILE=" + missing}, "SECKILL_REDIS_TLS_CA_FILE"},
		{"a CA file with no certificate", []string{"SECKILL_REDIS_TLS_CA_FILE=" + garbage}, "SECKILL_REDIS_TLS_CA_FILE"},
		{"another authority", []string{"SECKILL_REDIS_TLS_CA_FILE=" + other.CAFile}, "SECKILL_REDIS_TLS_CA_FILE"},
		{"a server name the certificate lacks", []string{"SECKILL_REDIS_TLS_SERVER_NAME=other.test"}, "SECKILL_REDIS_TLS_SERVER_NAME"},
		{"a key file missing", []string{"SECKILL_REDIS_TLS_KEY_FILE=" + missing}, "SECKILL_REDIS_TLS_KEY_FILE"},
		{"a key that is not the certificate's", []string{"SECKILL_REDIS_TLS_KEY_FILE=" + sec.TLS.KeyFile}, "SECKILL_REDIS_TLS_CERT_FILE and SECKILL_REDIS_TLS_KEY_FILE"},
		{"a certificate without its key", []string{"SECKILL_REDIS_TLS_KEY_FILE="}, "SECKILL_REDIS_TLS_CERT_FILE and SECKILL_REDIS_TLS_KEY_FILE go together"},
		{"no client certificate where one is required", []string{"SECKILL_REDIS_TLS_CERT_FILE=", "SECKILL_REDIS_TLS_KEY_FILE="}, "SECKILL_REDIS_TLS_CERT_FILE"},
		{"a wrong password", []string{"SECKILL_REDIS_PASSWORD=not-the-password"}, "SECKILL_REDIS_USERNAME and SECKILL_REDIS_PASSWORD"},
		{"a wrong password from a file", []string{"SECKILL_REDIS_PASSWORD=", "SECKILL_REDIS_PASSWORD_FILE=" + wrongPassword}, "SECKILL_REDIS_USERNAME and SECKILL_REDIS_PASSWORD"},
		{"a password file missing", []string{"SECKILL_REDIS_PASSWORD=", "SECKILL_REDIS_PASSWORD_FILE=" + missing}, "SECKILL_REDIS_PASSWORD_FILE"},
		{"a password and its file", []string{"SECKILL_REDIS_PASSWORD_FILE=" + wrongPassword}, "SECKILL_REDIS_PASSWORD and SECKILL_REDIS_PASSWORD_FILE are both set"},
		{"no user and no password", []string{"SECKILL_REDIS_USERNAME=", "SECKILL_REDIS_PASSWORD="}, "SECKILL_REDIS_USERNAME and SECKILL_REDIS_PASSWORD"},
		{"TLS asked of a plaintext server", []string{"SECKILL_REDIS_ADDR=" + plain.Addr}, "SECKILL_REDIS_TLS is true but"},
		{"plaintext to a TLS server", []string{"SECKILL_REDIS_TLS=", "SECKILL_REDIS_TLS_CA_FILE=", "SECKILL_REDIS_TLS_CERT_FILE=",
			"SECKILL_REDIS_TLS_KEY_FILE="}, "SECKILL_REDIS_TLS:"},
		{"TLS files with TLS off", []string{"SECKILL_REDIS_TLS=false"}, "SECKILL_REDIS_TLS is not true"},
		{"Sentinels: a wrong Sentinel password", append(ss.Topology(), "SECKILL_REDIS_SENTINEL_PASSWORD=not-the-password"),
			"SECKILL_REDIS_SENTINEL_USERNAME and SECKILL_REDIS_SENTINEL_PASSWORD"},
		{"Sentinels: a wrong password of the master", append(ss.Topology(), "SECKILL_REDIS_PASSWORD=not-the-password"),
			"SECKILL_REDIS_USERNAME and SECKILL_REDIS_PASSWORD"},
		{"MySQL: a CA file missing", []string{"SECKILL_MYSQL_TLS_CA_FILE=" + missing}, "SECKILL_MYSQL_TLS_CA_FILE"},
		{"MySQL: a server without TLS", []string{"SECKILL_MYSQL_TLS_CA_FILE=" + mariaTLS.CAFile}, "SECKILL_MYSQL_TLS_CA_FILE is set but the MySQL server does not offer TLS"},
		{"MySQL: another authority", append(tlsDB.Env(), "SECKILL_MYSQL_TLS_CA_FILE="+other.CAFile), "SECKILL_MYSQL_TLS_CA_FILE"},
		{"MySQL: a user that requires TLS, without it", append(tlsDB.Env(), "SECKILL_MYSQL_TLS_CA_FILE="), "SECKILL_MYSQL_DSN"},
		{"MySQL: a DSN with its own tls= and a CA file", append(tlsDB.Env(), "SECKILL_MYSQL_DSN="+strings.TrimPrefix(tlsDB.Env()[0], "SECKILL_MYSQL_DSN=")+"&tls=true"),
			"SECKILL_MYSQL_TLS_CA_FILE is set and SECKILL_MYSQL_DSN has tls="},
	}
	api, worker := testutil.Binaries(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := append(append(append(plainDB.Env(), "SECKILL_JWT_SECRET="+testutil.JWTSecret, "SECKILL_HTTP_ADDR=127.0.0.1:0", "SECKILL_METRICS_ADDR=127.0.0.1:0",
				"SECKILL_WORKER_METRICS_ADDR=127.0.0.1:0"), redisEnv...), tc.env...)
			for _, bin := range []string{api, worker} {
				p := testutil.StartProcess(t, filepath.Base(bin), bin, env)
				line := refusal(t, p)
				t.Logf("%s: %s", filepath.Base(bin), line)
				if !strings.Contains(line, tc.want) {
					t.Errorf("%s refused the start with %q, want a line naming %s", filepath.Base(bin), line, tc.want)
				}
				if out := p.Output(); strings.Contains(out, sec.Password) || strings.Contains(out, "not-the-password") {
					t.Errorf("%s wrote a password to its log:\n%s", filepath.Base(bin), out)
				}
			}
		})
	}

	// The same settings, right, start both binaries: the table refuses what is wrong in
	// them, not everything. The server's DNS name works as well as its address.
	t.Run("right", func(t *testing.T) {
		for _, topo := range [][]string{redisEnv, append(redisEnv, "SECKILL_REDIS_TLS_SERVER_NAME="+testutil.ServerName), ss.Topology()} {
			s := testutil.StartStackOnTopology(t, tlsDB, topo, 1, 1)
			c := newClient(t, s.URL)
			a := c.createSale(testutil.Token(t, 1, true), 10, 1)
			if r := c.must("POST", fmt.Sprintf("/api/v1/activities/%d/orders", a.ID), testutil.Token(t, 7, false),
				map[string]int{"quantity": 1}); r.Status != http.StatusAccepted {
				t.Fatalf("a purchase: %d %s", r.Status, r.Body)
			}
			c.waitDrained(testutil.Token(t, 1, true), a.ID, time.Minute)
		}
	})
}

// refusal waits for a process that must refuse to start and returns the one line
// (other than INFO lines) it printed; more such lines, a zero exit or a process still
// running after refusalBound fail the test.
func refusal(t *testing.T, p *testutil.Process) string {
	t.Helper()
	deadline := time.Now().Add(refusalBound)
	for {
		exited, code := p.Exited()
		if exited {
			if code == 0 {
				t.Fatalf("exited 0, want a refusal:\n%s", p.Output())
			}
			break
		}
		if time.Now().After(deadline) {
			p.Signal(syscall.SIGKILL)
			t.Fatalf("still running after %v, want a refusal:\n%s", refusalBound, p.Output())
		}
		time.Sleep(20 * time.Millisecond)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(p.Output()), "\n") {
		if !strings.Contains(l, " INFO ") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 {
		t.Errorf("%d lines beside the INFO ones, want the one refusal:\n%s", len(lines), p.Output())
	}
	return strings.Join(lines, "\n")
}

// A whole run with every secret given as a file (the JWT secret, the MySQL DSN, the
// Redis and Sentinel passwords), on Sentinels and a MariaDB that want TLS: purchases,
// refusals, MySQL frozen, the Redis master killed, then SIGTERM. No line the API or the
// worker wrote, from start to exit, holds a secret.
func TestNoSecretInTheLogs(t *testing.T) {
	sec := testutil.NewRedisSecurity(t)
	ss := testutil.StartSentinel(t, testutil.SentinelOptions{Security: sec})
	mysqlPassword := "mysql-" + sec.Password[3:] // as random as the Redis ones, and its own
	maria := testutil.StartMariaDB(t, testutil.MariaDBOptions{TLS: testutil.NewTLSFiles(t), Password: mysqlPassword})
	db := maria.Database(t)
	dsn := strings.TrimPrefix(db.Env()[0], "SECKILL_MYSQL_DSN=")

	dir := t.TempDir()
	secrets := map[string]string{
		"SECKILL_JWT_SECRET":              testutil.JWTSecret,
		"SECKILL_MYSQL_DSN":               dsn,
		"SECKILL_REDIS_PASSWORD":          sec.Password,
		"SECKILL_REDIS_SENTINEL_PASSWORD": sec.SentinelPassword,
	}
	var env []string
	for name, value := range secrets {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(value+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		env = append(env, name+"=", name+"_FILE="+path) // the variable itself empty: unset
	}
	s := testutil.StartStackOnTopology(t, db, ss.Topology(), 1, 1, env...)
	c := newClient(t, s.URL)
	admin := testutil.Token(t, 1, true)
	a := c.createSale(admin, 100, 2)
	buy := func(user int64) response {
		return c.must("POST", fmt.Sprintf("/api/v1/activities/%d/orders", a.ID), testutil.Token(t, user, false), map[string]int{"quantity": 1})
	}
	if r := buy(7); r.Status != http.StatusAccepted {
		t.Fatalf("a purchase: %d %s", r.Status, r.Body)
	}
	if r := c.must("POST", fmt.Sprintf("/api/v1/activities/%d/orders", a.ID), "not-a-token", map[string]int{"quantity": 1}); r.Status != http.StatusUnauthorized {
		t.Errorf("a purchase with a forged token: %d, want 401", r.Status)
	}
	c.waitDrained(admin, a.ID, time.Minute)

	maria.Pause() // MySQL frozen: the routes that need it answer 503, the worker's jobs fail
	if r, err := c.do("GET", "/api/v1/admin/activities", admin, nil); err == nil {
		t.Logf("the sales listed with MySQL frozen: %d", r.Status)
	}
	// MySQL stays frozen 3 s while the service runs: the scenario under test.
	time.Sleep(3 * time.Second)
	maria.Resume()

	old := ss.Master(t)
	old.Kill() // the master gone: failed commands and a failover, logged
	ss.WaitFailover(t, old, 30*time.Second)
	waitAccepting(t, s.URLs, a.ID, 8, time.Now())

	for _, p := range []struct {
		name string
		*testutil.Process
	}{{"the API", s.API}, {"the worker", s.Worker}} {
		p.Signal(syscall.SIGTERM)
		out := p.Output()
		for name, value := range secrets {
			if strings.Contains(out, value) {
				t.Errorf("%s's log holds %s", p.name, name)
			}
		}
		if strings.Contains(out, mysqlPassword) {
			t.Errorf("%s's log holds the MySQL password", p.name)
		}
		for name := range secrets {
			if !strings.Contains(out, name+"=") || !strings.Contains(out, "(file "+filepath.Join(dir, name)+")") {
				t.Errorf("%s's start-up line does not say %s came from its file:\n%s", p.name, name, out)
			}
		}
	}
}
