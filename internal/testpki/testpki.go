// Package testpki makes throwaway certificates for tests of client certificates (mTLS).
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// PKI is a throwaway certificate authority for tests of client certificates (mTLS): its
// certificate, key and a pool that trusts it. Certificates it issues are valid for an hour
// either side of now.
type PKI struct {
	// CA is the authority's certificate; Pool holds it, for a receiver's ClientCAs.
	CA   *x509.Certificate
	Pool *x509.CertPool
	// CAPEM is CA in PEM.
	CAPEM  []byte
	key    *ecdsa.PrivateKey
	serial atomic.Int64
}

// NewPKI makes a certificate authority; it fails the test if it cannot.
func NewPKI(t testing.TB) *PKI {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	p := &PKI{CA: ca, Pool: x509.NewCertPool(), CAPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), key: key}
	p.Pool.AddCert(ca)
	p.serial.Store(1)
	return p
}

// Issue makes a client certificate for common name cn, signed by the authority, and its
// private key, both in PEM.
func (p *PKI) Issue(t testing.TB, cn string) (certPEM, keyPEM []byte) {
	t.Helper()
	return clientCert(t, cn, big.NewInt(p.serial.Add(1)), p.CA, p.key)
}

// IssueServer makes a server certificate for the IP addresses or DNS names in hosts, signed
// by the authority, and its private key, both in PEM.
func (p *PKI) IssueServer(t testing.TB, hosts ...string) (certPEM, keyPEM []byte) {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(p.serial.Add(1)), Subject: pkix.Name{CommonName: hosts[0]},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	return sign(t, tmpl, key, p.CA, p.key)
}

// SelfSignedClientCert makes a self-signed client certificate for common name cn and its
// private key, both in PEM.
func SelfSignedClientCert(t testing.TB, cn string) (certPEM, keyPEM []byte) {
	t.Helper()
	return clientCert(t, cn, big.NewInt(1), nil, nil)
}

// clientCert makes a client certificate signed by parent and parentKey, or by itself when
// parent is nil.
func clientCert(t testing.TB, cn string, serial *big.Int, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (certPEM, keyPEM []byte) {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	return sign(t, tmpl, key, parent, parentKey)
}

// sign makes the certificate tmpl for key, signed by parent and parentKey, in PEM with key.
func sign(t testing.TB, tmpl *x509.Certificate, key *ecdsa.PrivateKey, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (certPEM, keyPEM []byte) {
	t.Helper()
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}
