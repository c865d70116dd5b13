package config

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"
)

// probeTimeout bounds each step of CheckRedis's probe of one address (the connection,
// the TLS handshake, each reply).
const probeTimeout = 2 * time.Second

// errUnreachable is a Redis address that takes no connection: Redis is down or not up
// yet, not configured wrong.
var errUnreachable = errors.New("not reachable")

// CheckRedis tells a connection to Redis configured wrong from a Redis that is not
// there, before any client is made (whose pools would log each failed connection). It
// connects to each address of SECKILL_REDIS_ADDR as the clients would (TLS, then the
// user and password: the Sentinels' for Sentinels), and with Sentinels pings the master
// they name too. It returns an error that names the setting at fault when a server
// refuses the handshake or the credentials, or speaks plaintext where TLS is asked; nil
// when every server answers, or when one cannot be reached at all (that is logged: the
// API is not ready until Redis answers). It returns within seconds.
func (c Config) CheckRedis(ctx context.Context) error {
	user, pass := c.RedisUsername, c.RedisPassword
	names := [2]string{"SECKILL_REDIS_USERNAME", "SECKILL_REDIS_PASSWORD"}
	if c.RedisTopology() == "sentinel" {
		user, pass = c.RedisSentinelUsername, c.RedisSentinelPassword
		names = [2]string{"SECKILL_REDIS_SENTINEL_USERNAME", "SECKILL_REDIS_SENTINEL_PASSWORD"}
	}
	reached := 0
	for _, addr := range c.RedisAddrs {
		err := c.probe(ctx, addr, user, pass)
		switch {
		case errors.Is(err, errUnreachable):
			slog.Warn("redis: no connection at start", "addr", addr, "err", err)
			continue
		case err != nil:
			return c.explain(addr, err, names)
		}
		reached++
	}
	if c.RedisTopology() != "sentinel" || reached == 0 {
		return nil
	}
	// The master the Sentinels name: its own user, password and certificate.
	master, err := c.sentinelMaster(ctx)
	if err != nil {
		slog.Warn("redis: no Sentinel names the master at start", "master", c.RedisMasterName, "err", err)
		return nil
	}
	switch err := c.probe(ctx, master, c.RedisUsername, c.RedisPassword); {
	case errors.Is(err, errUnreachable):
		slog.Warn("redis: no connection to the master at start", "addr", master, "err", err)
	case err != nil:
		return c.explain(master+" (the master "+c.RedisMasterName+")", err, [2]string{"SECKILL_REDIS_USERNAME", "SECKILL_REDIS_PASSWORD"})
	}
	return nil
}

// sentinelMaster asks the Sentinels, one after the other, for the master's address.
func (c Config) sentinelMaster(ctx context.Context) (string, error) {
	var last error
	for _, addr := range c.RedisAddrs {
		s := redis.NewSentinelClient(&redis.Options{Addr: addr, Username: c.RedisSentinelUsername, Password: c.RedisSentinelPassword,
			TLSConfig: c.RedisTLS, DisableIdentity: true, DialTimeout: probeTimeout, ReadTimeout: probeTimeout, MaxRetries: -1, PoolSize: 1})
		hostPort, err := s.GetMasterAddrByName(ctx, c.RedisMasterName).Result()
		_ = s.Close()
		if err == nil && len(hostPort) == 2 {
			return net.JoinHostPort(hostPort[0], hostPort[1]), nil
		}
		last = err
	}
	return "", last
}

