package testutil

import (
	"context"
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
