package s3registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// S3Server is the name of the S3 server binary hack/build-bins.sh builds
// (tools/s3server: gofakes3, in memory).
const S3Server = "s3server-v1.2.0"

// S3 is a running S3 server on 127.0.0.1, plain HTTP, path-style buckets.
type S3 struct {
	// Addr is host:port.
	Addr string
	proc
}

// StartS3 starts binary (see S3Server) with its log and address file in dir.
func StartS3(ctx context.Context, binary, dir string) (*S3, error) {
	addrFile := filepath.Join(dir, "s3.addr")
	s := &S3{}
	if err := s.start(filepath.Join(dir, "s3.log"), binary, "-addr", "127.0.0.1:0", "-addr-file", addrFile); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		if b, err := os.ReadFile(addrFile); err == nil && len(b) > 0 {
			s.Addr = strings.TrimSpace(string(b))
			return s, nil
		}
		select {
		case <-s.exited():
			return nil, fmt.Errorf("s3 server exited before it was ready\n%s", s.tail())
		case <-ctx.Done():
			s.stop()
			return nil, fmt.Errorf("s3 server not ready: %w\n%s", ctx.Err(), s.tail())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Endpoint is the server's URL: http://127.0.0.1:PORT.
func (s *S3) Endpoint() string { return "http://" + s.Addr }

// CreateBucket creates a bucket. The server checks no credentials; a real
// S3's would be the registry's.
func (s *S3) CreateBucket(ctx context.Context, bucket string) error {
	return s.do(ctx, http.MethodPut, "/"+bucket, http.StatusOK)
}

// DeleteObject deletes one object, as a bucket lifecycle rule or an
// operator would, behind the registry's back.
func (s *S3) DeleteObject(ctx context.Context, bucket, key string) error {
	return s.do(ctx, http.MethodDelete, "/"+bucket+"/"+key, http.StatusNoContent)
}

// HasObject reports whether an object exists.
func (s *S3) HasObject(ctx context.Context, bucket, key string) (bool, error) {
	err := s.do(ctx, http.MethodHead, "/"+bucket+"/"+key, http.StatusOK)
	var st statusError
	if errors.As(err, &st) && st.status == http.StatusNotFound {
		return false, nil
	}
	return err == nil, err
}

// Stop ends the server; its content is gone with it.
func (s *S3) Stop() error { return s.stop() }

type statusError struct {
	method, url string
	status      int
}

func (e statusError) Error() string {
	return fmt.Sprintf("%s %s: status %d", e.method, e.url, e.status)
}

func (s *S3) do(ctx context.Context, method, path string, want int) error {
	req, err := http.NewRequestWithContext(ctx, method, s.Endpoint()+path, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != want {
		return statusError{method, req.URL.String(), resp.StatusCode}
	}
	return nil
}
