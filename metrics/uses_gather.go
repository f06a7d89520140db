package metrics

import (
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

// Gather makes the families Collect sends straight into client_golang's
// data model, for a Gatherers list (regcheck watch's /metrics): the same
// series, with each label pair made once and shared by every series that
// has it (a namespace, an image, a verdict: thousands of series each) and
// the series of a family allocated together. At 10,000 uses a scrape
// through Collect and a registry makes 27 objects a series, through
// Gather 4 (BenchmarkUseScrape).
func (c *UseCollector) Gather() ([]*dto.MetricFamily, error) {
	s := c.source()
	if s == nil {
		return nil, nil
	}
	pairs := labelPairs{}
	uses := s.useFindings()
	out := []*dto.MetricFamily{gaugeFamily(UseFindings, len(uses), func(add func([]string, float64)) {
		for k, v := range uses {
			add(k[:], v)
		}
	}, pairs)}
	if c.available != nil {
		avail := s.availability()
		out = append(out, gaugeFamily(ContainerImageAvailable, len(avail), func(add func([]string, float64)) {
			for k, v := range avail {
				add(k[:], v)
			}
		}, pairs))
	}
	return out, nil
}

// gaugeFamily is family n with the n series each calls add for, its
// values in the order of n's labels.
func gaugeFamily(n Name, size int, each func(add func([]string, float64)), pairs labelPairs) *dto.MetricFamily {
	f := n.family()
	order := sortedLabels(f.labels) // client_golang keeps a series' labels sorted by name
	ms := make([]dto.Metric, 0, size)
	gs := make([]dto.Gauge, 0, size)
	vs := make([]float64, 0, size)
	ls := make([]*dto.LabelPair, 0, size*len(order))
	each(func(values []string, v float64) {
		start := len(ls)
		for _, i := range order {
			ls = append(ls, pairs.of(f.labels[i], values[i]))
		}
		vs = append(vs, v)
		gs = append(gs, dto.Gauge{Value: &vs[len(vs)-1]})
		ms = append(ms, dto.Metric{Label: ls[start:len(ls):len(ls)], Gauge: &gs[len(gs)-1]})
	})
	mf := &dto.MetricFamily{Name: proto.String(string(n)), Help: proto.String(f.help), Type: dto.MetricType_GAUGE.Enum(),
		Metric: make([]*dto.Metric, len(ms))}
	for i := range ms {
		mf.Metric[i] = &ms[i]
	}
	return mf
}

// sortedLabels is the indexes of labels in the order of their names.
func sortedLabels(labels []string) []int {
	order := make([]int, len(labels))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(labels[a], labels[b]) })
	return order
}

// labelPairs are the label pairs of one gathering, each made once.
type labelPairs map[[2]string]*dto.LabelPair

func (p labelPairs) of(name, value string) *dto.LabelPair {
	k := [2]string{name, value}
	lp, ok := p[k]
	if !ok {
		lp = &dto.LabelPair{Name: proto.String(name), Value: proto.String(value)}
		p[k] = lp
	}
	return lp
}
