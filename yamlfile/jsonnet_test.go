package yamlfile

import (
	"strings"
	"testing"
)

// TestApplicationJsonnet: an Argo CD Application whose source is a
// jsonnet directory is a notice at its source's line, never silent.
func TestApplicationJsonnet(t *testing.T) {
	t.Parallel()
	data := "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: dash\nspec:\n  source:\n    repoURL: https://github.com/example/repo\n" +
		"    path: jsonnet/app\n    directory:\n      jsonnet:\n        tlas:\n          - name: image\n            value: nginx:1.25\n"
	imgs, notes := Read("app.yaml", []byte(data))
	if len(imgs) != 0 || len(notes) != 1 || !strings.Contains(notes[0].Error(), "app.yaml:7: Application dash: spec.source (https://github.com/example/repo jsonnet/app) is rendered by jsonnet") {
		t.Errorf("images %v, notices %v: want one notice that the jsonnet source is not rendered", imgs, notes)
	}
}
