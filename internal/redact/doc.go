// Package redact holds regcheck's one redaction rule for messages built
// from untrusted input: no userinfo, no secret field value, no known secret.
package redact
