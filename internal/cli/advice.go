package cli

import (
	"strings"

	"github.com/regcheck/regcheck/types"
)

// flagHints name the flags that act on a finding's advice. The libraries'
// advice says what to do; the command says which of its flags does it.
var flagHints = map[types.Code]string{
	types.Unauthorized: "docker login, or --pull-secrets with --cluster",
	types.TLSError:     "--ca-file FILE, or --insecure-registry HOST",
	// Credentials raise Docker Hub's limit; the cap is the user's own.
	types.RateLimitBudget: "docker login, or a higher --max-pulls",
}

// addFlagHints appends the flag that acts on each finding's advice.
func addFlagHints(res *types.Result) {
	for _, im := range res.Images {
		for i, f := range im.Findings {
			if h, ok := flagHints[f.Code]; ok && !strings.Contains(f.Advice, h) {
				im.Findings[i].Advice = strings.TrimSuffix(f.Advice, ".") + " (" + h + ")"
			}
		}
	}
}
