// Package report renders a scan's result: a table for people, versioned JSON
// for programs.
package report
