package admission

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gobwas/glob"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/regcheck/regcheck/imageref"
	"github.com/regcheck/regcheck/types"
)

// Kyverno's ImageValidatingPolicy (policies.kyverno.io v1alpha1, v1beta1,
// v1; NamespacedImageValidatingPolicy for one namespace), read as
// Kyverno 1.19 evaluates it. The files followed, in
// github.com/kyverno/kyverno@v1.19.1:
//
//   - config/crds/policies.kyverno.io/policies.kyverno.io_imagevalidatingpolicies.yaml:
//     the fields and their defaults (validationConfigurations.required
//     and verifyDigest default true).
//   - pkg/image/verification/evaluator/policy.go (compiledPolicy.Evaluate):
//     the images of the object (pkg/cel/compiler/images.go: each
//     container's image field as written) are kept when any
//     matchImageReferences entry matches (none: every image); the
//     validations are evaluated in order and the first false refuses.
//   - pkg/cel/compiler/compiler.go, image.go: a glob is
//     github.com/gobwas/glob compiled without separators, matched on the
//     image string as written; an expression is CEL over ref.
//   - pkg/cel/libs/imageverify/impl.go: verifyImageSignatures(image,
//     [attestors...]) and verifyAttestationSignatures(image,
//     attestations.x, [attestors...]) return how many of the attestors
//     listed verify.
//   - pkg/image/verifiers/ivpol/cosign/verifier.go
//     (buildCheckOptsWithBundleDetection): sigstore bundles are read when
//     any exist (cosign.GetBundles), the legacy .sig tag otherwise; opts.go
//     (checkOptions): a key is cosign.key.data (the first PEM key, as
//     cryptoutils.UnmarshalPEMToPublicKey reads it) or key.kms; the log is
//     required unless ctlog.insecureIgnoreTlog; source.repository is where
//     the signatures are read.
//   - pkg/cel/policies/ivpol/autogen/autogen.go: a policy on Pods is
//     extended to the pod controllers (autogen.podControllers.controllers
//     narrows them).

// ivpSpec is what an ImageValidatingPolicy adds to its Rule.
type ivpSpec struct {
	actions []string    // validationActions as written
	globs   []glob.Glob // matchImageReferences[].glob, compiled as Kyverno does
	exprs   int         // matchImageReferences[].expression: CEL, not evaluated
	// unevaluated says what of the policy regcheck does not evaluate
	// (a validation of another shape, a referrer attestation): under
	// Deny, an image that meets the rest is unknown, never ok.
	unevaluated []string
}

// ivpKinds are the ImageValidatingPolicy kinds, by whether namespaced.
var ivpKinds = map[string]bool{"ImageValidatingPolicy": false, "NamespacedImageValidatingPolicy": true}

// isIVP reports whether apiVersion and kind are an ImageValidatingPolicy's.
func isIVP(apiVersion, kind string) bool {
	_, ok := ivpKinds[kind]
	return ok && strings.HasPrefix(apiVersion, "policies.kyverno.io/")
}

// ivpRule reads an ImageValidatingPolicy as one Rule; nil when it
// verifies nothing regcheck can see and evaluates nothing it cannot.
func ivpRule(obj *unstructured.Unstructured, source string) (*Rule, error) {
	spec, _, _ := unstructured.NestedMap(obj.Object, "spec")
	iv := &ivpSpec{actions: stringsAt(spec, "validationActions")}
	if len(iv.actions) == 0 {
		// None given is Deny (github.com/kyverno/api
		// api/policies.kyverno.io/v1beta1, ImageValidatingPolicySpec.ValidationActions).
		iv.actions = []string{"Deny"}
	}
	r := &Rule{Engine: Kyverno, Kind: obj.GetKind(), Name: obj.GetName(), Source: source, ivp: iv,
		Enforce: slices.ContainsFunc(iv.actions, func(a string) bool { return strings.EqualFold(a, "Deny") })}
	if ivpKinds[obj.GetKind()] {
		r.Namespace = obj.GetNamespace()
	}
	if err := iv.readImages(spec, r); err != nil {
		return nil, err
	}
	match, create, err := ivpMatch(spec)
	if err != nil {
		return nil, err
	}
	if !create {
		return nil, nil // a restart's pod is created: a policy without CREATE never sees it
	}
	r.match, r.autogen = match, ivpAutogen(spec)
	n := iv.readValidations(spec)
	if n.Signature || len(n.Predicates) > 0 {
		r.Alternatives = []Needs{n}
	}
	if len(r.Alternatives) == 0 && len(iv.unevaluated) == 0 {
		return nil, nil
	}
	return r, nil
}

// readImages reads matchImageReferences.
func (iv *ivpSpec) readImages(spec map[string]any, r *Rule) error {
	refs, _, _ := unstructured.NestedSlice(spec, "matchImageReferences")
	for i, raw := range refs {
		m, _ := raw.(map[string]any)
		g, _, _ := unstructured.NestedString(m, "glob")
		e, _, _ := unstructured.NestedString(m, "expression")
		switch {
		case len(g) > MaxGlobLength:
			return fmt.Errorf("spec.matchImageReferences[%d].glob: %d bytes, longer than the %d regcheck reads (no image name is that long)", i, len(g), MaxGlobLength)
		case g != "":
			c, err := glob.Compile(g)
			if err != nil {
				return fmt.Errorf("spec.matchImageReferences[%d].glob: %w", i, err)
			}
			iv.globs = append(iv.globs, c)
			r.Images = append(r.Images, g)
		case e != "":
			iv.exprs++
		}
	}
	return nil
}

