package scan

import (
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"testing"
)

func TestDigestOf(t *testing.T) {
	body := []byte(`{"schemaVersion":2}`)
	s256 := sha256.Sum256(body)
	s384 := sha512.Sum384(body)
	s512 := sha512.Sum512(body)
	for _, tc := range []struct {
		want    string
		ok      bool
		matches bool
	}{
		{"sha256:" + hex.EncodeToString(s256[:]), true, true},
		{"sha384:" + hex.EncodeToString(s384[:]), true, true},
		{"sha512:" + hex.EncodeToString(s512[:]), true, true},
		{"sha512:" + hex.EncodeToString(s256[:]), true, false}, // right algorithm, wrong bytes: a mismatch
		{"md5:d41d8cd98f00b204e9800998ecf8427e", false, false}, // unknown: an error, never a mismatch
	} {
		got, err := digestOf(tc.want, body)
		if (err == nil) != tc.ok || (got == tc.want) != tc.matches {
			t.Errorf("digestOf(%s) = %s, %v; want ok=%v matches=%v", tc.want, got, err, tc.ok, tc.matches)
		}
	}
}
