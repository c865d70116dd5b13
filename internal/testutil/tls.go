package testutil

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// ServerName is the DNS name the servers' certificates carry beside the IP 127.0.0.1.
const ServerName = "redis.test"

// TLSFiles are a certificate authority made for one test (or test package), a server
// certificate it signed for 127.0.0.1 and ServerName, and a client certificate it
// signed, as PEM files in a temporary directory. Nothing of it is committed: each run
// makes its own.
type TLSFiles struct {
	// CAFile is the authority's certificate: what SECKILL_REDIS_TLS_CA_FILE and
	// SECKILL_MYSQL_TLS_CA_FILE name.
	CAFile string
	// CertFile and KeyFile are the servers' certificate and key. The certificate is good
	// for client authentication as well, as a replica presents it to its master.
	CertFile, KeyFile string
	// ClientCertFile and ClientKeyFile are a client's certificate and key (mutual TLS).
	ClientCertFile, ClientKeyFile string

	pool   *x509.CertPool
	client tls.Certificate
}

// NewTLSFiles makes a certificate authority and the two certificates it signs.
func NewTLSFiles(t testing.TB) *TLSFiles {
	t.Helper()
	dir := t.TempDir()
	f := &TLSFiles{pool: x509.NewCertPool()}
	caKey := newKey(t)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "seckill test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatalf("make a CA: %v", err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	f.pool.AddCert(ca)
	f.CAFile = writePEM(t, dir, "ca.crt", "CERTIFICATE", caDER)

	sign := func(serial int64, name string, usage []x509.ExtKeyUsage, ips []net.IP, dns []string) (certFile, keyFile string) {
		key := newKey(t)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: usage, IPAddresses: ips, DNSNames: dns}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatalf("sign %s: %v", name, err)
		}
		keyDER, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		return writePEM(t, dir, name+".crt", "CERTIFICATE", der), writePEM(t, dir, name+".key", "PRIVATE KEY", keyDER)
	}
	f.CertFile, f.KeyFile = sign(2, "server", []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		[]net.IP{net.ParseIP("127.0.0.1")}, []string{ServerName})
	f.ClientCertFile, f.ClientKeyFile = sign(3, "client", []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, nil, nil)
	if f.client, err = tls.LoadX509KeyPair(f.ClientCertFile, f.ClientKeyFile); err != nil {
		t.Fatal(err)
	}
	return f
}

// ClientConfig trusts the authority and presents the client certificate: the test's own
// connections to a server started with these files.
func (f *TLSFiles) ClientConfig() *tls.Config {
	return &tls.Config{RootCAs: f.pool, Certificates: []tls.Certificate{f.client}, MinVersion: tls.VersionTLS12}
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("make a key: %v", err)
	}
	return k
}

func writePEM(t testing.TB, dir, name, kind string, der []byte) string {
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
