package s3registry

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// TokenTTL is how long an issued token is valid: Docker Hub's five minutes.
const TokenTTL = 5 * time.Minute

// Issuer is a registry token service as distribution's "token" auth expects
// one (the Docker token protocol): GET /token with basic auth, service and
// scope parameters (or the OAuth2 password grant, POST /token) answers a
// short-lived JWT, signed with ES256, that grants the repository actions
// asked for. The JWT's x5c header carries the signing certificate, which is
// the registry's rootcertbundle. It serves TLS on 127.0.0.1 with a
// certificate from the test CA, and remembers every token it issued.
type Issuer struct {
	// URL is https://localhost:PORT (listening on 127.0.0.1). A host name,
	// not the IP: go-containerregistry refuses a token realm on a loopback
	// or private IP literal unless it is the registry's own host:port.
	URL string
	// Service is the audience of its tokens: the registry's auth.token.service.
	Service string
	// Name is the issuer claim: the registry's auth.token.issuer.
	Name string
	// CertFile is the signing certificate in PEM: the registry's
	// auth.token.rootcertbundle.
	CertFile string

	user, password string
	key            *ecdsa.PrivateKey
	certDER        []byte
	srv            *httptest.Server

	mu      sync.Mutex
	tokens  []string
	refused int
}

// StartIssuer starts a token service on 127.0.0.1 that accepts user and
// password, with its signing certificate and TLS files under dir.
func StartIssuer(dir string, ca *CA, service, user, password string) (*Issuer, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating the token signing key: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: "regcheck test token signer"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
	// Self-signed: the registry trusts this certificate as a root.
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("signing the token certificate: %w", err)
	}
	i := &Issuer{
		Service: service, Name: "regcheck-test-issuer", CertFile: filepath.Join(dir, "token-signer.crt"),
		user: user, password: password, key: key, certDER: der,
	}
	if err := writePEM(i.CertFile, "CERTIFICATE", der); err != nil {
		return nil, err
	}
	serverCert, _, _, err := ca.Issue(dir, "token-issuer")
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/token", i.serveToken)
	i.srv = httptest.NewUnstartedServer(mux) // listens on 127.0.0.1:0
	i.srv.TLS = &tls.Config{Certificates: []tls.Certificate{serverCert}, MinVersion: tls.VersionTLS12}
	i.srv.StartTLS()
	i.URL = fmt.Sprintf("https://localhost:%d", i.srv.Listener.Addr().(*net.TCPAddr).Port)
	return i, nil
}

// Realm is the token endpoint: the registry's auth.token.realm.
func (i *Issuer) Realm() string { return i.URL + "/token" }

// Tokens returns every token issued so far, oldest first.
func (i *Issuer) Tokens() []string {
	i.mu.Lock()
	defer i.mu.Unlock()
	return slices.Clone(i.tokens)
}

// Refused counts the token requests refused for missing or wrong credentials.
func (i *Issuer) Refused() int {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.refused
}

// Close stops the service.
func (i *Issuer) Close() { i.srv.Close() }

func (i *Issuer) serveToken(w http.ResponseWriter, r *http.Request) {
	var user, password, service string
	var scopes []string
	switch r.Method {
	case http.MethodGet:
		user, password, _ = r.BasicAuth()
		service = r.URL.Query().Get("service")
		scopes = r.URL.Query()["scope"]
	case http.MethodPost: // OAuth2 password grant, as docker login does
		if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "password" {
			http.Error(w, `{"error":"unsupported_grant_type"}`, http.StatusBadRequest)
			return
		}
		user, password = r.PostForm.Get("username"), r.PostForm.Get("password")
		service = r.PostForm.Get("service")
		scopes = r.PostForm["scope"]
	default:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if user != i.user || password != i.password {
		i.mu.Lock()
		i.refused++
		i.mu.Unlock()
		w.Header().Set("WWW-Authenticate", `Basic realm="regcheck test token service"`)
		http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"wrong username or password"}]}`, http.StatusUnauthorized)
		return
	}
	if service != i.Service {
		http.Error(w, `{"errors":[{"code":"DENIED","message":"unknown service"}]}`, http.StatusBadRequest)
		return
	}
	now := time.Now()
	tok, err := i.sign(user, grant(scopes), now)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	i.mu.Lock()
	i.tokens = append(i.tokens, tok)
	i.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"token": tok, "access_token": tok,
		"expires_in": int(TokenTTL / time.Second), "issued_at": now.UTC().Format(time.RFC3339),
	})
}

// access is one entry of a token's access claim.
type access struct {
	Type    string   `json:"type"`
	Name    string   `json:"name"`
	Actions []string `json:"actions"`
}

// grant turns scope parameters ("repository:gc/app:pull,push", several per
// parameter separated by spaces) into the access the test user gets: every
// repository action asked for, and the catalog.
func grant(scopes []string) []access {
	out := []access{}
	for _, param := range scopes {
		for _, s := range strings.Fields(param) {
			typ, rest, ok := strings.Cut(s, ":")
			i := strings.LastIndex(rest, ":")
			if !ok || i < 0 {
				continue
			}
			name, actions := rest[:i], strings.Split(rest[i+1:], ",")
			switch {
			case typ == "repository":
				actions = slices.DeleteFunc(actions, func(a string) bool {
					return a != "pull" && a != "push" && a != "delete" && a != "*"
				})
			case typ == "registry" && name == "catalog":
			default:
				continue
			}
			out = append(out, access{Type: typ, Name: name, Actions: actions})
		}
	}
	return out
}

// sign makes a compact JWS (RFC 7515) with ES256: header.claims.signature.
func (i *Issuer) sign(subject string, acc []access, now time.Time) (string, error) {
	header, err := json.Marshal(map[string]any{
		"typ": "JWT", "alg": "ES256",
		// x5c is standard base64 (RFC 7515 4.1.6); distribution verifies the
		// chain against its rootcertbundle and takes the key from it.
		"x5c": []string{base64.StdEncoding.EncodeToString(i.certDER)},
	})
	if err != nil {
		return "", err
	}
	jti := make([]byte, 16)
	rand.Read(jti)
	claims, err := json.Marshal(map[string]any{
		"iss": i.Name, "sub": subject, "aud": i.Service,
		"exp": now.Add(TokenTTL).Unix(), "nbf": now.Add(-time.Second).Unix(), "iat": now.Unix(),
		"jti": hex.EncodeToString(jti), "access": acc,
	})
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding
	signing := enc.EncodeToString(header) + "." + enc.EncodeToString(claims)
	sum := sha256.Sum256([]byte(signing))
	r, s, err := ecdsa.Sign(rand.Reader, i.key, sum[:])
	if err != nil {
		return "", err
	}
	sig := make([]byte, 64) // R and S, 32 bytes each, big-endian (RFC 7518 3.4)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return signing + "." + enc.EncodeToString(sig), nil
}
