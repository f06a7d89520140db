// Package record keeps the history of which image digest ran where, merged from inventory snapshots, in a file or a ConfigMap.
package record
