// Package types is regcheck's vocabulary: findings, their codes and
// severities, verdicts, the uses of an image, and a scan's result. It
// imports nothing of regcheck's and no HTTP, so every package that names a
// finding (the registry walker, the storage reader, gc, pin, report) shares
// it without linking a registry client.
package types
