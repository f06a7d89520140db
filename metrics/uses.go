package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/regcheck/regcheck/types"
)

// UseCollector makes the per-use series of a result at each scrape, as
// constant metrics: regcheck_use_findings, and with WithAvailability
// regcheck_container_image_available. Nothing is kept between scrapes but
// the snapshot it reads, so that a long-running exporter (regcheck watch)
// holds one compact copy of its uses, not a registry of series besides.
type UseCollector struct {
	source    func() *UseSnapshot
	uses      *prometheus.Desc
	available *prometheus.Desc // nil: no availability series
}

// UseSnapshot is what the per-use series are made of: for each image its
// label, verdict, uses and how many findings of each code it has; none
// of the findings' text, which an exporter has no series for.
type UseSnapshot struct {
	images []useImage
}

// useImage is one image of a UseSnapshot.
type useImage struct {
	ref     string
	verdict types.Verdict
	perCode map[types.Code]int
	uses    []types.Use // shared with the result's image, never changed
}

// NewUseSnapshot takes of r what its per-use series need; nil for nil.
func NewUseSnapshot(r *types.Result) *UseSnapshot {
	if r == nil {
		return nil
	}
	s := &UseSnapshot{images: make([]useImage, 0, len(r.Images))}
	for _, im := range r.Images {
		var perCode map[types.Code]int
		for _, f := range im.Findings {
			if perCode == nil {
				perCode = map[types.Code]int{}
			}
			perCode[f.Code]++
		}
		s.images = append(s.images, useImage{ref: ImageLabel(im.Reference), verdict: im.Verdict, perCode: perCode, uses: im.Uses})
	}
	return s
}

// NewUseCollector collects the uses of the snapshot source returns when
// scraped; a nil snapshot collects nothing.
func NewUseCollector(source func() *UseSnapshot) *UseCollector {
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

// Collect sends the series of the snapshot's uses.
func (c *UseCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.source()
	if s == nil {
		return
	}
	for k, v := range s.useFindings() {
		ch <- prometheus.MustNewConstMetric(c.uses, prometheus.GaugeValue, v, k[:]...)
	}
	if c.available != nil {
		for k, v := range s.availability() {
			ch <- prometheus.MustNewConstMetric(c.available, prometheus.GaugeValue, v, k[:]...)
		}
	}
}

// useFindings is a series per use and finding code of its image, labelled
// UseLabels, valued the number of findings of that code; code "" and 0
// for a use whose image has none. Two entries of one reference (one per
// running digest) may name one use: its series keeps the larger count.
func (s *UseSnapshot) useFindings() map[[7]string]float64 {
	n := 0
	for _, im := range s.images {
		n += len(im.uses) * max(1, len(im.perCode))
	}
	out := make(map[[7]string]float64, n) // made at every scrape: never grown
	for _, im := range s.images {
		for _, u := range im.uses {
			k := [7]string{LabelValue(u.Namespace), LabelValue(u.Kind), LabelValue(u.Name), LabelValue(useContainer(u)), im.ref, string(im.verdict)}
			if len(im.perCode) == 0 {
				if _, ok := out[k]; !ok {
					out[k] = 0
				}
			}
			for code, n := range im.perCode {
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
func (s *UseSnapshot) availability() map[[5]string]float64 {
	n := 0
	for _, im := range s.images {
		n += len(im.uses)
	}
	out := make(map[[5]string]float64, n)
	for _, im := range s.images {
		if im.verdict == types.Unknown {
			continue
		}
		v := 1.0
		if im.verdict == types.Broken {
			v = 0
		}
		for _, u := range im.uses {
			if u.Source != "cluster" || u.Name == "" {
				continue
			}
			out[[5]string{LabelValue(u.Namespace), LabelValue(u.Kind), LabelValue(u.Name), LabelValue(u.Container + u.Volume), im.ref}] = v
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
