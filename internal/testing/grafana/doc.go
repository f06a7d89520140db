// Package grafana reads a classic Grafana dashboard's JSON model and checks it against the schema version it declares.
package grafana