// probe connects to addr, over TLS when it is on, authenticates when a password is
// set, and sends PING: the first reply that is an error is returned.
func (c Config) probe(ctx context.Context, addr, user, pass string) error {
	conn, err := (&net.Dialer{Timeout: probeTimeout}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("%w: %v", errUnreachable, err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(probeTimeout))
	if c.RedisTLS != nil {
		cfg := c.RedisTLS.Clone()
		if cfg.ServerName == "" {
			cfg.ServerName, _, _ = net.SplitHostPort(addr)
		}
		tc := tls.Client(conn, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			if speaksPlaintext(ctx, addr) {
				return errPlaintext
			}
			return err
		}
		conn = tc
	}
	r := bufio.NewReader(conn)
	if pass != "" {
		args := []string{"AUTH", pass}
		if user != "" {
			args = []string{"AUTH", user, pass}
		}
		if err := command(conn, r, args...); err != nil {
			return err
		}
	}
	return command(conn, r, "PING")
}

// errPlaintext is a server that answered a plaintext PING after a failed TLS handshake.
var errPlaintext = errors.New("the server speaks plaintext, not TLS")

// speaksPlaintext reports whether addr answers a plaintext PING (with PONG or an error).
func speaksPlaintext(ctx context.Context, addr string) bool {
	conn, err := (&net.Dialer{Timeout: probeTimeout}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(probeTimeout))
	if _, err := io.WriteString(conn, "PING\r\n"); err != nil {
		return false
	}
	line, _ := bufio.NewReader(conn).ReadString('\n')
	return strings.HasPrefix(line, "+") || strings.HasPrefix(line, "-")
}

// command sends one command in RESP and reads a one-line reply: an error reply is
// returned as a redis.Error, so that refused tells it like a client's.
func command(conn net.Conn, r *bufio.Reader, args ...string) error {
	var b strings.Builder
	b.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		b.WriteString("$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n")
	}
	if _, err := io.WriteString(conn, b.String()); err != nil {
		return err
	}
	line, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	if msg, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "-"); ok {
		return replyError(msg)
	}
	return nil
}

// replyError is an error reply of a server.
type replyError string

func (e replyError) Error() string { return string(e) }

// refused reports whether err is a server refusing the credentials (or the user the
// right to PING): a wrong password, a disabled user, a user without rights.
func refused(err error) bool {
	msg := err.Error()
	var re replyError
	if !errors.As(err, &re) && !isRedisError(err) {
		return false
	}
	for _, p := range []string{"WRONGPASS", "NOAUTH", "NOPERM", "ERR AUTH", "ERR invalid password", "ERR Client sent AUTH"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

func isRedisError(err error) bool {
	var re redis.Error
	return errors.As(err, &re)
}

// tlsFault reports whether err is TLS refusing a certificate or a handshake.
func tlsFault(err error) bool {
	var (
		unknown x509.UnknownAuthorityError
		host    x509.HostnameError
		verify  *tls.CertificateVerificationError
		alert   tls.AlertError
		header  tls.RecordHeaderError
	)
	return errors.As(err, &unknown) || errors.As(err, &host) || errors.As(err, &verify) ||
		errors.As(err, &alert) || errors.As(err, &header) || errors.Is(err, errPlaintext) || remoteTLSError(err)
}

// remoteTLSError reports whether err is the server's TLS alert: it refused our side of
// the handshake (no client certificate, or one it does not trust).
func remoteTLSError(err error) bool {
	var (
		op    *net.OpError
		alert tls.AlertError
	)
	return errors.As(err, &alert) || errors.As(err, &op) && op.Op == "remote error"
}

// explain turns a probe's failure into an error that names the setting to look at.
// names are the user and password variables of the server probed.
func (c Config) explain(addr string, err error, names [2]string) error {
	var (
		host   x509.HostnameError
		header tls.RecordHeaderError
	)
	switch {
	case errors.As(err, &host):
		return fmt.Errorf("SECKILL_REDIS_TLS_SERVER_NAME: the certificate of %s is not for that name: %v", addr, err)
	case tlsFault(err) && (errors.As(err, new(x509.UnknownAuthorityError)) || errors.As(err, new(*tls.CertificateVerificationError))):
		if c.RedisTLS.RootCAs == nil {
			return fmt.Errorf("SECKILL_REDIS_TLS_CA_FILE: the certificate of %s is not signed by the system's roots (set SECKILL_REDIS_TLS_CA_FILE to its authority): %v", addr, err)
		}
		return fmt.Errorf("SECKILL_REDIS_TLS_CA_FILE: the certificate of %s is not signed by an authority in it: %v", addr, err)
	case errors.Is(err, errPlaintext) || errors.As(err, &header):
		return fmt.Errorf("SECKILL_REDIS_TLS is true but %s speaks plaintext, not TLS", addr)
	case remoteTLSError(err):
		if len(c.RedisTLS.Certificates) == 0 {
			return fmt.Errorf("SECKILL_REDIS_TLS_CERT_FILE: %s refused the TLS connection (%v): it may want a client certificate", addr, err)
		}
		return fmt.Errorf("SECKILL_REDIS_TLS_CERT_FILE: %s refused the client certificate: %v", addr, err)
	case refused(err):
		return fmt.Errorf("%s and %s: %s refused them: %v", names[0], names[1], addr, err)
	case c.RedisTLS == nil && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)):
		return fmt.Errorf("SECKILL_REDIS_TLS: %s closed a plaintext connection at once: does it want TLS? (%v)", addr, err)
	case c.RedisTLS != nil && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)):
		return fmt.Errorf("SECKILL_REDIS_TLS_CERT_FILE: %s closed the TLS connection at once: does it want a client certificate? (%v)", addr, err)
	}
	return fmt.Errorf("redis at %s: %w", addr, err)
}

