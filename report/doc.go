// Package report renders a scan's result: a table or an HTML page for people,
// versioned JSON for programs, SARIF and GitHub annotations for code review;
// and gc-check's, pin's and record's results. It knows results only
// (types, results/*), never the engines that make them, and links no HTTP:
// the Prometheus textfile, whose encoder (client_golang's expfmt) does, is
// metrics.WriteScan.
package report
