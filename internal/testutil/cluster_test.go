package testutil

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

func TestClusterSlotsAndMigration(t *testing.T) {
	c := StartCluster(t, ClusterOptions{})
	ctx := context.Background()
	if n := len(c.Masters()); n != 3 {
		t.Fatalf("%d masters, want 3", n)
	}
	rdb := c.Client(t)
	for _, key := range []string{"a", "seckill:{act:1}:sale", "seckill:{act:42}:users", "{}x", "{user1000}.following"} {
		want, err := rdb.ClusterKeySlot(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got := SlotOf(key); int64(got) != want {
			t.Errorf("SlotOf(%q) = %d, CLUSTER KEYSLOT says %d", key, got, want)
		}
	}
	const key = "seckill:{act:7}:sale"
	for i := range 50 {
		if err := rdb.HSet(ctx, fmt.Sprintf("seckill:{act:7}:k%d", i), "v", i).Err(); err != nil {
			t.Fatal(err)
		}
	}
	from := c.MasterOf(key)
	var to *RedisServer
	for _, m := range c.Masters() {
		if m != from {
			to = m
			break
		}
	}
	c.MigrateSlot(t, SlotOf(key), to)
	if got := c.MasterOf(key); got != to {
		t.Fatalf("after the migration %s serves the slot, want %s", got.Addr, to.Addr)
	}
	for i := range 50 {
		if v, err := rdb.HGet(ctx, fmt.Sprintf("seckill:{act:7}:k%d", i), "v").Int(); err != nil || v != i {
			t.Fatalf("key %d after the migration: %d, %v", i, v, err)
		}
	}
}

func TestNginxSpreadsOverBackends(t *testing.T) {
	var backends []string
	for i := range 2 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "%d %s", i, r.Header.Get("X-Forwarded-For"))
		})}
		go srv.Serve(ln)
		t.Cleanup(func() { srv.Close() })
		backends = append(backends, ln.Addr().String())
	}
	url := StartNginx(t, backends)
	seen := map[string]int{}
	for range 10 {
		resp, err := http.Get(url + "/x")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		backend, xff, _ := strings.Cut(string(body), " ")
		if xff != "127.0.0.1" {
			t.Errorf("X-Forwarded-For = %q, want the client's 127.0.0.1", xff)
		}
		seen[backend]++
	}
	if seen["0"] == 0 || seen["1"] == 0 {
		t.Errorf("requests per backend %v, want both used", seen)
	}
}

func TestSentinelFailover(t *testing.T) {
	ss := StartSentinel(t)
	old := ss.Master(t)
	old.Kill()
	m := ss.WaitFailover(t, old, 30e9)
	if m == old {
		t.Fatal("the killed master is still named")
	}
}
