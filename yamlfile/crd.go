package yamlfile

import (
	"strings"

	"go.yaml.in/yaml/v3"
)

// groupKind names a kind of object by its API group (apiVersion without
// the version) and kind.
type groupKind struct{ group, kind string }

// imageFields are the image fields of custom resources that are not pod
// specs (those are found wherever they are, see search): each path is
// keys separated by dots, a key ending in [] is a list whose every
// element is followed. Each is an image some controller has a node pull,
// or pulls itself (Crossplane's packages).
var imageFields = map[groupKind][]string{
	// Tekton: a Task's steps, sidecars and step template; a Pipeline's
	// tasks embed task specs; a run embeds the spec it runs.
	{"tekton.dev", "Task"}:        tektonTask("spec"),
	{"tekton.dev", "ClusterTask"}: tektonTask("spec"),
	{"tekton.dev", "TaskRun"}:     tektonTask("spec.taskSpec"),
	{"tekton.dev", "Pipeline"}:    tektonPipeline("spec"),
	{"tekton.dev", "PipelineRun"}: tektonPipeline("spec.pipelineSpec"),
	{"tekton.dev", "StepAction"}:  {"spec.image"},
	// Argo Workflows: each template's container, script, init containers
	// and sidecars (a containerSet is a pod spec shape, found by search).
	{"argoproj.io", "Workflow"}:                argoTemplates("spec"),
	{"argoproj.io", "WorkflowTemplate"}:        argoTemplates("spec"),
	{"argoproj.io", "ClusterWorkflowTemplate"}: argoTemplates("spec"),
	{"argoproj.io", "CronWorkflow"}:            argoTemplates("spec.workflowSpec"),
	// An executor plugin's sidecar, which runs beside every workflow pod
	// (argo-workflows.readthedocs.io/en/latest/executor_plugins/).
	{"argoproj.io", "ExecutorPlugin"}: {"spec.sidecar.container.image"},
	// CloudNativePG: the cluster's PostgreSQL image, and the catalogs
	// clusters pick it from.
	{"postgresql.cnpg.io", "Cluster"}:             {"spec.imageName"},
	{"postgresql.cnpg.io", "ImageCatalog"}:        {"spec.images[].image"},
	{"postgresql.cnpg.io", "ClusterImageCatalog"}: {"spec.images[].image"},
	// Prometheus Operator: the image of the server it runs (its
	// containers: and initContainers: are found by search).
	{"monitoring.coreos.com", "Prometheus"}:      {"spec.image"},
	{"monitoring.coreos.com", "PrometheusAgent"}: {"spec.image"},
	{"monitoring.coreos.com", "Alertmanager"}:    {"spec.image"},
	{"monitoring.coreos.com", "ThanosRuler"}:     {"spec.image"},
	// Strimzi: an image set in place of the operator's default.
	{"kafka.strimzi.io", "Kafka"}:             {"spec.kafka.image", "spec.zookeeper.image", "spec.cruiseControl.image", "spec.entityOperator.topicOperator.image", "spec.entityOperator.userOperator.image"},
	{"kafka.strimzi.io", "KafkaConnect"}:      {"spec.image"},
	{"kafka.strimzi.io", "KafkaMirrorMaker2"}: {"spec.image"},
	{"kafka.strimzi.io", "KafkaBridge"}:       {"spec.image"},
	// Crossplane: packages are OCI images its package manager pulls (a
	// provider's or function's then runs as a Deployment).
	{"pkg.crossplane.io", "Provider"}:      {"spec.package"},
	{"pkg.crossplane.io", "Function"}:      {"spec.package"},
	{"pkg.crossplane.io", "Configuration"}: {"spec.package"},
}

func tektonTask(spec string) []string {
	return []string{spec + ".steps[].image", spec + ".sidecars[].image", spec + ".stepTemplate.image"}
}

func tektonPipeline(spec string) []string {
	var out []string
	for _, tasks := range []string{".tasks[]", ".finally[]"} {
		out = append(out, tektonTask(spec+tasks+".taskSpec")...)
	}
	return out
}

