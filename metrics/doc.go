// Package metrics names regcheck's Prometheus metrics and the alerts on
// them, and delivers the metrics of a run (a prometheus.Gatherer, as
// report.Metrics builds one): to a file for node_exporter's textfile
// collector, or to a Pushgateway.
package metrics