// matchImage says whether the policy keeps the image as written: by a
// glob; by an expression, which is not evaluated (unsure); or, with no
// matchImageReferences, every image.
func (iv *ivpSpec) matchImage(written string) (ok, unsure bool) {
	if len(iv.globs) == 0 && iv.exprs == 0 {
		return true, false
	}
	for _, g := range iv.globs {
		if g.Match(written) {
			return true, false
		}
	}
	return iv.exprs > 0, iv.exprs > 0
}

// ivpResourceKinds are the kinds of the resources a matchConstraints
// rule names, by resource.
var ivpResourceKinds = map[string]string{
	"pods": "Pod", "deployments": "Deployment", "replicasets": "ReplicaSet", "statefulsets": "StatefulSet",
	"daemonsets": "DaemonSet", "jobs": "Job", "cronjobs": "CronJob", "replicationcontrollers": "ReplicationController",
}

// ivpMatch reads matchConstraints as a Kyverno filter: the kinds of its
// resourceRules (a resource "*" or "pods/*" matches as a wildcard kind),
// its namespaceSelector, and its objectSelector (the pod's own labels,
// which a use does not carry: unsure). create: some rule admits CREATE.
// excludeResourceRules are not read.
func ivpMatch(spec map[string]any) (*filter, bool, error) {
	mc, ok, _ := unstructured.NestedMap(spec, "matchConstraints")
	if !ok {
		return nil, true, nil
	}
	rf := resourceFilter{}
	_, rf.ByObject = mc["objectSelector"]
	if sel, ok, _ := unstructured.NestedMap(mc, "namespaceSelector"); ok && len(sel) > 0 {
		s, err := selectorOf(sel)
		if err != nil {
			return nil, false, fmt.Errorf("spec.matchConstraints: %w", err)
		}
		rf.Selector = s
	}
	rules, _, _ := unstructured.NestedSlice(mc, "resourceRules")
	create := len(rules) == 0
	for _, raw := range rules {
		m, _ := raw.(map[string]any)
		ops := stringsAt(m, "operations")
		if !slices.Contains(ops, "CREATE") && !slices.Contains(ops, "*") {
			continue
		}
		create = true
		for _, res := range stringsAt(m, "resources") {
			switch k, known := ivpResourceKinds[res]; {
			case known:
				rf.Kinds = append(rf.Kinds, k)
			case res == "*" || res == "*/*":
				rf.Kinds = append(rf.Kinds, "*")
			}
		}
	}
	if len(rules) > 0 && len(rf.Kinds) == 0 {
		return nil, false, nil // only other resources: no pod is selected
	}
	return &filter{Any: []resourceFilter{rf}}, create, nil
}

// ivpAutogen are the controllers a Pod policy extends to:
// autogen.podControllers.controllers (resources) when given, else all.
func ivpAutogen(spec map[string]any) []string {
	list, ok, _ := unstructured.NestedStringSlice(spec, "autogen", "podControllers", "controllers")
	if !ok {
		return podControllers
	}
	var out []string
	for _, c := range list {
		if k, ok := ivpResourceKinds[c]; ok {
			out = append(out, k)
		}
	}
	return out
}

// mode is the policy's validationActions, as written (Deny when none
// is).
func (iv *ivpSpec) mode() string {
	return strings.Join(iv.actions, ",")
}

// notEvaluated is, under Deny, what regcheck leaves undecided about an
// image that meets the rest of the policy: an image matched only by an
// expression, a validation not evaluated. It is unknown, never ok.
func (ru *ruleUses) notEvaluated(im *types.Image) []types.Finding {
	iv := ru.rule.ivp
	if iv == nil || !ru.enforce {
		return nil
	}
	var what []string
	if ru.exprOnly(im.Reference) {
		what = append(what, "whether its matchImageReferences expressions select the image (CEL, not evaluated)")
	}
	what = append(what, iv.unevaluated...)
	if len(what) == 0 {
		return nil
	}
	code := types.SignatureUnverifiable
	return []types.Finding{types.NewAdvisedFinding(code, im.Digest, "",
		fmt.Sprintf("%s, for %s: regcheck does not evaluate %s; what it does evaluate passes, so whether the pod is admitted is not known",
			ru.rule.named(), usesText(ru.uses), strings.Join(what, "; ")),
		"evaluate the policy with kyverno apply, or write its validations in the documented shapes (images.containers.map(image, verifyImageSignatures(image, [attestors.x])).all(e, e > 0))")}
}

// exprOnly: no use's image (as written, else ref) is matched by a glob,
// only possibly by an expression.
func (ru *ruleUses) exprOnly(ref string) bool {
	iv := ru.rule.ivp
	if iv.exprs == 0 {
		return false
	}
	for _, u := range ru.uses {
		if ok, unsure := iv.matchImage(written(u, ref)); ok && !unsure {
			return false
		}
	}
	return true
}

// written is the image as the use wrote it, else ref.
func written(u types.Use, ref string) string {
	if u.Written != "" {
		return u.Written
	}
	return ref
}

// ivpApplies says whether an ImageValidatingPolicy covers u's image and
// resource: a namespaced one only in its namespace; the image as written
// kept by matchImageReferences (an expression: unsure); matchConstraints
// as a Kyverno filter over the Pod and, by autogen, its controller.
func (ps *Policies) ivpApplies(r *Rule, u types.Use, ref imageref.Ref) (ok, unsure, workload bool) {
	if ivpKinds[r.Kind] && r.Namespace != namespaceOf(u) {
		return false, false, false
	}
	ok, byExpr := r.ivp.matchImage(written(u, ref.Normalized()))
	if !ok {
		return false, false, false
	}
	ok, unsure, workload = ps.kyvernoSelects(r, u)
	return ok, unsure || byExpr, workload
}
