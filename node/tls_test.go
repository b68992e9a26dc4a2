package node_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/regent-go/regent/gen"
)

// testPKI is a throwaway certificate authority for loopback TLS.
type testPKI struct {
	ca     *x509.Certificate
	caKey  *ecdsa.PrivateKey
	pool   *x509.CertPool
	serial int64
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "regent test ca"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	ca, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return &testPKI{ca: ca, caKey: key, pool: pool, serial: 1}
}

// issue makes a certificate valid for 127.0.0.1 as server and client.
func (p *testPKI) issue(t *testing.T) tls.Certificate {
	t.Helper()
	return p.issueFor(t, nil, []net.IP{net.IPv4(127, 0, 0, 1)})
}

// issueFor makes a server and client certificate naming the given DNS
// names and IP addresses.
func (p *testPKI) issueFor(t *testing.T, dns []string, ips []net.IP) tls.Certificate {
	t.Helper()
	p.serial++
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(p.serial),
		Subject:      pkix.Name{CommonName: "regent node"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     dns,
		IPAddresses:  ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.ca, &key.PublicKey, p.caKey)
	require.NoError(t, err)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func (p *testPKI) config(certs ...tls.Certificate) *tls.Config {
	return &tls.Config{
		Certificates: certs,
		RootCAs:      p.pool,
		ClientCAs:    p.pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS13,
	}
}

func TestTLS(t *testing.T) {
	pki := newTestPKI(t)
	optsWith := func(cfg *tls.Config) gen.NetworkOptions {
		o := fastNet(testCookie)
		o.TLS = cfg
		return o
	}
	a, _ := startNet(t, "tls-a@127.0.0.1", optsWith(pki.config(pki.issue(t))))
	b, _ := startNet(t, "tls-b@127.0.0.1", optsWith(pki.config(pki.issue(t))))
	route(t, a, b)
	c := newProbe()
	pid := spawnProbe(t, b, c)

	t.Run("nodes with certificates from the shared CA talk over TLS", func(t *testing.T) {
		v, err := a.Call(pid, "over tls")
		require.NoError(t, err)
		require.Equal(t, "over tls", v)
	})
	t.Run("a node without a client certificate is refused", func(t *testing.T) {
		anon, _ := startNet(t, "tls-anon@127.0.0.1", optsWith(pki.config()))
		route(t, anon, b)
		_, err := anon.Call(pid, "let me in")
		require.ErrorIs(t, err, gen.ErrNoConnection)
		require.Eventually(t, func() bool { return b.Network().Stats().Dropped["handshake_failed"] >= 1 }, wait, time.Millisecond)
	})
	t.Run("a plain TCP node cannot talk to a TLS node", func(t *testing.T) {
		plain, _ := startNet(t, "plain@127.0.0.1", fastNet(testCookie))
		route(t, plain, b)
		_, err := plain.Call(pid, "hello?")
		require.ErrorIs(t, err, gen.ErrNoConnection)
	})
}
