package testutil

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// MariaDBServer is a mariadbd process owned by one test, for tests that stop or freeze
// the database; other tests share the server of SECKILL_MYSQL_DSN.
type MariaDBServer struct {
	t      testing.TB
	dir    string
	socket string
	// DSN reaches the server as a user who may create databases; pass it to MySQLOn.
	DSN string

	mu   sync.Mutex
	cmd  *exec.Cmd
	args []string
}

// StartMariaDB initialises a data directory in a temporary folder and starts mariadbd
// on a free port. It fails the test when mariadbd is not installed.
func StartMariaDB(t testing.TB) *MariaDBServer {
	t.Helper()
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
	install := exec.Command("mariadb-install-db", "--no-defaults", "--datadir="+filepath.Join(dir, "db"),
		"--user="+me.Username, "--auth-root-authentication-method=socket", "--skip-test-db")
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("mariadb-install-db: %v\n%s", err, out)
	}
	port := freePort(t)
	s := &MariaDBServer{t: t, dir: dir, socket: filepath.Join(dir, "mysqld.sock")}
	s.args = []string{"--no-defaults", "--datadir=" + filepath.Join(dir, "db"), "--socket=" + s.socket,
		"--port=" + strconv.Itoa(port), "--bind-address=127.0.0.1", "--user=" + me.Username,
		"--log-error=" + filepath.Join(dir, "error.log"), "--innodb-buffer-pool-size=64M",
		"--skip-log-bin", "--max-connections=300"}
	s.Start()
	t.Cleanup(func() { s.signal(syscall.SIGCONT); s.signal(syscall.SIGKILL) })
	sql := "CREATE USER 'seckill'@'%' IDENTIFIED BY 'seckill'; GRANT ALL ON *.* TO 'seckill'@'%'; FLUSH PRIVILEGES;"
	if out, err := exec.Command("mariadb", "--socket="+s.socket, "-uroot", "-e", sql).CombinedOutput(); err != nil {
		t.Fatalf("create user: %v\n%s", err, out)
	}
	s.DSN = fmt.Sprintf("seckill:seckill@tcp(%s)/seckill?parseTime=true", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	return s
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
	go func() { _ = cmd.Wait() }()
	s.cmd = cmd
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
