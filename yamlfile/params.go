package yamlfile

import (
	"bytes"
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Parameters in image fields, as Tekton and Argo Workflows fill them in.
//
// Tekton (https://tekton.dev/docs/pipelines/tasks/#specifying-parameters
// and .../variables/): a Task's step reads a parameter as $(params.name)
// (or $(params["name"]), $(params['name'])); its value is the one the
// TaskRun (spec.params), or the Pipeline task (tasks[].params) running the
// Task passes, else the param's default: in the Task. A Pipeline task's
// value may itself be $(params.p), a parameter of the Pipeline, filled by
// the PipelineRun (spec.params) or the Pipeline's default; a taskSpec
// embedded in a Pipeline reads the Pipeline's parameters without
// declaring them (.../pipelineruns/#propagated-parameters).
//
// Argo Workflows (https://argo-workflows.readthedocs.io/en/latest/walk-through/parameters/
// and https://argo-workflows.readthedocs.io/en/latest/workflow-inputs/): a template reads {{inputs.parameters.name}}, filled
// by the arguments.parameters of the dag task or step calling it
// (template: its name), else the input's value or default; the
// entrypoint's inputs by the workflow's spec.arguments.parameters, which
// every template also reads as {{workflow.parameters.name}}.

// Source is a file's bytes, for ResolveParams.
type Source struct {
	Name string
	Data []byte
}

// MayHoldParams reports whether data may hold a Tekton or an Argo
// Workflows object, whose parameters ResolveParams fills in.
func MayHoldParams(data []byte) bool {
	return bytes.Contains(data, []byte("tekton.dev")) || bytes.Contains(data, []byte("argoproj.io"))
}

var (
	tektonParam = regexp.MustCompile(`\$\(params(?:\.([A-Za-z0-9_-]+)|\[["']([^"'\]]+)["']\])\)`)
	argoParam   = regexp.MustCompile(`\{\{\s*(inputs|workflow)\.parameters\.([A-Za-z0-9_.-]+)\s*\}\}`)
)

// paramKeys are the parameters ref reads, as "params.x", "inputs.x" or
// "workflow.x", with the text of each expression.
func paramKeys(ref string) (keys, exprs []string) {
	for _, m := range tektonParam.FindAllStringSubmatch(ref, -1) {
		keys, exprs = append(keys, "params."+m[1]+m[2]), append(exprs, m[0])
	}
	for _, m := range argoParam.FindAllStringSubmatch(ref, -1) {
		keys, exprs = append(keys, m[1]+"."+m[2]), append(exprs, m[0])
	}
	return keys, exprs
}

// at is where a scalar is written.
type at struct {
	file      string
	line, col int
}

// value is a parameter's value and where it is written.
type value struct {
	text string
	at   at
}

// pass is the values one caller gives a Task or template; pipeline, when
// set, names the Pipeline whose $(params.p) the values may read.
type pass struct {
	values   map[string]value
	pipeline string
}

// scope is how the parameters of the images of one Task or template are
// filled: defaults (and an Argo workflow's parameters), then each pass.
type scope struct {
	owner    string // "Task build", for notices
	defaults map[string]value
	passes   []pass
	// named, for a Task, is the scope of its name: the values TaskRuns
	// and Pipelines pass to a Task of that name (its passes), which
	// apply to each Task so named, each with its own defaults.
	named *scope
	// pipeline, for a taskSpec embedded in a Pipeline, names it: its
	// parameters propagate to the taskSpec's steps, those the taskSpec
	// does not declare (https://tekton.dev/docs/pipelines/pipelineruns/#propagated-parameters).
	pipeline string
}

// pipelineValues are a Pipeline's parameters: defaults, then each run's.
type pipelineValues struct {
	defaults map[string]value
	runs     []map[string]value
}

// has reports whether the Pipeline's default or a run gives key.
func (pv *pipelineValues) has(key string) bool {
	if _, ok := pv.defaults[key]; ok {
		return true
	}
	for _, run := range pv.runs {
		if _, ok := run[key]; ok {
			return true
		}
	}
	return false
}

// params is what the sources say about parameters.
type params struct {
	scopes    map[at]*scope // an image scalar's position → its scope
	tasks     map[string]*scope
	pipelines map[string]*pipelineValues
}

// ResolveParams fills in the Tekton and Argo Workflows parameters of the
// images read from sources (the files MayHoldParams picks): an image whose
// reference reads a parameter becomes one image per value the tree gives
// it, each at the line where the value is written (the default, a value
// passed). An image none of whose values is known is left out, with a
// *Notice at its line naming the parameter. Other images are kept as they
// are.
func ResolveParams(imgs []Image, sources []Source) ([]Image, []error) {
	p := &params{scopes: map[at]*scope{}, tasks: map[string]*scope{}, pipelines: map[string]*pipelineValues{}}
	for _, s := range sources {
		docs, err := decode(s.Data)
		if err != nil {
			continue // the file's error is said where it is read
		}
		for _, d := range docs {
			if d.Kind == yaml.DocumentNode && len(d.Content) == 1 {
				p.object(s.Name, d.Content[0])
			}
		}
	}
	var out []Image
	var notes []error
	for _, img := range imgs {
		keys, _ := paramKeys(img.Ref)
		sc := p.scopes[at{img.File, img.Line, img.Column}]
		if len(keys) == 0 || sc == nil {
			out = append(out, img)
			continue
		}
		got, missing := p.resolve(img, sc)
		if len(got) == 0 {
			notes = append(notes, &Notice{File: img.File, Line: img.Line, Column: img.Column, Msg: fmt.Sprintf(
				"image %q of %s: parameter %s has no default and no value passed in the tree: not read", img.Ref, sc.owner, missing)})
		}
		out = append(out, got...)
	}
	return out, notes
}

// resolve is img once per set of values its scope gives, each at the
// first value written for it; missing names a parameter none gives.
func (p *params) resolve(img Image, sc *scope) ([]Image, string) {
	keys, exprs := paramKeys(img.Ref)
	var sets []map[string]value
	sets = append(sets, sc.defaults)
	passes := slices.Clone(sc.passes)
	if sc.named != nil {
		passes = append(passes, sc.named.passes...)
	}
	for _, ps := range append(passes, p.propagated(img, sc, keys, exprs)...) {
		sets = append(sets, p.expand(ps)...)
	}
	var out []Image
	seen := map[Image]bool{}
	missing := ""
	for _, set := range sets {
		next, where, first, ok := img, at{}, at{}, true
		for i, k := range keys {
			v, fromSet := set[k]
			if !fromSet {
				v, fromSet = sc.defaults[k], false
				if _, ok = sc.defaults[k]; !ok {
					missing = strings.SplitN(k, ".", 2)[1]
					break
				}
			}
			if fromSet && where.file == "" {
				where = v.at
			}
			if i == 0 {
				first = v.at
			}
			next.Ref = strings.Replace(next.Ref, exprs[i], v.text, 1)
		}
		if where.file == "" {
			where = first
		}
		if !ok || where.file == "" {
			continue
		}
		next.File, next.Line, next.Column, next.Alias = where.file, where.line, where.col, false
		if !seen[next] {
			seen[next] = true
			out = append(out, next)
		}
	}
	return out, missing
}

// propagated is the pass of the parameters of its Pipeline an embedded
// taskSpec reads and gives no default, or none.
func (p *params) propagated(img Image, sc *scope, keys, exprs []string) []pass {
	pv := p.pipelines[sc.pipeline]
	if sc.pipeline == "" || pv == nil {
		return nil
	}
	ps := pass{values: map[string]value{}, pipeline: sc.pipeline}
	for i, k := range keys {
		if _, given := sc.defaults[k]; !given && pv.has(k) {
			ps.values[k] = value{text: exprs[i], at: at{img.File, img.Line, img.Column}}
		}
	}
	if len(ps.values) == 0 {
		return nil
	}
	return []pass{ps}
}

// expand is a pass's values with each $(params.p) of its Pipeline filled
// in: once with the Pipeline's default, once per PipelineRun's value.
func (p *params) expand(ps pass) []map[string]value {
	pv := p.pipelines[ps.pipeline]
	if ps.pipeline == "" || pv == nil {
		return []map[string]value{ps.values}
	}
	var out []map[string]value
	for _, run := range append([]map[string]value{pv.defaults}, pv.runs...) {
		set := map[string]value{}
		for k, v := range ps.values {
			set[k] = v
			keys, exprs := paramKeys(v.text)
			for i, pk := range keys {
				pval, ok := run[pk]
				if !ok {
					pval, ok = pv.defaults[pk]
				}
				if ok {
					v.text = strings.Replace(v.text, exprs[i], pval.text, 1)
					v.at = pval.at
					set[k] = v
				}
			}
		}
		out = append(out, set)
	}
	return out
}

// object reads what one object says about parameters.
func (p *params) object(file string, obj *yaml.Node) {
	group, _, _ := strings.Cut(scalar(obj, "apiVersion"), "/")
	meta := child(obj, "metadata")
	kind, name := scalar(obj, "kind"), cmp.Or(scalar(meta, "name"), scalar(meta, "generateName"))
	spec := child(obj, "spec")
	switch {
	case group == "tekton.dev":
		p.tekton(file, kind, name, spec)
	case group == "argoproj.io" && kind == "CronWorkflow":
		p.argo(file, kind+" "+name, child(spec, "workflowSpec"))
	case group == "argoproj.io" && (kind == "Workflow" || kind == "WorkflowTemplate" || kind == "ClusterWorkflowTemplate"):
		p.argo(file, kind+" "+name, spec)
	}
}

// tekton reads a Task's defaults, a run's values and a Pipeline's tasks.
func (p *params) tekton(file, kind, name string, spec *yaml.Node) {
	switch kind {
	case "Task", "ClusterTask":
		// Its own scope: Tasks of one name (a catalog's versions, each
		// in its file) keep their own defaults.
		sc := &scope{owner: kind + " " + name, named: p.task(name)}
		p.taskSpec(file, sc, spec)
	case "TaskRun":
		values := paramValues(file, child(spec, "params"), "value", "params.")
		if ref := scalar(child(spec, "taskRef"), "name"); ref != "" {
			p.task(ref).passes = append(p.task(ref).passes, pass{values: values})
		}
		if ts := child(spec, "taskSpec"); ts != nil {
			sc := &scope{owner: "TaskRun " + name, passes: []pass{{values: values}}}
			p.taskSpec(file, sc, ts)
		}
	case "Pipeline":
		p.pipeline(file, name, spec)
	case "PipelineRun":
		values := paramValues(file, child(spec, "params"), "value", "params.")
		if ref := scalar(child(spec, "pipelineRef"), "name"); ref != "" {
			pv := p.pipelineOf(ref)
			pv.runs = append(pv.runs, values)
		}
		if ps := child(spec, "pipelineSpec"); ps != nil {
			inline := "PipelineRun " + name
			p.pipelineOf(inline).runs = append(p.pipelineOf(inline).runs, values)
			p.pipeline(file, inline, ps)
		}
	}
}

// task is the scope of the Task named name, made on first use.
func (p *params) task(name string) *scope {
	if p.tasks[name] == nil {
		p.tasks[name] = &scope{owner: "Task " + name, defaults: map[string]value{}}
	}
	return p.tasks[name]
}

// pipelineOf is the values of the Pipeline named name, made on first use.
func (p *params) pipelineOf(name string) *pipelineValues {
	if p.pipelines[name] == nil {
		p.pipelines[name] = &pipelineValues{defaults: map[string]value{}}
	}
	return p.pipelines[name]
}

// taskSpec reads a Task spec's param defaults into sc, and makes sc the
// scope of its steps', sidecars' and step template's images.
func (p *params) taskSpec(file string, sc *scope, spec *yaml.Node) {
	if sc.defaults == nil {
		sc.defaults = map[string]value{}
	}
	for k, v := range paramValues(file, child(spec, "params"), "default", "params.") {
		sc.defaults[k] = v
	}
	for _, key := range []string{"steps", "sidecars"} {
		for _, c := range items(child(spec, key)) {
			p.image(file, sc, child(c, "image"))
		}
	}
	p.image(file, sc, child(child(spec, "stepTemplate"), "image"))
}

// pipeline reads a Pipeline's defaults and, for each of its tasks, the
// values it passes to the Task it names or to its own taskSpec.
func (p *params) pipeline(file, name string, spec *yaml.Node) {
	pv := p.pipelineOf(name)
	for k, v := range paramValues(file, child(spec, "params"), "default", "params.") {
		pv.defaults[k] = v
	}
	for _, list := range []string{"tasks", "finally"} {
		for _, t := range items(child(spec, list)) {
			ps := pass{values: paramValues(file, child(t, "params"), "value", "params."), pipeline: name}
			if ref := scalar(child(t, "taskRef"), "name"); ref != "" {
				p.task(ref).passes = append(p.task(ref).passes, ps)
			}
			if ts := child(t, "taskSpec"); ts != nil {
				sc := &scope{owner: fmt.Sprintf("task %s of %s", scalar(t, "name"), name), passes: []pass{ps}, pipeline: name}
				p.taskSpec(file, sc, ts)
			}
		}
	}
}

// argo reads a workflow spec: its arguments, each template's input
// defaults and the arguments of each dag task and step calling it.
func (p *params) argo(file, owner string, spec *yaml.Node) {
	workflow := map[string]value{}
	args := paramValues(file, child(child(spec, "arguments"), "parameters"), "value", "workflow.")
	for k, v := range args {
		workflow[k] = v
	}
	scopes := map[string]*scope{}
	templates := items(child(spec, "templates"))
	for _, t := range templates {
		name := scalar(t, "name")
		scopes[name] = p.template(file, fmt.Sprintf("template %s of %s", name, owner), t, workflow)
	}
	if sc := scopes[scalar(spec, "entrypoint")]; sc != nil {
		sc.passes = append(sc.passes, pass{values: rekey(args, "workflow.", "inputs.")})
	}
	for _, t := range templates {
		for _, call := range calls(t) {
			values := fill(paramValues(file, child(child(call, "arguments"), "parameters"), "value", "inputs."), workflow)
			if sc := scopes[scalar(call, "template")]; sc != nil {
				sc.passes = append(sc.passes, pass{values: values})
			}
			if in := child(call, "inline"); in != nil {
				sc := p.template(file, fmt.Sprintf("step %s of %s", scalar(call, "name"), owner), in, workflow)
				sc.passes = append(sc.passes, pass{values: values})
			}
		}
	}
}

// template makes the scope of an Argo template's images: its inputs'
// defaults (value, else default) and the workflow's parameters.
func (p *params) template(file, owner string, t *yaml.Node, workflow map[string]value) *scope {
	sc := &scope{owner: owner, defaults: map[string]value{}}
	for k, v := range workflow {
		sc.defaults[k] = v
	}
	in := child(child(t, "inputs"), "parameters")
	for k, v := range paramValues(file, in, "default", "inputs.") {
		sc.defaults[k] = v
	}
	for k, v := range paramValues(file, in, "value", "inputs.") {
		sc.defaults[k] = v
	}
	for _, key := range []string{"container", "script"} {
		p.image(file, sc, child(child(t, key), "image"))
	}
	for _, key := range []string{"initContainers", "sidecars"} {
		for _, c := range items(child(t, key)) {
			p.image(file, sc, child(c, "image"))
		}
	}
	for _, c := range items(child(child(t, "containerSet"), "containers")) {
		p.image(file, sc, child(c, "image"))
	}
	return sc
}

// calls are the dag tasks and steps (each parallel group's) of a template.
func calls(t *yaml.Node) []*yaml.Node {
	out := items(child(child(t, "dag"), "tasks"))
	for _, group := range items(child(t, "steps")) {
		out = append(out, items(group)...)
	}
	return out
}

// fill replaces each {{workflow.parameters.x}} in values by its value.
func fill(values, workflow map[string]value) map[string]value {
	for k, v := range values {
		keys, exprs := paramKeys(v.text)
		for i, pk := range keys {
			if w, ok := workflow[pk]; ok {
				v.text, v.at = strings.Replace(v.text, exprs[i], w.text, 1), w.at
			}
		}
		values[k] = v
	}
	return values
}

// rekey is values with each key's prefix from replaced by to.
func rekey(values map[string]value, from, to string) map[string]value {
	out := map[string]value{}
	for k, v := range values {
		out[to+strings.TrimPrefix(k, from)] = v
	}
	return out
}

// image makes sc the scope of the image scalar n.
func (p *params) image(file string, sc *scope, n *yaml.Node) {
	if n != nil && n.Kind == yaml.ScalarNode {
		p.scopes[at{file, n.Line, n.Column}] = sc
	}
}

// paramValues reads a list of {name, field} as prefix+name → its value,
// where it is written; a value that is not a string (a Tekton array or
// object param) is left out.
func paramValues(file string, list *yaml.Node, field, prefix string) map[string]value {
	out := map[string]value{}
	for _, e := range items(list) {
		name, v := scalar(e, "name"), child(e, field)
		if name != "" && v != nil && v.Kind == yaml.ScalarNode && v.Tag != "!!null" {
			out[prefix+name] = value{text: v.Value, at: at{file, v.Line, v.Column}}
		}
	}
	return out
}

// child is the value of key in mapping m (through an alias), or nil.
func child(m *yaml.Node, key string) *yaml.Node {
	m = deref(m)
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return deref(m.Content[i+1])
		}
	}
	return nil
}

// deref follows an alias (a bounded number of times).
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 100; i++ {
		n = n.Alias
	}
	return n
}

// scalar is the string value of key in m, or "".
func scalar(m *yaml.Node, key string) string {
	if v := child(m, key); v != nil && v.Kind == yaml.ScalarNode {
		return v.Value
	}
	return ""
}

// items are the elements of sequence n (each through an alias).
func items(n *yaml.Node) []*yaml.Node {
	if n == nil || n.Kind != yaml.SequenceNode {
		return nil
	}
	out := make([]*yaml.Node, len(n.Content))
	for i, e := range n.Content {
		out[i] = deref(e)
	}
	return out
}
