package config

import (
	"strings"
	"testing"

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
			for _, k := range []string{"SECKILL_REDIS_ADDR", "SECKILL_REDIS_CLUSTER", "SECKILL_REDIS_MASTER_NAME",
				"SECKILL_REDIS_MIN_REPLICAS", "SECKILL_TRUSTED_PROXIES"} {
				t.Setenv(k, tc.env[k])
			}
			c, err := Load()
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one naming %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
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
