package testutil

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Front is what a test's nginx lets through: RateIP requests per second per address
// (bursts of twice that more) and InFlight purchases and seats at once (at most 65535).
type Front struct {
	RateIP, InFlight int
}

// NoLimits is a Front no test's crowd reaches: the tests' crowds come from one address.
var NoLimits = Front{RateIP: 1_000_000, InFlight: 65535}

// StartNginx runs a private nginx in front of backends (host:port of API instances)
// with the project's own front, deploy/nginx/seckill.conf.template, and the limits of
// front. It returns the front's base URL and fails the test when nginx is missing.
func StartNginx(t testing.TB, backends []string, front Front) string {
	t.Helper()
	bin, err := exec.LookPath("nginx")
	if err != nil { // Debian's is in /usr/sbin, which a user's PATH may lack
		bin, err = exec.LookPath("/usr/sbin/nginx")
	}
	if err != nil {
		t.Fatalf("nginx not found in PATH (make test installs it): %v", err)
	}
	dir := t.TempDir()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t)))
	var upstream strings.Builder
	for _, b := range backends {
		fmt.Fprintf(&upstream, "server %s; ", b)
	}
	_, file, _, _ := runtime.Caller(0)
	template, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "deploy", "nginx", "seckill.conf.template"))
	if err != nil {
		t.Fatal(err)
	}
	site := strings.NewReplacer("${SECKILL_NGINX_LISTEN}", addr, "${SECKILL_NGINX_UPSTREAM}", upstream.String(),
		"${SECKILL_NGINX_RATE_IP}", strconv.Itoa(front.RateIP), "${SECKILL_NGINX_BURST_IP}", strconv.Itoa(2*front.RateIP),
		"${SECKILL_NGINX_PURCHASES_IN_FLIGHT}", strconv.Itoa(front.InFlight)).Replace(string(template))
	if i := strings.Index(site, "${SECKILL_"); i >= 0 {
		t.Fatalf("the front's template has a variable StartNginx does not set: %.40s", site[i:])
	}
	if err := os.WriteFile(filepath.Join(dir, "seckill.conf"), []byte(site), 0o644); err != nil {
		t.Fatal(err)
	}
	conf := fmt.Sprintf(`worker_processes 1;
daemon off;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path %[1]s/body;
  proxy_temp_path %[1]s/proxy;
  fastcgi_temp_path %[1]s/fastcgi;
  uwsgi_temp_path %[1]s/uwsgi;
  scgi_temp_path %[1]s/scgi;
  include %[1]s/seckill.conf;
}
`, dir)
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	p := StartProcess(t, "nginx", bin, nil, "-p", dir, "-c", path, "-e", filepath.Join(dir, "error.log"))
	// SIGTERM, before StartProcess's SIGKILL: the master stops its worker, which a
	// SIGKILL of the master would leave running.
	t.Cleanup(func() { p.Signal(syscall.SIGTERM) })
	for i := 0; ; i++ {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return "http://" + addr
		}
		if exited, code := p.Exited(); exited || i == 100 {
			log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			t.Fatalf("nginx did not start (exited %v, code %d):\n%s%s", exited, code, p.Output(), log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
