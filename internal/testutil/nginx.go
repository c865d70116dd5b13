package testutil

import (
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
// (bursts of twice that more) and InFlight purchases and seats at once per address (at
// most 65535).
// CORSOrigins is the APIs' SECKILL_CORS_ORIGINS, for the front's own refusals;
// RealIPFrom is SECKILL_NGINX_REAL_IP_FROM, the balancer whose X-Forwarded-For nginx
// believes ("": none).
type Front struct {
	RateIP, InFlight int
	CORSOrigins      string
	RealIPFrom       string
}

// NoLimits is a Front no test's crowd reaches: the tests' crowds come from one address.
var NoLimits = Front{RateIP: 1_000_000, InFlight: 65535}

// StartNginx runs a private nginx in front of backends (host:port of API instances)
// with the project's own front, deploy/nginx/seckill.conf.template, and the limits of
// front. It returns the front's base URL and fails the test when nginx is missing.
func StartNginx(t testing.TB, backends []string, front Front) string {
	t.Helper()
	return startNginx(t, backends, front, nil).URL
}

// Nginx is a test's private nginx: its base URL, and the file of its error log (each
// backend that failed a request, and why).
type Nginx struct {
	URL, ErrorLog string
}

// StartNginxLogged is StartNginx for a test that reads nginx's error log.
func StartNginxLogged(t testing.TB, backends []string, front Front) Nginx {
	t.Helper()
	return startNginx(t, backends, front, nil)
}

// StartNginxSite runs a private nginx with site (an http-level configuration, given the
// host:port to listen on) in place of the project's front: a configuration the docs
// show. It returns its base URL.
func StartNginxSite(t testing.TB, site func(listen string) string) string {
	t.Helper()
	return startNginx(t, []string{"127.0.0.1:1"}, NoLimits, site).URL
}

// startNginx renders the front with deploy/nginx/render.sh, the script
// scripts/cluster.sh and loadtest/run.sh use, so the tests run the configuration they
// ship; site, when not nil, replaces the front (render.sh's main configuration, with
// the pid, logs and temporary files in a private directory, stays). It runs nginx
// until the end of the test.
func startNginx(t testing.TB, backends []string, front Front, site func(listen string) string) Nginx {
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
	_, file, _, _ := runtime.Caller(0)
	render := filepath.Join(filepath.Dir(file), "..", "..", "deploy", "nginx", "render.sh")
	args := append([]string{dir, addr, strconv.Itoa(front.RateIP), strconv.Itoa(front.InFlight), "off"}, backends...)
	cmd := exec.Command(render, args...)
	cmd.Env = append(os.Environ(), "SECKILL_CORS_ORIGINS="+front.CORSOrigins, "SECKILL_NGINX_REAL_IP_FROM="+front.RealIPFrom)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("render the front: %v\n%s", err, out)
	}
	conf := filepath.Join(dir, "seckill.conf")
	if site != nil {
		if err := os.WriteFile(conf, []byte(site(addr)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	text, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	if i := strings.Index(string(text), "${SECKILL_"); i >= 0 {
		t.Fatalf("the front's template has a variable render.sh does not set: %.40s", text[i:])
	}
	path := filepath.Join(dir, "nginx.conf")
	p := StartProcess(t, "nginx", bin, nil, "-p", dir, "-c", path, "-e", filepath.Join(dir, "error.log"), "-g", "daemon off;")
	// SIGTERM, before StartProcess's SIGKILL: the master stops its worker, which a
	// SIGKILL of the master would leave running.
	t.Cleanup(func() { p.Signal(syscall.SIGTERM) })
	for i := 0; ; i++ {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return Nginx{URL: "http://" + addr, ErrorLog: filepath.Join(dir, "error.log")}
		}
		if exited, code := p.Exited(); exited || i == 100 {
			log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			t.Fatalf("nginx did not start (exited %v, code %d):\n%s%s", exited, code, p.Output(), log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
