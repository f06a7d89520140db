package protect

import (
	"strings"
	"testing"
)

func TestTagName(t *testing.T) {
	t.Parallel()
	d := "sha256:" + strings.Repeat("0123456789abcdef", 4)
	long := strings.Repeat("o", 200)
	for _, tc := range []struct {
		name, prefix, owner, want, err string
	}{
		{name: "default", prefix: DefaultPrefix, owner: "prod", want: "regcheck-keep-prod-0123456789abcdef"},
		{name: "empty owner is default", prefix: DefaultPrefix, want: "regcheck-keep-default-0123456789abcdef"},
		{name: "owner outside the grammar", prefix: DefaultPrefix, owner: "arn:aws:eks/prod cluster", want: "regcheck-keep-arn-aws-eks-prod-cluster-0123456789abcdef"},
		{name: "long owner cut to 128", prefix: DefaultPrefix, owner: long, want: DefaultPrefix + long[:128-len(DefaultPrefix)-17] + "-0123456789abcdef"},
		{name: "prefix cannot start a tag", prefix: "-keep-", owner: "x", err: "tag prefix"},
		{name: "prefix outside the grammar", prefix: "keep/", owner: "x", err: "tag prefix"},
		{name: "prefix too long", prefix: strings.Repeat("p", 120), owner: "x", err: "too long"},
		{name: "not a digest", prefix: DefaultPrefix, owner: "x", err: "algorithm:hex"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dg := d
			if tc.name == "not a digest" {
				dg = "latest"
			}
			got, err := TagName(tc.prefix, tc.owner, dg)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("TagName = %q, %v; want error %q", got, err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("TagName = %q, %v; want %q", got, err, tc.want)
			}
			if len(got) > 128 || !tagGrammar.MatchString(got) {
				t.Fatalf("%q is outside the tag grammar", got)
			}
		})
	}
}
