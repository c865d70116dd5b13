package e2e

import (
	"path/filepath"
	"strings"
	"testing"

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
	base := append(append(db.Env(), "SECKILL_JWT_SECRET="+testutil.JWTSecret, "SECKILL_HTTP_ADDR=127.0.0.1:0",
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
