package scan

import (
	"bytes"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"
)

type answer struct {
	status int
	err    error
}

func (a answer) RoundTrip(req *http.Request) (*http.Response, error) {
	if a.err != nil {
		return nil, a.err
	}
	return &http.Response{StatusCode: a.status, Body: http.NoBody, Request: req}, nil
}

// The tracer logs each request at debug, its URL without credentials or
// query, and nothing below debug.
func TestTracer(t *testing.T) {
	for _, tc := range []struct {
		name  string
		level slog.Level
		url   string
		next  answer
		want  string // the line, its time cut
	}{
		{"a manifest", slog.LevelDebug, "https://reg.example/v2/app/manifests/v1", answer{status: 200},
			`level=DEBUG msg="HEAD https://reg.example/v2/app/manifests/v1" status=200 took=`},
		{"a token request: no query, no user", slog.LevelDebug, "https://user:secret@auth.example/token?scope=repository:app:pull&account=me", answer{status: 401},
			`level=DEBUG msg="HEAD https://auth.example/token" status=401 took=`},
		{"no answer", slog.LevelDebug, "https://reg.example/v2/", answer{err: errors.New("connection refused")},
			`level=DEBUG msg="HEAD https://reg.example/v2/" status=error took=`},
		{"below debug: nothing", slog.LevelInfo, "https://reg.example/v2/", answer{status: 200}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			l := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: tc.level, ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
				if a.Key == slog.TimeKey {
					return slog.Attr{}
				}
				return a
			}}))
			req, _ := http.NewRequest(http.MethodHead, tc.url, nil)
			resp, err := tracer{next: tc.next, log: l}.RoundTrip(req)
			if (err != nil) != (tc.next.err != nil) || (err == nil && resp.StatusCode != tc.next.status) {
				t.Fatalf("answer %v %v, want the next layer's", resp, err)
			}
			got := buf.String()
			if tc.want == "" && got != "" || !strings.HasPrefix(got, tc.want) || strings.Contains(got, "secret") || strings.Contains(got, "scope") {
				t.Errorf("logged %q, want %q…", got, tc.want)
			}
		})
	}
}
