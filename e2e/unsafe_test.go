package e2e

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"seckill/internal/config"
	"seckill/internal/testutil"
)

// Settings that would let anyone in, or lose what the API acknowledged, refuse the start
// outside dev mode, of both binaries where both read them: one line naming the variable,
// a non-zero exit. Each is a setting a shop could ship by mistake.
func TestUnsafeSettingsRefuseTheStart(t *testing.T) {
	db := testutil.MySQL(t)
	redis := testutil.StartRedis(t, "--appendonly", "yes")
	api, worker := testutil.Binaries(t)
	base := append(append(db.Env(), "SECKILL_JWT_SECRET="+testutil.JWTSecret, "SECKILL_HTTP_ADDR=127.0.0.1:0", "SECKILL_METRICS_ADDR=127.0.0.1:0",
		"SECKILL_WORKER_METRICS_ADDR=127.0.0.1:0"), redis.Topology()...)
	idp := []string{"SECKILL_JWT_JWKS_URL=https://idp.example/.well-known/jwks.json",
		"SECKILL_JWT_ISSUER=https://idp.example", "SECKILL_JWT_AUDIENCE=seckill"}
	for _, tc := range []struct {
		name string
		env  []string
		want string // the variable the one line names
		bins []string
	}{
		{"the public dev secret", []string{"SECKILL_JWT_SECRET=" + config.DevJWTSecret}, "SECKILL_JWT_SECRET is the public development secret",
			[]string{api, worker}},
		{"a JWKS over plain http", append(idp, "SECKILL_JWT_JWKS_URL=http://idp.example/jwks"), "SECKILL_JWT_JWKS_URL", []string{api, worker}},
		{"a JWKS over plain http to a name of this machine's", append(idp, "SECKILL_JWT_JWKS_URL=http://localhost.idp.example/jwks"), "SECKILL_JWT_JWKS_URL",
			[]string{api, worker}},
		{"a JWKS without issuer", append(idp, "SECKILL_JWT_ISSUER="), "SECKILL_JWT_ISSUER", []string{api, worker}},
		{"a JWKS without audience", append(idp, "SECKILL_JWT_AUDIENCE="), "SECKILL_JWT_AUDIENCE", []string{api, worker}},
		{"a leeway over 5m", []string{"SECKILL_JWT_LEEWAY=6m"}, "SECKILL_JWT_LEEWAY", []string{api, worker}},
		{"a negative leeway", []string{"SECKILL_JWT_LEEWAY=-1s"}, "SECKILL_JWT_LEEWAY", []string{api, worker}},
		{"no body timeout", []string{"SECKILL_BODY_TIMEOUT=0s"}, "SECKILL_BODY_TIMEOUT", []string{api, worker}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := append(append([]string{}, base...), tc.env...)
			for _, bin := range tc.bins {
				p := testutil.StartProcess(t, filepath.Base(bin), bin, env)
				line := refusal(t, p)
				if !strings.Contains(line, tc.want) {
					t.Errorf("%s refused the start with %q, want a line naming %s", filepath.Base(bin), line, tc.want)
				}
			}
		})
	}
}

// The API starts only on a Redis that keeps a 202 through a crash: AOF on every master it
// talks to (one server, each master of a Cluster), or SECKILL_REDIS_MIN_REPLICAS >= 1.
// SECKILL_REDIS_DURABILITY=none starts anyway and says so in the log and on /readyz. A
// Redis that does not answer at start is judged once it does.
func TestRedisDurabilityAtStart(t *testing.T) {
	db := testutil.MySQL(t)
	api, _ := testutil.Binaries(t)
	base := append(db.Env(), "SECKILL_JWT_SECRET="+testutil.JWTSecret)
	noAOF := testutil.StartRedis(t) // appendonly no
	cluster := testutil.StartCluster(t, testutil.ClusterOptions{ReplicasPerMaster: -1})
	cluster.Masters()[1].Client(t).ConfigSet(t.Context(), "appendonly", "no")

	t.Run("refused", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			env  []string
			want string
		}{
			{"one server without AOF", noAOF.Topology(), "SECKILL_REDIS_DURABILITY: the Redis master " + noAOF.Addr},
			{"a Cluster with one master without AOF", cluster.Topology(), "SECKILL_REDIS_DURABILITY: the Redis master " + cluster.Masters()[1].Addr},
		} {
			t.Run(tc.name, func(t *testing.T) {
				p := testutil.StartProcess(t, "api", api, append(append(append([]string{}, base...), "SECKILL_HTTP_ADDR=127.0.0.1:0", "SECKILL_METRICS_ADDR=127.0.0.1:0"), tc.env...))
				if line := refusal(t, p); !strings.Contains(line, tc.want) {
					t.Errorf("refused the start with %q, want a line with %q", line, tc.want)
				}
			})
		}
	})

	t.Run("started", func(t *testing.T) {
		for _, tc := range []struct {
			name    string
			env     []string
			durable string // the /readyz body's field
			log     string // a line the log must hold
		}{
			{"SECKILL_REDIS_DURABILITY=none", append(noAOF.Topology(), "SECKILL_REDIS_DURABILITY=none"), `"durable":false`,
				"a Redis crash can lose acknowledged orders"},
			{"dev mode", append(noAOF.Topology(), "SECKILL_ENV=dev"), `"durable":false`, "dev mode: starting anyway"},
			{"AOF on", testutil.StartRedis(t, "--appendonly", "yes").Topology(), `"durable":true`, ""},
		} {
			t.Run(tc.name, func(t *testing.T) {
				s := testutil.StartStackOnTopology(t, db, testutil.Topology(tc.env), 1, 0)
				r := newClient(t, s.URL).must("GET", "/readyz", "", nil)
				if r.Status != http.StatusOK || !strings.Contains(string(r.Body), tc.durable) {
					t.Errorf("/readyz: %d %s, want 200 with %s", r.Status, r.Body, tc.durable)
				}
				if !strings.Contains(s.API.Output(), tc.log) {
					t.Errorf("the log does not say %q:\n%s", tc.log, s.API.Output())
				}
			})
		}
	})

	t.Run("judged once Redis answers", func(t *testing.T) {
		late := testutil.StartRedis(t)
		late.Kill()
		p := testutil.StartProcess(t, "api", api, append(append(append([]string{}, base...), "SECKILL_HTTP_ADDR=127.0.0.1:0", "SECKILL_METRICS_ADDR=127.0.0.1:0"), late.Topology()...))
		waitUntil(t, "the API to say it waits for Redis", 30*time.Second, func() bool {
			return strings.Contains(p.Output(), "its durability is checked once it answers")
		})
		late.Start()
		if !p.WaitExit(refusalBound) {
			t.Fatalf("still running %v after Redis answered without AOF:\n%s", refusalBound, p.Output())
		}
		out := strings.TrimSpace(p.Output())
		last := out[strings.LastIndexByte(out, '\n')+1:]
		if _, code := p.Exited(); code == 0 || !strings.HasPrefix(last, "api: ") || !strings.Contains(last, "SECKILL_REDIS_DURABILITY") {
			t.Errorf("exited %d with the last line %q, want non-zero and a line naming SECKILL_REDIS_DURABILITY", code, last)
		}
	})
}