// CheckMySQL connects to MySQL once, as the service's pools will, and tells a connection
// configured wrong from a MySQL that does not answer. It returns an error that names the
// setting at fault when MySQL refuses the certificate, the handshake or the user; up
// false, logged, when MySQL cannot be reached or does not answer (down, or frozen): the
// process starts all the same, and uses MySQL once it answers. It returns within
// seconds.
func (c Config) CheckMySQL(ctx context.Context) (up bool, err error) {
	db, err := c.sqlDB(mysqlIO)
	if err != nil {
		return false, err
	}
	defer db.Close()
	err = ping(ctx, db)
	switch {
	case err == nil:
		return true, nil
	case MySQLUnreachable(err):
		slog.Warn("mysql: no answer at start; what needs MySQL waits until it answers", "err", err)
		return false, nil
	}
	return false, c.mysqlError(err)
}

// MySQLUnreachable reports whether err is MySQL not answering (no connection, or one
// that timed out or broke) rather than MySQL answering with a refusal (of a
// certificate, a handshake, a user, or a statement).
func MySQLUnreachable(err error) bool {
	var (
		my *mysql.MySQLError
		ne net.Error
	)
	if errors.As(err, &my) || tlsFault(err) || errors.Is(err, mysql.ErrNoTLS) {
		return false
	}
	return errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysql.ErrInvalidConn)
}

// mysqlError names the setting behind a failure to open MySQL.
func (c Config) mysqlError(err error) error {
	var (
		host x509.HostnameError
		my   *mysql.MySQLError
	)
	switch {
	case errors.As(err, &host):
		return fmt.Errorf("SECKILL_MYSQL_DSN: MySQL's certificate is not for the DSN's host: %v", err)
	case c.MySQLTLS != nil && tlsFault(err):
		return fmt.Errorf("SECKILL_MYSQL_TLS_CA_FILE: MySQL's certificate is not signed by an authority in it: %v", err)
	case errors.Is(err, mysql.ErrNoTLS):
		return fmt.Errorf("SECKILL_MYSQL_TLS_CA_FILE is set but the MySQL server does not offer TLS: %v", err)
	case errors.As(err, &my) && my.Number == 1045 && c.MySQLTLS == nil:
		return fmt.Errorf("SECKILL_MYSQL_DSN: MySQL refused the user (if it must connect over TLS, set SECKILL_MYSQL_TLS_CA_FILE): %v", err)
	case errors.As(err, &my) && my.Number == 1045:
		return fmt.Errorf("SECKILL_MYSQL_DSN: MySQL refused the user: %v", err)
	}
	return fmt.Errorf("open MySQL: %w", err)
}
