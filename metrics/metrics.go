package metrics

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/push"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/regcheck/regcheck/internal/atomicfile"
)

// Job is the job label of every group regcheck pushes.
const Job = "regcheck"

// Write writes what g gathers in the text exposition format 0.0.4.
func Write(w io.Writer, g prometheus.Gatherer) error {
	mfs, err := g.Gather()
	if err != nil {
		return err
	}
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return err
		}
	}
	return nil
}

// WriteFile writes what g gathers to path in the text exposition format, as
// node_exporter's textfile collector reads it: a temporary file in the same
// folder renamed over path, so that the collector never reads half of one.
func WriteFile(path string, g prometheus.Gatherer) error {
	var buf bytes.Buffer
	if err := Write(&buf, g); err != nil {
		return err
	}
	if err := atomicfile.Write(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("writing metrics to %s: %w", path, err)
	}
	return nil
}

// Pushgateway is where, and under which grouping key, metrics are pushed.
type Pushgateway struct {
	// URL is the Pushgateway's base URL (http://pushgateway:9091). A user
	// and password in it are sent as basic auth, never shown.
	URL string
	// Grouping is the grouping key besides job="regcheck": one group per
	// key, each push replacing the whole of its group. A metric's label of
	// the same name and value moves to the key; another value is an error.
	Grouping map[string]string
	// Client sends the push; nil is a client with a 30 second timeout.
	Client *http.Client
}

// ParseURL checks a Pushgateway URL: http or https, a host, no query, and
// returns it without its user and password, and those.
func ParseURL(raw string) (base *url.URL, user *url.Userinfo, err error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, nil, errors.New("not a URL") // url's error repeats the URL, password included
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, nil, fmt.Errorf("want an http or https URL, not %q", u.Scheme)
	case u.Host == "":
		return nil, nil, errors.New("the URL names no host")
	case u.RawQuery != "" || u.Fragment != "":
		return nil, nil, errors.New("the URL has a query or fragment")
	}
	user, u.User = u.User, nil
	return u, user, nil
}

// CheckGrouping checks a grouping label: a label name, not job, and a
// value.
func CheckGrouping(name, value string) error {
	switch {
	case !model.LabelName(name).IsValidLegacy() || strings.HasPrefix(name, "__"):
		return fmt.Errorf("%q is not a label name", name)
	case name == "job":
		return errors.New("the job is always " + Job)
	case value == "":
		return fmt.Errorf("grouping label %s has no value", name)
	}
	return nil
}

// Push replaces the metrics of its group on the Pushgateway with what g
// gathers (an HTTP PUT): series the previous run pushed and this one did
// not are gone.
func (p Pushgateway) Push(ctx context.Context, g prometheus.Gatherer) error {
	base, user, err := ParseURL(p.URL)
	if err != nil {
		return fmt.Errorf("--pushgateway: %w", err)
	}
	client := p.Client
	if client == nil {
		client = &http.Client{Timeout: 30 * time.Second}
	}
	pusher := push.New(base.String(), Job).Client(client).Gatherer(grouped{g, p.Grouping})
	for name, value := range p.Grouping {
		if err := CheckGrouping(name, value); err != nil {
			return err
		}
		pusher = pusher.Grouping(name, value)
	}
	if user != nil {
		pass, _ := user.Password()
		pusher = pusher.BasicAuth(user.Username(), pass)
	}
	if err := pusher.PushContext(ctx); err != nil {
		return fmt.Errorf("pushing metrics to %s: %w", base.Redacted(), err)
	}
	return nil
}

// grouped moves the labels the grouping key holds out of the metrics: the
// push package refuses a metric carrying one, and the Pushgateway puts the
// key's labels back on every series it serves.
type grouped struct {
	g   prometheus.Gatherer
	key map[string]string
}

func (g grouped) Gather() ([]*dto.MetricFamily, error) {
	mfs, err := g.g.Gather()
	if err != nil {
		return nil, err
	}
	for _, mf := range mfs {
		for _, m := range mf.Metric {
			kept := m.Label[:0]
			for _, l := range m.Label {
				v, ok := g.key[l.GetName()]
				switch {
				case !ok:
					kept = append(kept, l)
				case v != l.GetValue():
					return nil, fmt.Errorf("metric %s has %s=%q, the grouping key %s=%q", mf.GetName(), l.GetName(), l.GetValue(), l.GetName(), v)
				}
			}
			m.Label = kept
		}
	}
	return mfs, nil
}
