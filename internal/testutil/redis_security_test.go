package testutil

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// A locked-down server speaks TLS alone, wants a client certificate, has no default
// user, and lets the service's user do what config.RedisACL allows and nothing else;
// what it refused is in its ACL LOG.
func TestSecureRedisServer(t *testing.T) {
	sec := NewRedisSecurity(t)
	s := StartRedisWith(t, sec)
	ctx := context.Background()
	try := func(o *redis.Options, args ...any) error {
		o.Addr, o.DialTimeout, o.ReadTimeout, o.MaxRetries, o.DialerRetries = s.Addr, time.Second, time.Second, -1, 1
		c := redis.NewClient(o)
		defer c.Close()
		return c.Do(ctx, args...).Err()
	}
	service := func() *redis.Options {
		return &redis.Options{Username: sec.User, Password: sec.Password, TLSConfig: sec.TLS.ClientConfig(), DisableIdentity: true}
	}
	noCert := service()
	noCert.TLSConfig.Certificates = nil
	tests := []struct {
		name    string
		opts    *redis.Options
		args    []any
		wantErr string // part of the error, "" for none
	}{
		{"the service's user sets its key", service(), []any{"SET", "seckill:{act:1}:x", "1"}, ""},
		{"and asynq's", service(), []any{"LPUSH", "asynq:{orders}:pending", "t"}, ""},
		{"a key of no one", service(), []any{"SET", "other:x", "1"}, "NOPERM"},
		{"CONFIG", service(), []any{"CONFIG", "GET", "maxmemory"}, "NOPERM"},
		{"KEYS", service(), []any{"KEYS", "*"}, "NOPERM"},
		{"FLUSHALL", service(), []any{"FLUSHALL"}, "NOPERM"},
		{"a channel of no one", service(), []any{"PUBLISH", "other", "x"}, "NOPERM"},
		{"a wrong password", &redis.Options{Username: sec.User, Password: "wrong", TLSConfig: sec.TLS.ClientConfig()}, []any{"PING"}, "WRONGPASS"},
		{"the default user", &redis.Options{TLSConfig: sec.TLS.ClientConfig()}, []any{"PING"}, "NOAUTH"},
		{"no client certificate", noCert, []any{"PING"}, ""}, // checked below: any error
		{"plaintext", &redis.Options{Username: sec.User, Password: sec.Password}, []any{"PING"}, ""},
	}
	for _, tc := range tests {
		err := try(tc.opts, tc.args...)
		switch {
		case tc.name == "no client certificate" || tc.name == "plaintext":
			if err == nil {
				t.Errorf("%s: PING answered, want the connection refused", tc.name)
			}
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: %v, want %s", tc.name, err, tc.wantErr)
		}
	}
	log := strings.Join(s.ACLLog(t), "\n")
	for _, want := range []string{"other:x", "config|get", "keys", "flushall", "other", "auth"} {
		if !strings.Contains(log, want) {
			t.Errorf("ACL LOG lacks %q:\n%s", want, log)
		}
	}
	if err := s.do("ACL", "LOG", "RESET").Err(); err != nil { // what was refused here was meant
		t.Fatal(err)
	}
}

// A locked-down server started again from its AOF keeps what Lua scripts wrote: its
// default user, as whom Redis replays the AOF, has every right (RedisSecurity says why).
func TestSecureRedisKeepsScriptsAcrossARestart(t *testing.T) {
	sec := NewRedisSecurity(t)
	s := StartRedisWith(t, sec, "--appendonly", "yes", "--appendfsync", "always")
	ctx := context.Background()
	c := s.Client(t)
	script := redis.NewScript(`redis.call("SET", KEYS[1], "1"); redis.call("SET", KEYS[2], "2"); return 1`)
	if err := script.Run(ctx, c, []string{"seckill:{a}:x", "seckill:{a}:y"}).Err(); err != nil {
		t.Fatal(err)
	}
	s.Kill()
	s.Start()
	if n, err := s.Client(t).Exists(ctx, "seckill:{a}:x", "seckill:{a}:y").Result(); err != nil || n != 2 {
		t.Errorf("after a restart from the AOF: %d of the script's 2 keys (%v)", n, err)
	}
}
