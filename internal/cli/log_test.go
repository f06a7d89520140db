package cli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"log/slog"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/regcheck/regcheck/internal/testing/fixture"
	"github.com/regcheck/regcheck/internal/version"
)

// A log line is the level, the message and key=value: no time but at
// debug, quotes only where a value needs them, no control character raw.
func TestLogHandler(t *testing.T) {
	when := time.Date(2026, 12, 1, 10, 4, 5, 678e6, time.UTC)
	for _, tc := range []struct {
		name  string
		level slog.Level
		log   func(l *slog.Logger)
		want  string
	}{
		{"warn, short", slog.LevelWarn, func(l *slog.Logger) {
			l.Warn("input skipped", "input", "k8s/chart/templates/deploy.yaml", "reason", "skipped: Helm template")
		}, `WARN input skipped input=k8s/chart/templates/deploy.yaml reason="skipped: Helm template"` + "\n"},
		{"below the level: nothing", slog.LevelWarn, func(l *slog.Logger) { l.Info("asked again", "images", 2) }, ""},
		{"info", slog.LevelInfo, func(l *slog.Logger) { l.Info("asked again", "images", 2, "recovered", 1) },
			"INFO asked again images=2 recovered=1\n"},
		{"debug has the time", slog.LevelDebug, func(l *slog.Logger) {
			l.Debug("GET http://127.0.0.1:5000/v2/", "status", 401, "took", 1500*time.Microsecond)
		}, "10:04:05.678 DEBUG GET http://127.0.0.1:5000/v2/ status=401 took=1.5ms\n"},
		{"errors, empty values and =", slog.LevelWarn, func(l *slog.Logger) {
			l.Error("input not read", "err", errors.New("yaml: line 3: bad"), "empty", "", "eq", "a=b")
		}, `ERROR input not read err="yaml: line 3: bad" empty="" eq="a=b"` + "\n"},
		{"control characters visible", slog.LevelWarn, func(l *slog.Logger) {
			l.Warn("msg\x1b[2J\nforged", "k\x1b", "v\x1b[31m\u009b")
		}, `WARN msg\x1b[2J\nforged k\x1b="v\x1b[31m\u009b"` + "\n"},
		{"groups and With", slog.LevelWarn, func(l *slog.Logger) {
			l.With("cluster", "prod").WithGroup("cache").Warn("could not keep", "digest", "sha256:ab", slog.Group("lock", "path", "/c/x"))
		}, "WARN could not keep cluster=prod cache.digest=sha256:ab cache.lock.path=/c/x\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			h := newLogHandler(&buf, tc.level)
			tc.log(slog.New(fixedTime{h, when}))
			if got := buf.String(); got != tc.want {
				t.Errorf("logged\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

// fixedTime gives every record one time.
type fixedTime struct {
	slog.Handler
	t time.Time
}

func (f fixedTime) Handle(ctx context.Context, r slog.Record) error {
	r.Time = f.t
	return f.Handler.Handle(ctx, r)
}
func (f fixedTime) WithAttrs(as []slog.Attr) slog.Handler {
	return fixedTime{f.Handler.WithAttrs(as), f.t}
}
func (f fixedTime) WithGroup(n string) slog.Handler { return fixedTime{f.Handler.WithGroup(n), f.t} }

// traceLine is one request of -v's trace.
var traceLine = regexp.MustCompile(`^\d\d:\d\d:\d\d\.\d{3} DEBUG (GET|HEAD) https?://127\.0\.0\.1:\d+/v2/(\S*) status=(\d{3}|error) took=\S+( err=.*)?$`)

// -v and --log-level debug trace every request on the wire: method, URL,
// status, time; the default level logs nothing of a clean scan.
func TestVerboseTracesRequests(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	imgs, err := fixture.Push(context.Background(), host, "v/")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		flags    []string
		requests bool
	}{
		{"default", nil, false},
		{"-v", []string{"-v"}, true},
		{"--verbose", []string{"--verbose"}, true},
		{"--log-level debug", []string{"--log-level", "debug"}, true},
		{"--log-level info", []string{"--log-level", "info"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			args := append(tc.flags, "scan", "--no-cache", "-o", "json", imgs[0].Ref)
			if code := Run(context.Background(), Streams{Out: &out, Err: &errb}, args); code != ExitClean {
				t.Fatalf("exit %d\n%s", code, errb.String())
			}
			var traced []string
			for _, line := range strings.Split(strings.TrimSuffix(errb.String(), "\n"), "\n") {
				if m := traceLine.FindStringSubmatch(line); m != nil {
					traced = append(traced, m[1]+" /v2/"+m[2]+" "+m[3])
				} else if tc.requests && strings.Contains(line, "DEBUG") && strings.Contains(line, "/v2/") {
					t.Errorf("a request line not as traced: %q", line)
				}
			}
			if !tc.requests {
				if errb.Len() != 0 {
					t.Errorf("stderr %q, want nothing", errb.String())
				}
				return
			}
			// go-containerregistry asks a loopback registry over https first.
			want := []string{"GET /v2/ error", "GET /v2/ 200", "HEAD /v2/v/" + imgs[0].Name + "/manifests/v1 200"}
			for _, w := range want {
				if !strings.Contains(strings.Join(traced, "\n"), w) {
					t.Errorf("trace lacks %q:\n%s", w, errb.String())
				}
			}
		})
	}
}

// --version and regcheck version print the same line: the version, and
// the revision and Go version the build recorded.
func TestVersion(t *testing.T) {
	want := version.Get().String() + "\n"
	if !strings.HasPrefix(want, "regcheck ") {
		t.Fatalf("version line %q", want)
	}
	for _, args := range [][]string{{"version"}, {"--version"}} {
		var out, errb bytes.Buffer
		if code := Run(context.Background(), Streams{Out: &out, Err: &errb}, args); code != ExitClean || out.String() != want {
			t.Errorf("%v: exit %d, printed %q, want %q\n%s", args, code, out.String(), want, errb.String())
		}
	}
}

func TestVerboseAndQuiet(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Run(context.Background(), Streams{Out: &out, Err: &errb}, []string{"-v", "-q", "scan", "x"}); code != ExitUsage {
		t.Errorf("exit %d, want %d\n%s", code, ExitUsage, errb.String())
	}
}