// argoTemplates are the image fields of a workflow spec's templates, and
// of the templates written inline in a dag task or a step (steps is a
// list of parallel groups, each a list: [][]).
func argoTemplates(spec string) []string {
	var out []string
	for _, t := range []string{spec + ".templates[]", spec + ".templates[].dag.tasks[].inline", spec + ".templates[].steps[][].inline"} {
		out = append(out, t+".container.image", t+".script.image", t+".initContainers[].image", t+".sidecars[].image")
	}
	return out
}

// apiGroup is the group of an apiVersion ("" for the core group).
func apiGroup(apiVersion string) string {
	if g, _, ok := strings.Cut(apiVersion, "/"); ok {
		return g
	}
	return ""
}

// fieldName is a known field's Field: the key before a final "image"
// (steps, sidecars, stepTemplate, container, kafka), else the last key
// (imageName, package, or image for spec.image).
func fieldName(path string) string {
	keys := strings.Split(path, ".")
	last := keys[len(keys)-1]
	if last == "image" && len(keys) > 2 {
		return strings.TrimSuffix(keys[len(keys)-2], "[]")
	}
	return last
}

// custom reads an object of a kind with no pod spec where podSpecPath
// says: its known image fields, then every pod spec shape under it.
func (w *walker) custom(obj ref, kind string) {
	meta, _ := w.get(obj, "metadata")
	base := Image{File: w.file, Kind: kind, Namespace: w.str(meta, "namespace"), Name: w.str(meta, "name")}
	gk := groupKind{apiGroup(w.str(obj, "apiVersion")), kind}
	if w.gitops(base, obj, gk) {
		return
	}
	seen := map[[2]*yaml.Node]bool{}
	if gk.group == "argoproj.io" {
		defer w.markArgo(len(w.sites))
	}
	for _, p := range imageFields[gk] {
		w.field(base, obj, strings.Split(p, "."), fieldName(p), "", seen)
	}
	budget := maxSearch
	c := obj.node.Content
	for i := 0; i+1 < len(c); i += 2 {
		switch c[i].Value {
		case "apiVersion", "kind", "metadata", "status":
			continue
		}
		w.search(base, w.resolve(c[i+1], obj.alias, obj.pos), 1, &budget, seen)
	}
}

// field follows path from m and adds the image scalar at its end, named
// by the name: of the last list element on the way.
func (w *walker) field(base Image, m ref, path []string, field, name string, seen map[[2]*yaml.Node]bool) {
	key, list := strings.CutSuffix(path[0], "[]")
	key, nested := strings.CutSuffix(key, "[]")
	v, ok := w.get(m, key)
	if !ok {
		return
	}
	if list {
		w.elements(base, v, nested, path, field, seen)
		return
	}
	if len(path) > 1 {
		w.field(base, v, path[1:], field, name, seen)
		return
	}
	if !isValue(v.node) || seen[[2]*yaml.Node{v.node, v.pos}] {
		return
	}
	seen[[2]*yaml.Node{v.node, v.pos}] = true
	s := w.site(base, v)
	s.Field, s.Container = field, name
	w.pullPolicy(&s, m, "imagePullPolicy")
	w.sites = append(w.sites, s)
}

// elements follows path[1:] from each element of the list v; nested (a
// key ending in [][]), from each element of each of its lists.
func (w *walker) elements(base Image, v ref, nested bool, path []string, field string, seen map[[2]*yaml.Node]bool) {
	if v.node.Kind != yaml.SequenceNode {
		return
	}
	for _, e := range v.node.Content {
		el := w.resolve(e, v.alias, v.pos)
		switch {
		case nested:
			w.elements(base, el, false, path, field, seen)
		case len(path) > 1:
			w.field(base, el, path[1:], field, w.str(el, "name"), seen)
		}
	}
}

// markArgo marks the sites read since the from-th as an Argo object's.
func (w *walker) markArgo(from int) {
	for i := from; i < len(w.sites); i++ {
		w.sites[i].argo = true
	}
}
