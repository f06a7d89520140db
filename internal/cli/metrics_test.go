package cli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/regcheck/regcheck/internal/testing/fixture"
)

// The metrics flags are checked before anything is asked: a bad URL or
// grouping is a usage error, and no credential of the URL is repeated.
func TestMetricsFlagsUsage(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"grouping without a gateway", []string{"--pushgateway-grouping", "instance=a"}, "goes with --pushgateway"},
		{"not http", []string{"--pushgateway", "ftp://h:21"}, "want an http or https URL"},
		{"no host", []string{"--pushgateway", "http://"}, "names no host"},
		{"a query", []string{"--pushgateway", "http://h:9091/?x=1"}, "query"},
		{"credentials never repeated", []string{"--pushgateway", "gopher://user:s3cret@h"}, "want an http"},
		{"grouping not KEY=VALUE", []string{"--pushgateway", "http://h:9091", "--pushgateway-grouping", "instance"}, "want LABEL=VALUE"},
		{"grouping on job", []string{"--pushgateway", "http://h:9091", "--pushgateway-grouping", "job=x"}, "job is always regcheck"},
		{"grouping on command", []string{"--pushgateway", "http://h:9091", "--pushgateway-grouping", "command=x"}, "already in the grouping key"},
		{"grouping on shard", []string{"--pushgateway", "http://h:9091", "--pushgateway-grouping", "shard=1"}, "--shard sets the shard"},
		{"grouping not a label name", []string{"--pushgateway", "http://h:9091", "--pushgateway-grouping", "a-b=x"}, "not a label name"},
		{"grouping with no value", []string{"--pushgateway", "http://h:9091", "--pushgateway-grouping", "instance="}, "has no value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, cmd := range [][]string{{"scan", "nginx:1.27"}, {"record"}} {
				var out, errb bytes.Buffer
				code := Run(context.Background(), Streams{Out: &out, Err: &errb}, append(cmd, tc.args...))
				if code != ExitUsage || !strings.Contains(errb.String(), tc.want) || strings.Contains(errb.String(), "s3cret") {
					t.Errorf("%s: exit %d, stderr %q; want %d and %q", cmd[0], code, errb.String(), ExitUsage, tc.want)
				}
			}
		})
	}
}

// scan --metrics-file and --pushgateway publish the metrics -o prom
// prints, the push under job=regcheck and command=scan with basic auth
// from the URL; a failed push is an error that names no password.
func TestScanPublishesMetrics(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	if _, err := fixture.PushSingle(context.Background(), host+"/t/app:v1", "app"); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var pushes []string
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, _ := r.BasicAuth()
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		pushes = append(pushes, r.Method+" "+r.URL.Path+" "+user+":"+pass+" "+r.Header.Get("Content-Type"))
		mu.Unlock()
		if len(body) == 0 {
			t.Errorf("an empty push")
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer gw.Close()

	dir := t.TempDir()
	file := filepath.Join(dir, "regcheck.prom")
	gwURL := strings.Replace(gw.URL, "http://", "http://robot:s3cret@", 1)
	var out, errb bytes.Buffer
	code := Run(context.Background(), Streams{Out: &out, Err: &errb}, []string{"scan", "-o", "prom", "--metrics-file", file,
		"--pushgateway", gwURL, "--pushgateway-grouping", "instance=prod", host + "/t/app:v1"})
	if code != ExitClean {
		t.Fatalf("exit %d\n%s", code, errb.String())
	}
	written, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	// The file and -o prom are one rendering of one result.
	if !bytes.Equal(written, out.Bytes()) {
		t.Errorf("metrics file differs from -o prom:\n%s\n---\n%s", written, out.String())
	}
	for _, want := range []string{
		`regcheck_use_findings{code="",container="",image="` + host + `/t/app:v1",namespace="",verdict="ok",workload="",workload_kind=""} 0`,
		`regcheck_last_success_timestamp_seconds{command="scan"} `,
	} {
		if !strings.Contains(string(written), want) {
			t.Errorf("metrics file lacks %q:\n%s", want, written)
		}
	}
	if len(pushes) != 1 || !strings.HasPrefix(pushes[0], "PUT /metrics/job/regcheck/") ||
		!strings.Contains(pushes[0], "/command/scan") || !strings.Contains(pushes[0], "/instance/prod") ||
		!strings.Contains(pushes[0], " robot:s3cret ") {
		t.Errorf("pushes %q", pushes)
	}

	// A shard pushes a group of its own.
	pushes = nil
	if code := Run(context.Background(), Streams{Out: &out, Err: &errb}, []string{"scan", "--shard", "0/1", "--pushgateway", gw.URL, host + "/t/app:v1"}); code != ExitClean {
		t.Fatalf("exit %d\n%s", code, errb.String())
	}
	if len(pushes) != 1 || !strings.Contains(pushes[0], "/shard@base64/MC8x") { // "0/1"
		t.Errorf("sharded pushes %q", pushes)
	}

	// A gateway that refuses: exit 3, and the password is not repeated.
	gw.Close()
	out.Reset()
	errb.Reset()
	code = Run(context.Background(), Streams{Out: &out, Err: &errb}, []string{"scan", "--pushgateway", gwURL, host + "/t/app:v1"})
	if code != ExitIncomplete || !strings.Contains(errb.String(), "pushing metrics to http://127.0.0.1") || strings.Contains(errb.String(), "s3cret") {
		t.Errorf("exit %d, stderr %q", code, errb.String())
	}
}
