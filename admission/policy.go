package admission

import (
	"fmt"
	"path"
)

// Engine is the admission controller a policy is written for.
type Engine string

// Engines whose image policies are read.
const (
	Kyverno          Engine = "kyverno"
	PolicyController Engine = "policy-controller"
)

// Format is the signature layout a rule verifies.
type Format string

// Formats: cosign's legacy .sig/.att tags, the sigstore bundle as an OCI
// 1.1 referrer, or either.
const (
	AnyFormat Format = ""
	Legacy    Format = "legacy"
	Bundle    Format = "bundle"
)

// Needs is one set of artifacts that, all present and whole, lets a rule
// admit an image.
type Needs struct {
	// Signature: a signature of the image's digest.
	Signature bool
	// Predicates: an attestation of each of these predicate types.
	Predicates []string
	// Format is the layout the engine looks in.
	Format Format
	// Sets are the attestor sets the signature is verified against,
	// every one of which must pass (a Kyverno rule's attestors; a
	// policy-controller authority's key, one set of one entry); none:
	// presence alone is checked.
	Sets []AttestorSet
	// Repository is where the engine reads the signatures and
	// attestations when not beside the image (Kyverno's repository, as
	// cosign's COSIGN_REPOSITORY; policy-controller's source[].oci); ""
	// is the image's own repository.
	Repository string
	// Attestations are the attestations verified against their
	// attestors (Kyverno attestations[].attestors, or the rule's; a
	// policy-controller authority's key); one with no attestor sets is
	// checked for presence alone (Predicates).
	Attestations []Attestation
	// PerEntry: the attestor entries name different repositories
	// (Kyverno entries[].repository), so presence is not judged in one
	// place: each entry's verification looks in its own.
	PerEntry bool
	// refusal, when not nil, is the engine's own error for this
	// alternative, given before it reads any signature or attestation
	// (refusal.go): it admits nothing, whatever the image has.
	refusal *engineRefusal
}

// Rule is one image-verifying rule: a Kyverno verifyImages entry, or a
// ClusterImagePolicy.
type Rule struct {
	Engine Engine
	// Kind, Namespace and Name are the policy object's; Rule is the
	// Kyverno rule's name ("" for a ClusterImagePolicy).
	Kind      string
	Namespace string
	Name      string
	Rule      string
	// Source is where the policy was read: "cluster", or file:line.
	Source string
	// Enforce: a failing image is refused; otherwise it is audited (Kyverno
	// Audit, policy-controller warn) and admitted.
	Enforce bool
	// Images and Skip are the image patterns the rule covers and those it
	// leaves out, in the engine's syntax.
	Images []string
	Skip   []string
	// Alternatives: the image is admitted when any one is met (a
	// ClusterImagePolicy's authorities); a Kyverno rule has one.
	Alternatives []Needs
	// Conditions names the policy-level check the engine makes once an
	// alternative is met and regcheck does not evaluate (a
	// ClusterImagePolicy's spec.policy, CUE or Rego): "" when none.
	Conditions string

	match, exclude *filter          // Kyverno's match and exclude
	overrides      []actionOverride // Kyverno: the spec's per-namespace actions, when the rule sets none
	autogen        []string
	optIn          bool       // policy-controller: only in namespaces labelled policy.sigstore.dev/include=true
	resources      []cipMatch // policy-controller: spec.match; none selects every resource
	ivp            *ivpSpec   // Kyverno ImageValidatingPolicy (ivp.go); nil for the other kinds
	digestRequired bool       // Kyverno: an image written without a digest is refused (digest.go)
}

// Mode names the rule's failure action in its engine's words.
func (r *Rule) Mode() string {
	switch {
	case r.ivp != nil:
		return r.ivp.mode()
	case r.Engine == Kyverno && r.Enforce:
		return "Enforce"
	case r.Engine == Kyverno:
		return "Audit"
	case r.Enforce:
		return "enforce"
	}
	return "warn"
}

// String names the rule for people: "kyverno ClusterPolicy
// check-signed, rule verify (Enforce)".
func (r *Rule) String() string {
	s := fmt.Sprintf("%s %s %s", r.Engine, r.Kind, path.Join(r.Namespace, r.Name))
	if r.Rule != "" {
		s += ", rule " + r.Rule
	}
	return s + " (" + r.Mode() + ")"
}

// Policies are the rules read from a cluster or files, and what is known
// of the namespaces they select by label.
type Policies struct {
	Rules []*Rule
	// TrustRoots are the policy-controller TrustRoots read, by name.
	TrustRoots map[string]TrustRootKeys
	// Labels are the namespaces' labels, by name.
	Labels map[string]map[string]string
	// LabelsKnown: every namespace is in Labels (a cluster's list); from
	// files, only the Namespace objects among them are.
	LabelsKnown bool
}

// Problem is something that kept a policy from being read: Warning when
// the result may be incomplete (a forbidden list, a policy that does not
// parse), a notice otherwise (an engine whose CRDs are not installed).
type Problem struct {
	Warning bool
	Source  string
	Line    int
	Message string
}

// named is String with where the policy was read, when from a file.
func (r *Rule) named() string {
	if r.Source == "" || r.Source == "cluster" {
		return r.String()
	}
	return r.String() + " (" + r.Source + ")"
}
