package testutil

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestSentinelFailover: the master is killed with SIGKILL; the Sentinels promote the
// replica, which has the key written with WAIT 1; the old master, started again, is
// made its replica.
func TestSentinelFailover(t *testing.T) {
	start := time.Now()
	ss := StartSentinel(t, SentinelOptions{MasterName: "sale"})
	t.Logf("sentinel set started in %v", time.Since(start).Round(time.Millisecond))
	ctx := context.Background()
	if got := strings.Join(ss.Topology(), " "); got != "SECKILL_REDIS_ADDR="+strings.Join(ss.SentinelAddrs(), ",")+" SECKILL_REDIS_MASTER_NAME=sale" {
		t.Errorf("Topology() = %s", got)
	}
	old, replica := ss.Master(t), ss.Replica(t)
	if old == replica {
		t.Fatal("Master and Replica name the same server")
	}
	conn := old.Client(t).Conn()
	defer conn.Close()
	if err := conn.Set(ctx, "k", "kept", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := conn.Wait(ctx, 1, 5*time.Second).Result(); err != nil || n != 1 {
		t.Fatalf("WAIT 1: %d, %v", n, err)
	}

	old.Kill()
	killed := time.Now()
	m := ss.WaitFailover(t, old, 30*time.Second)
	t.Logf("master killed; the Sentinels promoted the replica %v later", time.Since(killed).Round(time.Millisecond))
	if m != replica {
		t.Fatalf("the Sentinels name %s, want the replica %s", m.Addr, replica.Addr)
	}
	if v, err := m.Client(t).Get(ctx, "k").Result(); err != nil || v != "kept" {
		t.Fatalf("on the new master: %q, %v", v, err)
	}

	// A Sentinel turns a restarted old master into a replica only once it has read the
	// server's INFO (every 10 s for a replica), seen it report master for 8 s (4
	// publish periods) without being down, and read INFO again: up to ~28 s on an idle
	// machine, more on a busy one (30 s was once too short under the whole suite).
	old.Start()
	restarted := time.Now()
	waitFor(t, 90*time.Second, "the old master made the new one's replica", func() bool {
		repl := old.info("replication")
		return infoField(repl, "role") == "slave" && infoField(repl, "master_link_status") == "up" &&
			infoField(repl, "master_port") == m.Addr[strings.LastIndex(m.Addr, ":")+1:]
	})
	t.Logf("the old master was a linked replica %v after its restart", time.Since(restarted).Round(time.Millisecond))
	if r := ss.Replica(t); r != old {
		t.Errorf("Replica() = %s, want the old master %s", r.Addr, old.Addr)
	}
}
