package kubeapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/regcheck/regcheck/internal/testing/bins"
)

// Versions of the binaries hack/build-bins.sh builds.
const (
	EtcdBinary      = "etcd-v3.7.3"
	APIServerBinary = "kube-apiserver-v1.37.2"
)

// ReadyTimeout bounds how long Start waits for /readyz.
var ReadyTimeout = 90 * time.Second

// DefaultBinDir is where hack/build-bins.sh puts binaries (see bins.Dir).
func DefaultBinDir() string { return bins.Dir() }

// Cluster is a running etcd and kube-apiserver. There is no kubelet,
// scheduler or controller-manager: tests create Nodes, set spec.nodeName
// and write pod status through pods/status themselves.
type Cluster struct {
	// URL is the API server's https URL on 127.0.0.1.
	URL string
	// Config is an admin (system:masters) client config.
	Config *rest.Config
	// Kubeconfig is the path of an admin kubeconfig file in dir, with
	// context "testkube", for running the CLI against the cluster.
	Kubeconfig string

	dir       string
	caData    []byte
	etcd      *process
	apiserver *process
	restarts  int // of kube-apiserver, by RestartAPIServer
}

type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error // set before done is closed
}

func startProcess(name, bin, logPath string, args ...string) (*process, error) {
	logf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = sysProcAttr()
	// Pdeathsig fires when the thread that started the child exits; keep
	// that thread for the duration of Start.
	runtime.LockOSThread()
	err = cmd.Start()
	runtime.UnlockOSThread()
	if err != nil {
		logf.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	return p, nil
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (p *process) stop() {
	if p == nil || p.exited() {
		return
	}
	p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
}

// tail returns the last n bytes of the process's log.
func (p *process) tail(n int64) string {
	f, err := os.Open(p.log)
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > n {
		f.Seek(fi.Size()-n, io.SeekStart)
	}
	b, _ := io.ReadAll(f)
	return string(b)
}

func freePorts(n int) ([]int, error) {
	// Hold all listeners until every port is picked, so they differ.
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// Start starts etcd and kube-apiserver from binDir with their state, logs,
// keys and kubeconfig in dir, and waits until /readyz answers ok (at most
// ReadyTimeout). apiserverFlags are added to kube-apiserver's own (say
// "--feature-gates=ImageVolumeWithDigest=true" for a field an alpha gate
// keeps). A start error includes the tail of both logs. Stop the cluster
// with Stop; the processes also die with the test process.
func Start(ctx context.Context, dir, binDir string, apiserverFlags ...string) (*Cluster, error) {
	etcdBin := filepath.Join(binDir, EtcdBinary)
	apiBin := filepath.Join(binDir, APIServerBinary)
	var missing []error
	for _, b := range []string{etcdBin, apiBin} {
		if _, err := os.Stat(b); err != nil {
			missing = append(missing, fmt.Errorf("%s missing (build it with hack/build-bins.sh cluster): %w", b, err))
		}
	}
	if err := errors.Join(missing...); err != nil {
		return nil, err
	}
	ports, err := freePorts(3)
	if err != nil {
		return nil, fmt.Errorf("picking ports: %w", err)
	}
	clientURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	securePort := ports[2]

	c := &Cluster{dir: dir, URL: "https://127.0.0.1:" + strconv.Itoa(securePort)}
	ok := false
	defer func() {
		if !ok {
			c.Stop()
		}
	}()

	c.etcd, err = startProcess("etcd", etcdBin, filepath.Join(dir, "etcd.log"),
		"--name=testkube",
		"--data-dir="+filepath.Join(dir, "etcd-data"),
		"--listen-client-urls="+clientURL,
		"--advertise-client-urls="+clientURL,
		"--listen-peer-urls="+peerURL,
		"--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=testkube="+peerURL,
		"--unsafe-no-fsync",
		"--log-level=warn",
	)
	if err != nil {
		return nil, err
	}

	// Service account signing key, admin token, serving certs.
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	keyFile := filepath.Join(dir, "sa.key")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		return nil, err
	}
	tok := make([]byte, 16)
	rand.Read(tok)
	adminToken := hex.EncodeToString(tok)
	tokenFile := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokenFile, []byte(adminToken+`,admin,admin-uid,"system:masters"`+"\n"), 0o600); err != nil {
		return nil, err
	}
	certDir := filepath.Join(dir, "certs")

	flags := append([]string{
		"--etcd-servers=" + clientURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(securePort),
		"--cert-dir=" + certDir,
		"--authorization-mode=RBAC",
		"--token-auth-file=" + tokenFile,
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + keyFile,
		"--service-account-signing-key-file=" + keyFile,
		"--service-cluster-ip-range=10.0.0.0/24",
		"--endpoint-reconciler-type=none",
		"--enable-priority-and-fairness=false",
		"--v=1",
	}, apiserverFlags...)
	c.apiserver, err = startProcess("kube-apiserver", apiBin, filepath.Join(dir, "kube-apiserver.log"), flags...)
	if err != nil {
		return nil, err
	}

	if err := c.waitReady(ctx, adminToken); err != nil {
		return nil, fmt.Errorf("%w\n--- etcd log (tail) ---\n%s\n--- kube-apiserver log (tail) ---\n%s", err, c.etcd.tail(4096), c.apiserver.tail(8192))
	}
	c.caData, _ = os.ReadFile(filepath.Join(certDir, "apiserver.crt"))
	c.Config = c.configFor(adminToken)
	c.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := c.WriteKubeconfig(c.Kubeconfig, "testkube", adminToken); err != nil {
		return nil, err
	}
	ok = true
	return c, nil
}

func (c *Cluster) waitReady(ctx context.Context, token string) error {
	ctx, cancel := context.WithTimeout(ctx, ReadyTimeout)
	defer cancel()
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	var last string
	for {
		for _, p := range []*process{c.etcd, c.apiserver} {
			if p.exited() {
				return fmt.Errorf("%s exited before the API server was ready: %v", p.name, p.err)
			}
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.URL+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := hc.Do(req)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("/readyz: %s: %s", resp.Status, bytes.TrimSpace(body))
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kube-apiserver not ready after %v: %s", ReadyTimeout, last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// configFor returns a client config that authenticates with a bearer token.
// The API server's self-signed serving certificate is trusted when it could
// be read; otherwise TLS verification is off (loopback only).
func (c *Cluster) configFor(token string) *rest.Config {
	cfg := &rest.Config{Host: c.URL, BearerToken: token, QPS: 100, Burst: 200}
	if len(c.caData) > 0 {
		cfg.TLSClientConfig = rest.TLSClientConfig{CAData: c.caData}
	} else {
		cfg.TLSClientConfig = rest.TLSClientConfig{Insecure: true}
	}
	return cfg
}

// Client is an admin clientset.
func (c *Cluster) Client() (*kubernetes.Clientset, error) {
	return kubernetes.NewForConfig(c.Config)
}

// ServiceAccountConfig requests a token for the ServiceAccount namespace/name
// (TokenRequest through serviceaccounts/token, valid for an hour) and
// returns a client config that authenticates as it.
func (c *Cluster) ServiceAccountConfig(ctx context.Context, namespace, name string) (*rest.Config, string, error) {
	cs, err := c.Client()
	if err != nil {
		return nil, "", err
	}
	exp := int64(3600)
	tr, err := cs.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &exp},
	}, metav1.CreateOptions{})
	if err != nil {
		return nil, "", fmt.Errorf("requesting a token for serviceaccount %s/%s: %w", namespace, name, err)
	}
	return c.configFor(tr.Status.Token), tr.Status.Token, nil
}

// WriteKubeconfig writes a kubeconfig for token to path, with one context
// named contextName (also the current context).
func (c *Cluster) WriteKubeconfig(path, contextName, token string) error {
	cfg := clientcmdapi.NewConfig()
	cl := clientcmdapi.NewCluster()
	cl.Server = c.URL
	if len(c.caData) > 0 {
		cl.CertificateAuthorityData = c.caData
	} else {
		cl.InsecureSkipTLSVerify = true
	}
	cfg.Clusters[contextName] = cl
	au := clientcmdapi.NewAuthInfo()
	au.Token = token
	cfg.AuthInfos[contextName] = au
	cx := clientcmdapi.NewContext()
	cx.Cluster, cx.AuthInfo = contextName, contextName
	cfg.Contexts[contextName] = cx
	cfg.CurrentContext = contextName
	return clientcmd.WriteToFile(*cfg, path)
}

// Logs returns the paths of the etcd and kube-apiserver logs.
func (c *Cluster) Logs() (etcd, apiserver string) {
	return filepath.Join(c.dir, "etcd.log"), filepath.Join(c.dir, "kube-apiserver.log")
}

// Stop stops kube-apiserver, then etcd. It is safe to call more than once.
func (c *Cluster) Stop() {
	if c == nil {
		return
	}
	c.apiserver.stop()
	c.etcd.stop()
}
