package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestPluginName(t *testing.T) {
	for _, tc := range []struct{ program, want string }{
		{"regcheck", ""},
		{"/usr/local/bin/regcheck", ""},
		{"kubectl-regcheck", "kubectl regcheck"},
		{"/home/u/.krew/bin/kubectl-regcheck", "kubectl regcheck"},
		{"/krew/bin/kubectl-regcheck.exe", "kubectl regcheck"},
		{"kubectl-regcheck.EXE", "kubectl regcheck"},
		{"kubectl-reg-check", "kubectl reg check"},
		{"kubectl-reg_check", "kubectl reg-check"},
		{"kubectl-", ""},
		{"kubectl", ""},
	} {
		if got := pluginName(tc.program); got != tc.want {
			t.Errorf("pluginName(%q) = %q, want %q", tc.program, got, tc.want)
		}
	}
}

// TestRunAsKubectlPlugin: invoked as kubectl-regcheck, every usage line
// and help hint reads "kubectl regcheck …"; invoked as regcheck, none does.
func TestRunAsKubectlPlugin(t *testing.T) {
	for _, tc := range []struct {
		program  string
		args     []string
		want     []string
		unwanted string
	}{
		{"/krew/bin/kubectl-regcheck", []string{"--help"}, []string{"\n  kubectl regcheck [command]\n", `Use "kubectl regcheck [command] --help"`}, "\n  regcheck [command]"},
		{"/krew/bin/kubectl-regcheck", []string{"pin", "--help"}, []string{"\n  kubectl regcheck pin [PATH...] [flags]\n"}, "\n  regcheck pin [PATH...] [flags]"},
		{"/krew/bin/kubectl-regcheck", []string{"scan", "--no-such-flag"}, nil, ""},
		{"regcheck", []string{"pin", "--help"}, []string{"\n  regcheck pin [PATH...] [flags]\n"}, "kubectl regcheck"},
	} {
		var out, errb bytes.Buffer
		code := RunAs(context.Background(), Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, tc.program, tc.args)
		if tc.want == nil {
			if code != ExitUsage {
				t.Errorf("%s %v: exit %d, want %d", tc.program, tc.args, code, ExitUsage)
			}
			continue
		}
		if code != ExitClean {
			t.Errorf("%s %v: exit %d\n%s", tc.program, tc.args, code, errb.String())
		}
		for _, w := range tc.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%s %v: help lacks %q:\n%s", tc.program, tc.args, w, out.String())
			}
		}
		if strings.Contains(out.String(), tc.unwanted) {
			t.Errorf("%s %v: help holds %q:\n%s", tc.program, tc.args, tc.unwanted, out.String())
		}
	}
}
