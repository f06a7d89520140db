package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/regcheck/regcheck/types"
)

// UseCollector makes the per-use series of a result at each scrape, as
// constant metrics: regcheck_use_findings, and with WithAvailability
// regcheck_container_image_available. Nothing is kept between scrapes but
// the result it reads, so that a long-running exporter (regcheck watch)
// holds one copy of its uses, not a registry of series besides.
type UseCollector struct {
	source    func() *types.Result
	uses      *prometheus.Desc
	available *prometheus.Desc // nil: no availability series
}

// NewUseCollector collects the uses of the result source returns when
// scraped; a nil result collects nothing.
func NewUseCollector(source func() *types.Result) *UseCollector {
	return &UseCollector{source: source, uses: UseFindings.Desc()}
}

// WithAvailability makes the collector send regcheck_container_image_available
// too, and returns it.
func (c *UseCollector) WithAvailability() *UseCollector {
	c.available = ContainerImageAvailable.Desc()
	return c
}

// Describe sends the families' descriptions.
func (c *UseCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.uses
	if c.available != nil {
		ch <- c.available
	}
}

// Collect sends the series of the result's uses.
func (c *UseCollector) Collect(ch chan<- prometheus.Metric) {
	r := c.source()
	if r == nil {
		return
	}
	for k, v := range useFindings(r) {
		ch <- prometheus.MustNewConstMetric(c.uses, prometheus.GaugeValue, v, k[:]...)
	}
	if c.available != nil {
		for k, v := range availability(r) {
			ch <- prometheus.MustNewConstMetric(c.available, prometheus.GaugeValue, v, k[:]...)
		}
	}
}

// useFindings is a series per use and finding code of its image, labelled
// UseLabels, valued the number of findings of that code; code "" and 0
// for a use whose image has none. Two entries of one reference (one per
// running digest) may name one use: its series keeps the larger count.
func useFindings(r *types.Result) map[[7]string]float64 {
	out := map[[7]string]float64{}
	for _, im := range r.Images {
		perCode := map[types.Code]int{}
		for _, f := range im.Findings {
			perCode[f.Code]++
		}
		ref := ImageLabel(im.Reference)
		for _, u := range im.Uses {
			k := [7]string{LabelValue(u.Namespace), LabelValue(u.Kind), LabelValue(u.Name), LabelValue(useContainer(u)), ref, string(im.Verdict)}
			if len(perCode) == 0 {
				if _, ok := out[k]; !ok {
					out[k] = 0
				}
			}
			for code, n := range perCode {
				k[6] = string(code)
				out[k] = max(out[k], float64(n))
			}
		}
	}
	return out
}

// availability is regcheck_container_image_available: 1 for each owner
// container (or image volume) found in the cluster whose image pulls, 0
// when it is broken, none while unknown.
func availability(r *types.Result) map[[5]string]float64 {
	out := map[[5]string]float64{}
	for _, im := range r.Images {
		if im.Verdict == types.Unknown {
			continue
		}
		v := 1.0
		if im.Verdict == types.Broken {
			v = 0
		}
		ref := ImageLabel(im.Reference)
		for _, u := range im.Uses {
			if u.Source != "cluster" || u.Name == "" {
				continue
			}
			out[[5]string{LabelValue(u.Namespace), LabelValue(u.Kind), LabelValue(u.Name), LabelValue(u.Container + u.Volume), ref}] = v
		}
	}
	return out
}

// Desc is the family's description, for a Collector that makes its series
// at scrape time.
func (n Name) Desc() *prometheus.Desc {
	f := n.family()
	return prometheus.NewDesc(string(n), f.help, f.labels, nil)
}
