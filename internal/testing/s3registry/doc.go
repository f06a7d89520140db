// Package s3registry runs distribution v3.1.2 as production runs it, for the integration tests: S3 storage with blob redirects, TLS from a test CA, and token authentication.
package s3registry
