package cleanup

// The GitHub cleanup actions for GHCR: actions/delete-package-versions,
// snok/container-retention-policy, dataaxiom/ghcr-cleanup-action. A
// workflow step that uses one of them is a Policy; its @ref picks which
// version's behaviour the model follows.

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ghcrActions are the cleanup actions modelled, by their owner/name as
// `uses:` names them (lower case), each with the function that reads a
// step using it.
var ghcrActions = map[string]func(ghcrStep) Policy{
	"actions/delete-package-versions": newDeletePackageVersions,
	"snok/container-retention-policy": newSnok,
	"dataaxiom/ghcr-cleanup-action":   newGHCRCleanup,
}

// errNoGHCRStep is returned for a workflow none of whose steps uses a
// modelled action.
var errNoGHCRStep = errors.New("no step uses a GHCR cleanup action regcheck models (actions/delete-package-versions, snok/container-retention-policy, dataaxiom/ghcr-cleanup-action)")

// ghcrStep is one workflow step that runs a GHCR cleanup action.
type ghcrStep struct {
	file, action, ref string
	line              int
	with              map[string]string
}

// readWorkflow reads a GitHub Actions workflow: one Policy per step whose
// `uses:` is a modelled cleanup action, in the file's order.
func readWorkflow(file string, data []byte) ([]Policy, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("workflow: %w", err)
	}
	if len(doc.Content) == 0 {
		return nil, errNoGHCRStep
	}
	var ps []Policy
	for _, st := range workflowSteps(file, doc.Content[0]) {
		if newPolicy, ok := ghcrActions[st.action]; ok {
			ps = append(ps, newPolicy(st))
		}
	}
	if len(ps) == 0 {
		return nil, errNoGHCRStep
	}
	return ps, nil
}

// workflowSteps returns the steps of every job that `uses:` an action
// (owner/name@ref), in the file's order.
func workflowSteps(file string, root *yaml.Node) []ghcrStep {
	var out []ghcrStep
	jobs := mapValue(root, "jobs")
	if jobs == nil || jobs.Kind != yaml.MappingNode {
		return nil
	}
	for i := 1; i < len(jobs.Content); i += 2 {
		steps := mapValue(jobs.Content[i], "steps")
		if steps == nil || steps.Kind != yaml.SequenceNode {
			continue
		}
		for _, s := range steps.Content {
			s = deref(s)
			uses := mapValue(s, "uses")
			if uses == nil || uses.Kind != yaml.ScalarNode {
				continue
			}
			action, ref, ok := strings.Cut(strings.TrimSpace(uses.Value), "@")
			if !ok {
				continue
			}
			out = append(out, ghcrStep{file: file, line: s.Line, action: strings.ToLower(action), ref: ref, with: stepInputs(mapValue(s, "with"))})
		}
	}
	return out
}

// stepInputs are a step's `with:` inputs as text (what the runner hands
// the action).
func stepInputs(with *yaml.Node) map[string]string {
	in := map[string]string{}
	if with == nil || with.Kind != yaml.MappingNode {
		return in
	}
	for i := 0; i+1 < len(with.Content); i += 2 {
		in[deref(with.Content[i]).Value] = strings.TrimSpace(deref(with.Content[i+1]).Value)
	}
	return in
}

// deref follows an alias (`*x`) to the node its anchor (`&x`) names, as
// GitHub Actions does; any other node is itself.
func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// mapValue is the value of key in a mapping node, or nil; aliases are
// followed, to the mapping and to the value.
func mapValue(n *yaml.Node, key string) *yaml.Node {
	n = deref(n)
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if deref(n.Content[i]).Value == key {
			return deref(n.Content[i+1])
		}
	}
	return nil
}

// inputs reads a step's inputs as the action does, noting each input the
// model cannot know (a `${{ }}` expression) and what it assumed instead.
type inputs struct {
	with  map[string]string
	notes []string
}

// isExpr says whether v holds a workflow expression, known only when the
// workflow runs.
func isExpr(v string) bool { return strings.Contains(v, "${{") }

// raw is the input's text; ok is false when it is unset or empty. An
// expression is returned as it is, for callers that handle it.
func (in *inputs) raw(name string) (string, bool) {
	v, ok := in.with[name]
	return v, ok && v != ""
}

// known is the input's text, or def (noted) when it is an expression.
func (in *inputs) known(name, def string) string {
	v, ok := in.raw(name)
	if !ok {
		return def
	}
	if isExpr(v) {
		in.note(fmt.Sprintf("%s is an expression: modelled as %q", name, def))
		return def
	}
	return v
}

// boolean reads a true/false input as @actions/core's getBooleanInput
// does (true, True, TRUE; anything else false), or def when unset.
func (in *inputs) boolean(name string, def bool) bool {
	v := in.known(name, strconv.FormatBool(def))
	switch v {
	case "true", "True", "TRUE":
		return true
	case "false", "False", "FALSE":
		return false
	}
	in.note(fmt.Sprintf("%s %q is not a boolean: modelled as %t", name, v, def))
	return def
}

// integer reads a number input, or def (noted) when it is not a number.
func (in *inputs) integer(name string, def int) int {
	v := in.known(name, strconv.Itoa(def))
	n, err := strconv.Atoi(v)
	if err != nil {
		in.note(fmt.Sprintf("%s %q is not a number: modelled as %d", name, v, def))
		return def
	}
	return n
}

// unknown notes each input the action's version does not declare: the
// runner warns and the action never reads it.
func (in *inputs) unknown(version string, declared string) {
	known := map[string]bool{}
	for _, k := range strings.Fields(declared) {
		known[k] = true
	}
	for _, k := range sortedKeys(in.with) {
		if !known[k] {
			in.note(fmt.Sprintf("%s is not an input of %s: ignored", k, version))
		}
	}
}

// note records what the model assumed.
func (in *inputs) note(s string) { in.notes = append(in.notes, s) }

// list splits a comma (and, where sep says, whitespace) separated input.
func list(v string, whitespace bool) []string {
	f := strings.FieldsFunc(v, func(r rune) bool { return r == ',' || (whitespace && (r == ' ' || r == '\n' || r == '\t')) })
	out := f[:0]
	for _, s := range f {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
