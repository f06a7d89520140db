// Package report renders a scan's result: a table or an HTML page for people,
// versioned JSON for programs, Prometheus metrics for monitoring, SARIF and
// GitHub annotations for code review.
package report
