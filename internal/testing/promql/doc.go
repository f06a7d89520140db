// Package promql finds the series a PromQL expression reads, with a lexer (the Prometheus module, whose parser is exact, is not a dependency).
package promql
