package e2e

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"seckill/internal/testutil"
)

// What `make run-cluster` runs (scripts/cluster.sh up), on ports and a data folder of
// its own: it makes a 3+3 Redis Cluster, starts two APIs and two workers on it behind
// nginx and says so; a purchase through the front becomes an order in MySQL; SIGTERM
// (Ctrl-C's path too) stops the APIs, the workers and nginx, and `down` the nodes.
func TestRunClusterScript(t *testing.T) {
	api, worker := testutil.Binaries(t)
	db := testutil.MySQL(t)
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	for _, b := range []string{api, worker} {
		if err := os.Symlink(b, filepath.Join(bin, filepath.Base(b))); err != nil {
			t.Fatal(err)
		}
	}
	ports := func(n int) string {
		var ps []string
		for range n {
			ps = append(ps, strconv.Itoa(clusterPort(t)))
		}
		return strings.Join(ps, " ")
	}
	front := fmt.Sprintf("127.0.0.1:%d", clusterPort(t))
	data := t.TempDir()
	var env []string
	for _, v := range os.Environ() { // PATH, HOME and Go's own; no setting of the service's
		if !strings.HasPrefix(v, "SECKILL_") {
			env = append(env, v)
		}
	}
	env = append(env, append(db.Env(),
		"SECKILL_JWT_SECRET="+testutil.JWTSecret,
		"SECKILL_CLUSTER_DATA="+data,
		"SECKILL_BIN_DIR="+bin,
		"SECKILL_CLUSTER_PORTS="+ports(6),
		"SECKILL_API_PORTS="+ports(2),
		"SECKILL_API_METRICS_PORTS="+ports(2),
		"SECKILL_WORKER_METRICS_PORTS="+ports(2),
		"SECKILL_FRONT_ADDR="+front)...)
	script := func(arg string) *exec.Cmd {
		cmd := exec.Command(filepath.Join(root, "scripts", "cluster.sh"), arg)
		cmd.Env = env
		return cmd
	}
	t.Cleanup(func() { // the nodes stay after up: down stops them, as `make stop` does
		if out, err := script("down").CombinedOutput(); err != nil {
			t.Errorf("cluster.sh down: %v\n%s", err, out)
		}
	})

	up := script("up")
	var out testutil.SyncBuffer
	up.Stdout, up.Stderr = &out, &out
	t.Cleanup(func() { // after the run stopped (cleanups run last first): what it said, and its processes' logs
		if !t.Failed() {
			return
		}
		t.Logf("cluster.sh up said:\n%s", out.String())
		logs, _ := filepath.Glob(filepath.Join(data, "run", "*.log"))
		for _, l := range append(logs, filepath.Join(data, "nginx", "error.log")) {
			if b, err := os.ReadFile(l); err == nil {
				t.Logf("--- %s ---\n%s", filepath.Base(l), b[max(0, len(b)-4000):])
			}
		}
	})
	if err := up.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- up.Wait() }()
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = up.Process.Signal(syscall.SIGTERM)
			<-exited
		}
	})
	deadline := time.After(3 * time.Minute)
	for !strings.Contains(out.String(), "Flash sale running at http://"+front) {
		select {
		case err := <-exited:
			stopped = true
			t.Fatalf("cluster.sh up stopped before it said it runs: %v\n%s", err, out.String())
		case <-deadline:
			t.Fatalf("cluster.sh up did not say it runs in 3 minutes:\n%s", out.String())
		case <-time.After(200 * time.Millisecond):
		}
	}

	c := newClient(t, "http://"+front)
	admin := testutil.Token(t, 1, true)
	sale := c.createSale(admin, 10, 2)
	r := c.must("POST", fmt.Sprintf("/api/v1/activities/%d/orders", sale.ID), testutil.Token(t, 42, false),
		map[string]any{"quantity": 2}, "Idempotency-Key", "run-cluster")
	if r.Status != http.StatusAccepted {
		t.Fatalf("a purchase through the front: %d %s", r.Status, r.Body)
	}
	if st := c.waitDrained(admin, sale.ID, 30*time.Second); st.Orders.Created != 1 || st.Sold != 2 {
		t.Errorf("after one purchase of 2 units: %d orders created, %d units sold; want 1 and 2", st.Orders.Created, st.Sold)
	}

	if err := up.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		stopped = true
	case <-time.After(30 * time.Second):
		t.Fatalf("cluster.sh up still runs 30 s after SIGTERM:\n%s", out.String())
	}
	for _, stop := range []string{"stopping run/api1", "stopping run/api2", "stopping run/worker1", "stopping run/worker2", "stopping nginx/nginx"} {
		if !strings.Contains(out.String(), stop) {
			t.Errorf("after SIGTERM, cluster.sh up did not say %q:\n%s", stop, out.String())
		}
	}
	if conn, err := net.DialTimeout("tcp", front, time.Second); err == nil {
		conn.Close()
		t.Errorf("the front %s still answers after the run stopped", front)
	}
}

// clusterPort is a free port below the range the kernel hands out to outgoing
// connections and to other tests' listeners (32768 and up on Linux), with its cluster
// bus port (the port + 10000) free and below it too: a port of that range, free when
// picked, can be taken by any connection before the process it is given to listens,
// and the script stops the whole run when one of its processes cannot.
func clusterPort(t *testing.T) int {
	t.Helper()
	for range 1000 {
		p := 10000 + rand.IntN(12000)
		if taken[p] || taken[p+10000] {
			continue
		}
		if free(p) && free(p+10000) {
			taken[p], taken[p+10000] = true, true
			return p
		}
	}
	t.Fatal("no free port between 10000 and 22000")
	return 0
}

// taken are the ports clusterPort gave (the test runs alone: no lock).
var taken = map[int]bool{}

// free reports whether nothing listens on a loopback port.
func free(p int) bool {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
	if err != nil {
		return false
	}
	l.Close()
	return true
}
