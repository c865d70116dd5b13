package config

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
	"strings"
)

// redisTLS reads SECKILL_REDIS_TLS and its files: nil when TLS is off. A file set
// while TLS is off is an error rather than ignored, so that a forgotten
// SECKILL_REDIS_TLS=true cannot go to Redis in plaintext unnoticed.
func (l *loader) redisTLS() *tls.Config {
	on := l.boolean("SECKILL_REDIS_TLS")
	files := map[string]string{}
	var set []string
	for _, name := range []string{"SECKILL_REDIS_TLS_CA_FILE", "SECKILL_REDIS_TLS_SERVER_NAME",
		"SECKILL_REDIS_TLS_CERT_FILE", "SECKILL_REDIS_TLS_KEY_FILE"} {
		if files[name] = l.str(name); files[name] != "" {
			set = append(set, name)
		}
	}
	if !on {
		if len(set) > 0 {
			l.fail(fmt.Errorf("%s set but SECKILL_REDIS_TLS is not true: set SECKILL_REDIS_TLS=true, or unset them", strings.Join(set, ", ")))
		}
		return nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: files["SECKILL_REDIS_TLS_SERVER_NAME"]}
	if ca := files["SECKILL_REDIS_TLS_CA_FILE"]; ca != "" {
		cfg.RootCAs = l.certPool("SECKILL_REDIS_TLS_CA_FILE", ca)
	}
	cert, key := files["SECKILL_REDIS_TLS_CERT_FILE"], files["SECKILL_REDIS_TLS_KEY_FILE"]
	switch {
	case cert != "" && key != "":
		if pair, ok := l.keyPair(cert, key); ok {
			cfg.Certificates = []tls.Certificate{pair}
		}
	case cert != "" || key != "":
		l.fail(fmt.Errorf("SECKILL_REDIS_TLS_CERT_FILE and SECKILL_REDIS_TLS_KEY_FILE go together: set both or neither"))
	}
	return cfg
}

// mysqlTLS reads SECKILL_MYSQL_TLS_CA_FILE: nil when it is unset.
func (l *loader) mysqlTLS() *tls.Config {
	ca := l.str("SECKILL_MYSQL_TLS_CA_FILE")
	if ca == "" {
		return nil
	}
	return &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: l.certPool("SECKILL_MYSQL_TLS_CA_FILE", ca)}
}

// certPool reads a PEM file of certificate authorities that the variable name names.
func (l *loader) certPool(name, path string) *x509.CertPool {
	b, err := os.ReadFile(path)
	if err != nil {
		l.fail(fmt.Errorf("%s: %w", name, err))
		return nil
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		l.fail(fmt.Errorf("%s: no PEM certificate in %s", name, path))
		return nil
	}
	return pool
}

// keyPair reads the client certificate and its key, naming the variable at fault.
func (l *loader) keyPair(certFile, keyFile string) (tls.Certificate, bool) {
	cert, err := os.ReadFile(certFile)
	if err != nil {
		l.fail(fmt.Errorf("SECKILL_REDIS_TLS_CERT_FILE: %w", err))
	}
	key, kerr := os.ReadFile(keyFile)
	if kerr != nil {
		l.fail(fmt.Errorf("SECKILL_REDIS_TLS_KEY_FILE: %w", kerr))
	}
	if err != nil || kerr != nil {
		return tls.Certificate{}, false
	}
	pair, err := tls.X509KeyPair(cert, key)
	if err != nil {
		l.fail(fmt.Errorf("SECKILL_REDIS_TLS_CERT_FILE and SECKILL_REDIS_TLS_KEY_FILE (%s, %s): %w", certFile, keyFile, err))
		return tls.Certificate{}, false
	}
	return pair, true
}
