package front

import (
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Kind is the product whose answers to a blob HEAD the front gives. Every
// other request, and every blob GET, is passed to the registry behind.
type Kind string

// Kinds of front.
const (
	// Harbor answers a blob HEAD 404 BLOB_UNKNOWN until a GET of that blob
	// has gone through it, as a Harbor proxy-cache project does for what it
	// has not pulled from its upstream yet (goharbor/harbor#22609); its GET
	// fetches the blob.
	Harbor Kind = "harbor"
	// Artifactory answers every blob HEAD 200, whether or not the registry
	// has the blob, and puts X-Artifactory-Id on every answer: "HEAD with
	// 200 and GET with 404 for the same, actually absent, blob"
	// (gardener/cc-utils#1752).
	Artifactory Kind = "artifactory"
	// ECRPublic answers every blob HEAD 403 DENIED while the GET is
	// allowed, as ECR Public does (SgtSilvio/gradle-oci#154).
	ECRPublic Kind = "ecr-public"
)

// ArtifactoryID is the header an Artifactory front sets on every answer.
const ArtifactoryID = "X-Artifactory-Id"

// Front is a running front on 127.0.0.1.
type Front struct {
	kind Kind
	ln   net.Listener
	srv  *http.Server
	rp   *httputil.ReverseProxy

	mu     sync.Mutex
	pulled map[string]bool // repository@digest of the blobs a GET went through (Harbor)
	heads  map[int]int     // blob HEADs answered, by status
	gets   map[int]int     // blob GETs answered, by status
}

// Start starts a front of the kind before the registry at upstream
// (host:port, plain HTTP).
func Start(kind Kind, upstream string) (*Front, error) {
	switch kind {
	case Harbor, Artifactory, ECRPublic:
	default:
		return nil, fmt.Errorf("front: unknown kind %q", kind)
	}
	if upstream == "" {
		return nil, errors.New("front: no upstream")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("front: %w", err)
	}
	f := &Front{kind: kind, ln: ln, pulled: map[string]bool{}, heads: map[int]int{}, gets: map[int]int{}}
	f.rp = httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: upstream})
	f.rp.ModifyResponse = f.modify
	f.rp.ErrorLog = log.New(io.Discard, "", 0) // a client that hangs up is no news
	f.srv = &http.Server{Handler: http.HandlerFunc(f.serve), ReadHeaderTimeout: 10 * time.Second}
	go f.srv.Serve(ln)
	return f, nil
}

// Host is the front's host:port, for image references.
func (f *Front) Host() string { return f.ln.Addr().String() }

// Close stops the front.
func (f *Front) Close() error { return f.srv.Close() }

// BlobRequests returns the blob HEADs and GETs the front answered, by status.
func (f *Front) BlobRequests() (heads, gets map[int]int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	heads, gets = map[int]int{}, map[int]int{}
	for k, v := range f.heads {
		heads[k] = v
	}
	for k, v := range f.gets {
		gets[k] = v
	}
	return heads, gets
}

// serve answers a blob HEAD as the front's product does, and passes every
// other request to the registry.
func (f *Front) serve(w http.ResponseWriter, r *http.Request) {
	repo, dg, isBlob := blobPath(r.URL.Path)
	if !isBlob || r.Method != http.MethodHead {
		f.rp.ServeHTTP(w, r)
		return
	}
	switch f.kind {
	case Harbor:
		f.mu.Lock()
		pulled := f.pulled[repo+"@"+dg]
		f.mu.Unlock()
		if pulled {
			f.rp.ServeHTTP(w, r)
			return
		}
		f.count(f.heads, http.StatusNotFound)
		writeError(w, http.StatusNotFound, "BLOB_UNKNOWN", "blob unknown to registry")
	case Artifactory:
		f.count(f.heads, http.StatusOK)
		w.Header().Set(ArtifactoryID, "regcheck-test-artifactory")
		w.Header().Set("Docker-Content-Digest", dg)
		w.Header().Set("Content-Type", "application/octet-stream")
		w.WriteHeader(http.StatusOK)
	case ECRPublic:
		f.count(f.heads, http.StatusForbidden)
		writeError(w, http.StatusForbidden, "DENIED", "Not Authorized")
	}
}

// modify counts the registry's answers to blob requests, remembers the
// blobs a GET fetched (Harbor), and marks every answer (Artifactory).
func (f *Front) modify(resp *http.Response) error {
	if f.kind == Artifactory {
		resp.Header.Set(ArtifactoryID, "regcheck-test-artifactory")
	}
	repo, dg, isBlob := blobPath(resp.Request.URL.Path)
	if !isBlob {
		return nil
	}
	if resp.Request.Method == http.MethodHead {
		f.count(f.heads, resp.StatusCode)
		return nil
	}
	f.count(f.gets, resp.StatusCode)
	if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusPartialContent {
		f.mu.Lock()
		f.pulled[repo+"@"+dg] = true
		f.mu.Unlock()
	}
	return nil
}

func (f *Front) count(m map[int]int, status int) {
	f.mu.Lock()
	m[status]++
	f.mu.Unlock()
}

// writeError answers status with a registry error body.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, fmt.Sprintf(`{"errors":[{"code":%q,"message":%q}]}`, code, msg))
}

// blobPath splits /v2/<repo>/blobs/<digest>; isBlob is false for any other
// path (uploads included).
func blobPath(p string) (repo, digest string, isBlob bool) {
	rest, ok := strings.CutPrefix(p, "/v2/")
	i := strings.LastIndex(rest, "/blobs/")
	if !ok || i <= 0 || strings.Contains(rest, "/blobs/uploads") {
		return "", "", false
	}
	return rest[:i], rest[i+len("/blobs/"):], true
}
