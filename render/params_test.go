package render

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/regcheck/regcheck/yamlfile"
)

// Images fills Tekton parameters in across the files of the tree: the
// Task's default, the Pipeline's (passed on), the PipelineRun's and the
// TaskRun's values, each in its own file; a parameter with no value is a
// notice, not an image. The same files listed by a kustomization give the
// same images at the same lines: kustomize passes parameters through, and
// each image is traced to the literal it renders.
func TestImagesResolveParamsAcrossFiles(t *testing.T) {
	t.Parallel()
	plain := filepath.Join("..", "yamlfile", "testdata", "params", "tekton")
	kustomized := t.TempDir()
	k := "resources:\n"
	for _, f := range []string{"pipeline.yaml", "task.yaml", "taskrun.yaml"} {
		data, err := os.ReadFile(filepath.Join(plain, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(kustomized, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
		k += "  - " + f + "\n"
	}
	if err := os.WriteFile(filepath.Join(kustomized, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"pipeline.yaml:17 docker.io/library/alpine:3.20",
		"pipeline.yaml:21 docker.io/library/golang:1.23",
		"pipeline.yaml:38 gcr.io/kaniko-project/executor:v1.21.0",
		"pipeline.yaml:8 gcr.io/kaniko-project/executor:v1.22.0",
		"task.yaml:20 docker.io/library/busybox:1.36",
		"task.yaml:8 gcr.io/kaniko-project/executor:v1.23.0",
		"taskrun.yaml:10 docker.io/library/alpine:3.19",
	}
	for name, root := range map[string]string{"plain": plain, "kustomized": kustomized} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			imgs, errs := Images(root)
			var got []string
			for _, img := range imgs {
				got = append(got, fmt.Sprintf("%s:%d %s", filepath.Base(img.File), img.Line, img.Ref))
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Errorf("images %q, want %q", got, want)
			}
			var n *yamlfile.Notice
			if len(errs) != 1 || !errors.As(errs[0], &n) || n.Line != 18 || filepath.Base(n.File) != "task.yaml" {
				t.Errorf("errors %v, want one notice at task.yaml:18", errs)
			}
		})
	}
}
