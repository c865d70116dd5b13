package testutil

import (
	"context"
	"strings"
	"testing"
)

func TestRedisServerSurvivesRestartWithAOF(t *testing.T) {
	s := StartRedis(t, "--appendonly", "yes", "--appendfsync", "always")
	ctx := context.Background()
	c := s.Client(t)
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("set: %v", err)
	}
	s.Kill()
	if err := c.Get(ctx, "k").Err(); err == nil {
		t.Fatalf("get from a killed server succeeded")
	}
	s.Start()
	got, err := c.Get(ctx, "k").Result()
	if err != nil || got != "v" {
		t.Fatalf("after restart got %q, %v; want v", got, err)
	}
}

// A server restarted on a port another test's server took meanwhile does not take that
// server for itself: its start fails and says so (once, a Sentinel test waited 90 s for a
// restarted master that may have been someone else's server).
func TestRedisServerStartRefusesAPortTaken(t *testing.T) {
	other := StartRedis(t)
	s := StartRedis(t)
	s.Kill()
	s.Addr = other.Addr
	for i, a := range s.args {
		if a == "--port" {
			s.args[i+1] = other.Addr[strings.LastIndex(other.Addr, ":")+1:]
		}
	}
	err := s.start()
	if err == nil || !strings.Contains(err.Error(), "another process") {
		t.Fatalf("start on a port another redis-server holds: %v; want an error naming another process", err)
	}
	if err := other.Client(t).Ping(context.Background()).Err(); err != nil {
		t.Fatalf("the other server after the refused start: %v", err)
	}
}
