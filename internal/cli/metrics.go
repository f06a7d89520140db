package cli

import (
	"context"
	"fmt"
	"io"
	"maps"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"github.com/regcheck/regcheck/metrics"
	"github.com/regcheck/regcheck/report"
	"github.com/regcheck/regcheck/types"
)

// metricsFlags publish a run's metrics: scan's and record's
// --metrics-file, --pushgateway and --pushgateway-grouping.
type metricsFlags struct {
	file        string
	pushgateway string
	grouping    []string
}

func (m *metricsFlags) addTo(fs *pflag.FlagSet) {
	fs.StringVar(&m.file, "metrics-file", "", "also write the run's Prometheus metrics to this file, atomically, for node_exporter's textfile collector (name it *.prom)")
	fs.StringVar(&m.pushgateway, "pushgateway", "", "also push the run's Prometheus metrics to this Pushgateway URL (http://host:9091), replacing the previous run's group")
	fs.StringArrayVar(&m.grouping, "pushgateway-grouping", nil, "with --pushgateway, add LABEL=VALUE to the grouping key, besides job=regcheck, command and a scan's shard INDEX/COUNT (repeatable; instance=NAME to keep several clusters apart)")
}

// target checks the flags and returns where to push, nil for nowhere.
// The grouping key holds the command, so that scan and record runs do not
// replace each other's metrics.
func (m *metricsFlags) target(command string) (*metrics.Pushgateway, error) {
	if m.pushgateway == "" {
		if len(m.grouping) > 0 {
			return nil, fmt.Errorf("--pushgateway-grouping goes with --pushgateway")
		}
		return nil, nil
	}
	if _, _, err := metrics.ParseURL(m.pushgateway); err != nil {
		return nil, fmt.Errorf("--pushgateway: %w", err)
	}
	p := &metrics.Pushgateway{URL: m.pushgateway, Grouping: map[string]string{metrics.LabelCommand: command}}
	for _, kv := range m.grouping {
		name, value, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("--pushgateway-grouping %q: want LABEL=VALUE", kv)
		}
		if _, dup := p.Grouping[name]; dup {
			return nil, fmt.Errorf("--pushgateway-grouping %q: %s is already in the grouping key", kv, name)
		}
		if name == "shard" {
			return nil, fmt.Errorf("--pushgateway-grouping %q: --shard sets the shard", kv)
		}
		if err := metrics.CheckGrouping(name, value); err != nil {
			return nil, fmt.Errorf("--pushgateway-grouping %q: %w", kv, err)
		}
		p.Grouping[name] = value
	}
	return p, nil
}

// publisher checks the flags and returns what writes and pushes a run's
// metrics.
func (m *metricsFlags) publisher(command string) (*publisher, error) {
	p, err := m.target(command)
	if err != nil {
		return nil, err
	}
	return &publisher{file: m.file, push: p}, nil
}

// publisher writes and pushes the metrics of a run.
type publisher struct {
	file string
	push *metrics.Pushgateway
}

// publish writes g to the --metrics-file and pushes it to the
// --pushgateway, whichever are set, the push under the grouping key plus
// group; it tries both before returning.
func (p *publisher) publish(ctx context.Context, g prometheus.Gatherer, group map[string]string) error {
	var errs []error
	if p.file != "" {
		if err := metrics.WriteFile(p.file, g); err != nil {
			errs = append(errs, err)
		}
	}
	if p.push != nil {
		push := *p.push
		push.Grouping = maps.Clone(push.Grouping)
		maps.Copy(push.Grouping, group)
		if err := push.Push(ctx, g); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("publishing metrics: %w", joinErrs(errs))
	}
	return nil
}

// around returns r, which also publishes the metrics of each result it
// renders when --metrics-file or --pushgateway is set, so that every
// result scan renders is also the one its metrics say.
func (p *publisher) around(ctx context.Context, r report.Renderer) report.Renderer {
	if p.file == "" && p.push == nil {
		return r
	}
	return report.RendererFunc(func(w io.Writer, res *types.Result) error {
		if err := r.Render(w, res); err != nil {
			return err
		}
		// The pods of a sharded scan push a group each.
		var group map[string]string
		if res.Shard != nil {
			group = map[string]string{"shard": fmt.Sprintf("%d/%d", res.Shard.Index, res.Shard.Count)}
		}
		return p.publish(ctx, metrics.ScanSeries(res), group)
	})
}

func joinErrs(errs []error) error {
	if len(errs) == 1 {
		return errs[0]
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return fmt.Errorf("%s", strings.Join(msgs, "; "))
}
