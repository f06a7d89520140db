// Package faultproxy is a reverse proxy in front of a registry that injects one fault per rule, for tests.
package faultproxy
