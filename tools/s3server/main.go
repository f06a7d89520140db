// Command s3server serves the S3 API from memory on a loopback address, for
// regcheck's integration tests: distribution's s3 storage driver keeps a
// registry in it, and the registry's blob redirects point at it.
//
// Why gofakes3 (github.com/johannesboyne/gofakes3, pinned in go.mod): it is a
// maintained, pure-Go S3 server with path-style buckets and every call the
// s3 driver makes (multipart uploads, listing uploads and parts, copy,
// batch delete, ListObjectsV2, ranged GET), and it serves presigned URLs.
// Its in-memory backend needs no disk layout, and the binary builds from the
// Go module proxy in seconds on 2 cores, where minio, SeaweedFS or
// versitygw pull in hundreds of modules for features no test needs.
//
// gofakes3 checks no signatures. What this wrapper adds, as real S3 does, is
// refusing a request that carries two credentials (a presigned URL and an
// Authorization header) and any Authorization that is not AWS's: a client
// that forwards a registry's bearer token or basic credentials along a
// redirect gets a 400 here, as it would from S3.
//
// usage: s3server [-addr 127.0.0.1:0] [-addr-file PATH]
package main

import (
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on (loopback only)")
	addrFile := flag.String("addr-file", "", "write the address listened on to this file once serving")
	flag.Parse()
	if err := run(*addr, *addrFile); err != nil {
		log.Fatal(err)
	}
}

func run(addr, addrFile string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("-addr %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("-addr %q: only loopback addresses", addr)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	logger := log.New(os.Stderr, "s3server: ", log.LstdFlags)
	fake := gofakes3.New(s3mem.New(), gofakes3.WithLogger(gofakes3.StdLog(logger, gofakes3.LogErr, gofakes3.LogWarn)))
	if addrFile != "" {
		// Written whole, then renamed: a reader never sees half an address.
		tmp := filepath.Join(filepath.Dir(addrFile), "."+filepath.Base(addrFile)+".tmp")
		if err := os.WriteFile(tmp, []byte(l.Addr().String()), 0o644); err != nil {
			return err
		}
		if err := os.Rename(tmp, addrFile); err != nil {
			return err
		}
	}
	logger.Printf("serving on %s", l.Addr())
	err = http.Serve(l, oneCredential(logger, fake.Server()))
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// oneCredential answers as S3 does a request with a presigned signature and
// an Authorization header, or an Authorization that is not AWS's.
func oneCredential(logger *log.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		authz := r.Header.Get("Authorization")
		presigned := r.URL.Query().Get("X-Amz-Signature") != "" || r.URL.Query().Get("Signature") != ""
		var msg string
		switch {
		case authz != "" && presigned:
			msg = "Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter, Signature query string parameter or the Authorization header should be specified"
		case authz != "" && !strings.HasPrefix(authz, "AWS4-HMAC-SHA256 ") && !strings.HasPrefix(authz, "AWS "):
			msg = "Unsupported Authorization Type"
		}
		if msg != "" {
			scheme, _, _ := strings.Cut(authz, " ")
			logger.Printf("refused %s %s: Authorization %q scheme with presigned=%t", r.Method, r.URL.Path, scheme, presigned)
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>InvalidArgument</Code><Message>%s</Message></Error>`, msg)
			return
		}
		next.ServeHTTP(w, r)
	})
}
