package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// credentials are a cluster's certificate authority, the API server's
// serving certificate, an admin client certificate (group system:masters)
// and the ServiceAccount token signing key, all made with Go's crypto at the
// first start and kept as PEM files in one directory.
type credentials struct {
	dir          string
	caPEM        []byte
	adminCertPEM []byte
	adminKeyPEM  []byte
}

func (c *credentials) file(name string) string { return filepath.Join(c.dir, name) }

func loadOrMakeCredentials(dir string) (*credentials, error) {
	c := &credentials{dir: dir}
	if _, err := os.Stat(c.file("admin.key")); errors.Is(err, os.ErrNotExist) {
		if err := makeCredentials(dir); err != nil {
			return nil, fmt.Errorf("making credentials: %w", err)
		}
	}
	var err error
	for name, into := range map[string]*[]byte{"ca.crt": &c.caPEM, "admin.crt": &c.adminCertPEM, "admin.key": &c.adminKeyPEM} {
		if *into, err = os.ReadFile(c.file(name)); err != nil {
			return nil, err
		}
	}
	return c, nil
}

func makeCredentials(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now().Add(-time.Hour)
	caTemplate := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "cluster-ca"},
		NotBefore:             now,
		NotAfter:              now.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	if err := writePEM(filepath.Join(dir, "ca.crt"), "CERTIFICATE", caDER); err != nil {
		return err
	}
	if err := writeKey(filepath.Join(dir, "ca.key"), caKey); err != nil {
		return err
	}
	if err := issue(dir, "serving", ca, caKey, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback, net.IPv4(10, 0, 0, 1)},
	}); err != nil {
		return err
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	if err := writeKey(filepath.Join(dir, "sa.key"), saKey); err != nil {
		return err
	}
	// The admin key is written last: its presence marks a complete directory.
	return issue(dir, "admin", ca, caKey, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "admin", Organization: []string{"system:masters"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
}

// clientCert returns the PEM certificate and key of a client of the
// cluster (name.crt and name.key in the credentials' directory), issuing
// them with the cluster's CA the first time: a directory made before a
// client was known gets it when it is first asked for.
func (c *credentials) clientCert(name, user string, groups ...string) (certPEM, keyPEM []byte, err error) {
	if _, err := os.Stat(c.file(name + ".key")); errors.Is(err, os.ErrNotExist) {
		ca, caKey, err := c.authority()
		if err != nil {
			return nil, nil, err
		}
		if err := issue(c.dir, name, ca, caKey, &x509.Certificate{
			Subject:     pkix.Name{CommonName: user, Organization: groups},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}); err != nil {
			return nil, nil, err
		}
	}
	if certPEM, err = os.ReadFile(c.file(name + ".crt")); err != nil {
		return nil, nil, err
	}
	keyPEM, err = os.ReadFile(c.file(name + ".key"))
	return certPEM, keyPEM, err
}

// authority reads the cluster's CA certificate and key.
func (c *credentials) authority() (*x509.Certificate, *ecdsa.PrivateKey, error) {
	certBlock, _ := pem.Decode(c.caPEM)
	if certBlock == nil {
		return nil, nil, fmt.Errorf("%s: no PEM certificate", c.file("ca.crt"))
	}
	ca, err := x509.ParseCertificate(certBlock.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", c.file("ca.crt"), err)
	}
	keyPEM, err := os.ReadFile(c.file("ca.key"))
	if err != nil {
		return nil, nil, err
	}
	keyBlock, _ := pem.Decode(keyPEM)
	if keyBlock == nil {
		return nil, nil, fmt.Errorf("%s: no PEM key", c.file("ca.key"))
	}
	key, err := x509.ParseECPrivateKey(keyBlock.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", c.file("ca.key"), err)
	}
	return ca, key, nil
}

// issue makes a key and a certificate of template signed by the CA, written
// as name.crt and name.key in dir (the key last).
func issue(dir, name string, ca *x509.Certificate, caKey *ecdsa.PrivateKey, template *x509.Certificate) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now().Add(-time.Hour)
	template.SerialNumber = serial()
	template.NotBefore = now
	template.NotAfter = now.Add(10 * 365 * 24 * time.Hour)
	template.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, template, ca, &key.PublicKey, caKey)
	if err != nil {
		return err
	}
	if err := writePEM(filepath.Join(dir, name+".crt"), "CERTIFICATE", der); err != nil {
		return err
	}
	return writeKey(filepath.Join(dir, name+".key"), key)
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		panic(err)
	}
	return n.Add(n, big.NewInt(1))
}

func writePEM(path, kind string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600)
}

func writeKey(path string, key *ecdsa.PrivateKey) error {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return writePEM(path, "EC PRIVATE KEY", der)
}
