package testutil

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// MariaDBServer is a mariadbd process owned by one test, for tests that stop or freeze
// the database; other tests share the server of SECKILL_MYSQL_DSN.
type MariaDBServer struct {
	t      testing.TB
	dir    string
	socket string
	// DSN reaches the server as a user who may create databases; pass it to MySQLOn.
	// With MariaDBOptions.TLS it names a TLS configuration of this package (tls=...),
	// and the user connects over TLS alone (REQUIRE SSL).
	DSN string
	// TLS is MariaDBOptions.TLS: the server's certificate and the authority that signed it.
	TLS *TLSFiles

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
	args []string
}

// MariaDBOptions shape a private MariaDB server.
type MariaDBOptions struct {
	// TLS, when set, gives the server this certificate (TLSFiles.CertFile, for 127.0.0.1)
	// and makes the DSN's user REQUIRE SSL.
	TLS *TLSFiles
	// Password is the DSN's user's password ["seckill"].
	Password string
}

// StartMariaDB initialises a data directory in a temporary folder and starts mariadbd
// on a free port. It fails the test when mariadbd is not installed. At most one
// MariaDBOptions; none is the zero value.
func StartMariaDB(t testing.TB, opts ...MariaDBOptions) *MariaDBServer {
	t.Helper()
	var o MariaDBOptions
	if len(opts) > 1 {
		t.Fatalf("StartMariaDB takes one MariaDBOptions at most, got %d", len(opts))
	}
	if len(opts) == 1 {
		o = opts[0]
	}
	if o.Password == "" {
		o.Password = "seckill"
	}
	for _, bin := range []string{"mariadbd", "mariadb-install-db", "mariadb"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("%s not found in PATH (make test installs MariaDB): %v", bin, err)
		}
	}
	dir, err := os.MkdirTemp("", "seckill-mariadb-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	me, _ := user.Current()
	// A private tmpdir: bootstraps running side by side in one /tmp have clashed on
	// their temporary tables' names ("Could not remove temporary table").
	tmp := filepath.Join(dir, "tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	install := exec.Command("mariadb-install-db", "--no-defaults", "--datadir="+filepath.Join(dir, "db"),
		"--tmpdir="+tmp, "--user="+me.Username, "--auth-root-authentication-method=socket", "--skip-test-db")
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("mariadb-install-db: %v\n%s", err, out)
	}
	port := freePort(t)
	s := &MariaDBServer{t: t, dir: dir, socket: filepath.Join(dir, "mysqld.sock")}
	s.args = []string{"--no-defaults", "--datadir=" + filepath.Join(dir, "db"), "--socket=" + s.socket,
		"--port=" + strconv.Itoa(port), "--bind-address=127.0.0.1", "--user=" + me.Username, "--tmpdir=" + tmp,
		"--log-error=" + filepath.Join(dir, "error.log"), "--innodb-buffer-pool-size=64M",
		"--skip-log-bin", "--max-connections=300"}
	require := ""
	if o.TLS != nil {
		s.TLS = o.TLS
		s.args = append(s.args, "--ssl-ca="+o.TLS.CAFile, "--ssl-cert="+o.TLS.CertFile, "--ssl-key="+o.TLS.KeyFile)
		require = " REQUIRE SSL"
	}
	s.Start()
	t.Cleanup(func() { s.signal(syscall.SIGCONT); s.signal(syscall.SIGKILL) })
	sql := "CREATE USER 'seckill'@'%' IDENTIFIED BY '" + o.Password + "'" + require + "; GRANT ALL ON *.* TO 'seckill'@'%'; FLUSH PRIVILEGES;"
	if out, err := exec.Command("mariadb", "--socket="+s.socket, "-uroot", "-e", sql).CombinedOutput(); err != nil {
		t.Fatalf("create user: %v\n%s", err, out)
	}
	s.DSN = fmt.Sprintf("seckill:%s@tcp(%s)/seckill?parseTime=true", o.Password, net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if o.TLS != nil {
		if v := s.Variable("have_ssl"); v != "YES" {
			t.Fatalf("mariadbd with a certificate says have_ssl=%s, want YES (is it built with TLS?)", v)
		}
		s.DSN += "&tls=" + registerTLS(t, o.TLS)
	}
	return s
}

// Variable returns one of the server's variables (SHOW VARIABLES), as root through the
// socket.
func (s *MariaDBServer) Variable(name string) string {
	s.t.Helper()
	out, err := exec.Command("mariadb", "--socket="+s.socket, "-uroot", "-N", "-B", "-e", "SHOW VARIABLES LIKE '"+name+"'").CombinedOutput()
	if err != nil {
		s.t.Fatalf("SHOW VARIABLES: %v\n%s", err, out)
	}
	_, v, _ := strings.Cut(strings.TrimSpace(string(out)), "\t")
	return v
}

// registerTLS registers the files' client configuration with the MySQL driver, for the
// tests' own connections, and returns its name. The service is given the authority's
// file instead (SECKILL_MYSQL_TLS_CA_FILE; MySQLDB.TLSCAFile).
func registerTLS(t testing.TB, f *TLSFiles) string {
	name := "testutil-" + filepath.Base(filepath.Dir(f.CAFile))
	if err := mysql.RegisterTLSConfig(name, f.ClientConfig()); err != nil {
		t.Fatalf("register a TLS configuration: %v", err)
	}
	return name
}

// Start starts mariadbd and waits until it accepts connections.
func (s *MariaDBServer) Start() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	cmd := exec.Command("mariadbd", s.args...)
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("start mariadbd: %v", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	s.cmd, s.done = cmd, done
	for i := 0; i < 300; i++ {
		if c, err := net.Dial("unix", s.socket); err == nil {
			c.Close()
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	log, _ := os.ReadFile(filepath.Join(s.dir, "error.log"))
	s.t.Fatalf("mariadbd did not start:\n%s", log)
}

// Stop shuts the server down (SIGTERM) and waits until it has exited: connections are
// refused until Start.
func (s *MariaDBServer) Stop() {
	s.t.Helper()
	s.mu.Lock()
	done := s.done
	s.mu.Unlock()
	s.signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(time.Minute):
		s.t.Fatal("mariadbd still running a minute after SIGTERM")
	}
}

// PID is the running server's process id, for readings of its CPU time (/proc).
func (s *MariaDBServer) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd.Process.Pid
}

// Pause freezes the server with SIGSTOP: connections stay open, nothing answers.
func (s *MariaDBServer) Pause() { s.signal(syscall.SIGSTOP) }

// Resume continues a paused server.
func (s *MariaDBServer) Resume() { s.signal(syscall.SIGCONT) }

func (s *MariaDBServer) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		_ = s.cmd.Process.Signal(sig)
	}
}
