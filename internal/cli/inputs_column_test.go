package cli

import (
	"testing"

	"github.com/regcheck/regcheck/types"
	"github.com/regcheck/regcheck/yamlfile"
)

// TestInputErrorColumn carries a parse error's column in its own field,
// not in the message; with no column there is none.
func TestInputErrorColumn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  *yamlfile.ParseError
		want types.InputError
	}{
		{"line and column", &yamlfile.ParseError{File: "k8s/a.yaml", Line: 1, Column: 2, Msg: "mapping values are not allowed in this context"},
			types.InputError{Source: "k8s/a.yaml", Line: 1, Column: 2, Message: "mapping values are not allowed in this context"}},
		{"line only", &yamlfile.ParseError{File: "k8s/a.yaml", Line: 3, Msg: "bad"},
			types.InputError{Source: "k8s/a.yaml", Line: 3, Message: "bad"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := inputError("k8s", tc.err); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
