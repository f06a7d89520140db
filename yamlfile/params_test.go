package yamlfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Tekton and Argo Workflows parameters in image fields are filled in as
// their controllers fill them (see params.go): each default and each
// value passed in the tree is a use at its line; a parameter no one gives
// a value is a notice naming it, never an image; Argo's own {{ }} never
// make a file a Helm template.
func TestResolveParams(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		files   []string // under testdata/params
		want    []string // file:line:column ref, in order
		notices []string // file:line: the parameter named
	}{
		{"Tekton Task, Pipeline, PipelineRun and TaskRun across files",
			[]string{"tekton/task.yaml", "tekton/pipeline.yaml", "tekton/taskrun.yaml"},
			[]string{
				"tekton/task.yaml:8:16 gcr.io/kaniko-project/executor:v1.23.0",      // the Task's default
				"tekton/pipeline.yaml:8:16 gcr.io/kaniko-project/executor:v1.22.0",  // the Pipeline's default, passed on
				"tekton/pipeline.yaml:38:14 gcr.io/kaniko-project/executor:v1.21.0", // the PipelineRun's value
				"tekton/pipeline.yaml:17:18 docker.io/library/alpine:3.20",          // the Pipeline task's value
				"tekton/taskrun.yaml:10:14 docker.io/library/alpine:3.19",           // the TaskRun's value
				"tekton/task.yaml:20:14 docker.io/library/busybox:1.36",
				"tekton/pipeline.yaml:21:18 docker.io/library/golang:1.23", // an inline taskSpec's
			},
			[]string{"tekton/task.yaml:18: nodefault"}},
		{"a Task alone: its default, the others notices",
			[]string{"tekton/task.yaml"},
			[]string{"tekton/task.yaml:8:16 gcr.io/kaniko-project/executor:v1.23.0", "tekton/task.yaml:20:14 docker.io/library/busybox:1.36"},
			[]string{"tekton/task.yaml:16: tag", "tekton/task.yaml:18: nodefault"}},
		{"Tekton: Tasks of one name in two versions' files, each with its own default",
			[]string{"versions/0.1/git-cli.yaml", "versions/0.4/git-cli.yaml"},
			[]string{
				"versions/0.1/git-cli.yaml:10:16 cgr.dev/chainguard/git:2.40.1",
				"versions/0.4/git-cli.yaml:10:16 cgr.dev/chainguard/git:2.45.2",
			},
			nil},
		{"Tekton: a PipelineRun's params propagate to an embedded taskSpec that does not declare them",
			[]string{"propagated/run.yaml"},
			[]string{
				"propagated/run.yaml:12:18 docker.io/library/ubuntu:22.04", // the embedded Pipeline's default
				"propagated/run.yaml:8:14 docker.io/library/ubuntu:24.04",  // the PipelineRun's value
			},
			nil},
		{"Argo Workflow: defaults, dag and steps arguments, inline templates, workflow parameters",
			[]string{"argo/workflow.yaml"},
			[]string{
				"argo/workflow.yaml:12:16 docker.io/library/alpine:3.20", // inline c: {{workflow.parameters.tool-image}}
				"argo/workflow.yaml:38:22 docker.io/library/python:3.11", // echo's default
				"argo/workflow.yaml:10:16 docker.io/library/python:3.12", // passed by task a from the workflow's
				"argo/workflow.yaml:51:26 docker.io/library/bash:5",      // inline step s's argument
				"argo/workflow.yaml:60:16 docker.io/library/nginx:1.27",
			},
			[]string{"argo/workflow.yaml:54: tool-image", "argo/workflow.yaml:57: missing"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			imgs, sources := readParamFixtures(t, tc.files)
			got, notes := ResolveParams(imgs, sources)
			var shown []string
			for _, img := range got {
				shown = append(shown, fmt.Sprintf("%s:%d:%d %s", rel(img.File), img.Line, img.Column, img.Ref))
			}
			if !slices.Equal(shown, tc.want) {
				t.Errorf("images:\n%s\nwant:\n%s", strings.Join(shown, "\n"), strings.Join(tc.want, "\n"))
			}
			var notices []string
			for _, err := range notes {
				var n *Notice
				if !errors.As(err, &n) {
					t.Fatalf("%v (%T) is not a *Notice", err, err)
				}
				_, param, _ := strings.Cut(n.Msg, "parameter ")
				param, _, _ = strings.Cut(param, " ")
				notices = append(notices, fmt.Sprintf("%s:%d: %s", rel(n.File), n.Line, param))
			}
			if !slices.Equal(notices, tc.notices) {
				t.Errorf("notices %q, want %q (%v)", notices, tc.notices, notes)
			}
		})
	}
}

// readParamFixtures reads files as Read does, keeping their bytes.
func readParamFixtures(t *testing.T, files []string) ([]Image, []Source) {
	t.Helper()
	var imgs []Image
	var sources []Source
	for _, f := range files {
		p := filepath.Join("testdata", "params", f)
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		found, problems := Read(p, data)
		if len(problems) > 0 {
			t.Fatalf("%s: %v", f, problems)
		}
		imgs = append(imgs, found...)
		sources = append(sources, Source{Name: p, Data: data})
	}
	return imgs, sources
}

// rel is a fixture's path under testdata/params.
func rel(p string) string {
	return filepath.ToSlash(strings.TrimPrefix(p, filepath.Join("testdata", "params")+string(filepath.Separator)))
}
