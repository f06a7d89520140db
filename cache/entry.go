package cache

import (
	"bytes"
	"strings"
)

// encode writes an entry: the header, the content type, a newline, the
// manifest's bytes.
func encode(contentType string, body []byte) []byte {
	var b bytes.Buffer
	b.Grow(len(header) + len(contentType) + 1 + len(body))
	b.WriteString(header)
	b.WriteString(contentType)
	b.WriteByte('\n')
	b.Write(body)
	return b.Bytes()
}

// decode reads an entry back. The content type must look like one
// (printable ASCII, no space, at most 255 bytes); the bytes are the
// caller's to verify by their digest.
func decode(data []byte) (contentType string, body []byte, ok bool) {
	line, body, found := bytes.Cut(data, []byte("\n"))
	if !found || !bytes.HasPrefix(line, []byte(header)) {
		return "", nil, false
	}
	ct := string(line[len(header):])
	if len(ct) > 255 || strings.IndexFunc(ct, func(r rune) bool { return r <= ' ' || r > '~' }) >= 0 {
		return "", nil, false
	}
	return ct, body, true
}
