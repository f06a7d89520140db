package metrics

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"text/template"

	"go.yaml.in/yaml/v3"

	"github.com/regcheck/regcheck/types"
)

// Rule is one Prometheus alerting rule.
type Rule struct {
	Alert       string            `yaml:"alert"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for,omitempty"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

// RuleGroup is a named group of rules, as a rule file and a
// PrometheusRule's spec hold them.
type RuleGroup struct {
	Name  string `yaml:"name"`
	Rules []Rule `yaml:"rules"`
}

// Durations the alerts wait. A nightly run replaces its series every 24
// hours: a fault still there after FaultFor was there on two runs in a row.
const (
	FaultFor = "25h"
	// StaleHours: no successful run for this long is an alert.
	StaleHours = 26
)

// Templates the annotations share: the series' labels, and who runs the
// image, named from them (a use from no workload, an argument, says so).
const (
	image    = "{{ $labels." + LabelImage + " }}"
	code     = "{{ $labels." + LabelCode + " }}"
	command  = "{{ $labels." + LabelCommand + " }}"
	workload = "{{ with $labels." + LabelWorkload + " }}{{ $labels." + LabelWorkloadKind + " }} {{ $labels." + LabelNamespace + " }}/{{ . }} (container {{ $labels." + LabelContainer + " }}){{ else }}an image given to regcheck by name{{ end }}"
)

// selector is a series selector: the family's name and one label matcher
// (op "=" or "=~").
func selector(n Name, label, op, value string) string {
	return fmt.Sprintf("%s{%s%s%q}", n, label, op, value)
}

// class is one alert per finding code.
type class struct {
	code     types.Code
	name     string
	severity string // the alert's severity label
	class    string // broken, at-risk
	// summary says what is wrong, description what it means and what to run.
	summary, description string
}

// findingClasses are the alerts on UseFindings, one per code
// that a person must act on. The descriptions say what to run.
var findingClasses = []class{
	{types.ChildMissing, "RegcheckChildMissing", "critical", "broken",
		workload + " uses " + image + ": the tag resolves but its platform manifest is gone",
		"The index " + image + " lists {{ $value }} platform manifest(s) the registry no longer serves (child-missing), typically after a registry garbage collection with --delete-untagged. " +
			"The pod runs from the node's image cache and its next pull fails with manifest unknown: " +
			"the tag resolves but its platform manifest is gone; rebuild and push, or `regcheck rescue " + image + "`, and do not restart the pod until then. " +
			"`regcheck scan " + image + "` names the missing platforms and digests."},
	{types.BlobMissing, "RegcheckBlobMissing", "critical", "broken",
		workload + " uses " + image + ": a layer or config blob is gone",
		"The manifest of " + image + " resolves but {{ $value }} blob(s) it needs are gone from the registry (blob-missing): a node that does not hold them cannot pull it. " +
			"Rebuild and push the image (or `regcheck rescue " + image + "` from a node that still holds the blobs), and do not restart the pod until then. " +
			"`regcheck scan " + image + "` names the blobs."},
	{types.ManifestMissing, "RegcheckManifestMissing", "critical", "broken",
		workload + " uses " + image + ": the digest is gone from the registry",
		"The digest " + image + " points at (pinned, or the tag's target) no longer exists (manifest-missing): no node without it in cache can start the pod. " +
			"Rebuild and push, then pin the workload to the new digest (`regcheck pin --update --write MANIFESTS/`), or `regcheck rescue " + image + "` to put the same digest back; do not restart the pod until then."},
	{types.TagMissing, "RegcheckTagMissing", "critical", "broken",
		workload + " uses " + image + ": the tag does not exist",
		"The tag of " + image + " is not in the registry (tag-missing): the next pull of it fails. " +
			"Push the tag again, or point the workload at a tag that exists (`regcheck pin --from-cluster -A --write MANIFESTS/` pins it to the digest that runs now); do not restart the pod until then."},
	{types.DigestMismatch, "RegcheckDigestMismatch", "critical", "broken",
		workload + " uses " + image + ": the registry serves bytes that do not match the digest",
		"The registry answered for " + image + " with bytes that do not hash to the digest asked for (digest-mismatch): a node refuses them. " +
			"Check for a proxy or a corrupt store in front of the registry, then rebuild and push; `regcheck scan " + image + "` shows which manifest or blob."},
	{types.InvalidReference, "RegcheckInvalidReference", "critical", "broken",
		workload + " names an image reference that does not parse: " + image,
		"The image reference " + image + " cannot be parsed (invalid-reference): no node can pull it. Fix the reference in the workload's manifest."},
	{types.Drift, "RegcheckDrift", "warning", "at-risk",
		workload + " runs another digest than " + image + " resolves to now",
		"The tag " + image + " has moved since the container started (drift): its next restart runs other bits. " +
			"Pin the workload to the digest it runs (`regcheck pin --from-cluster -A --write MANIFESTS/`, or `--from-records` with `regcheck record`'s history) or roll it out deliberately; `regcheck record --diff` shows what changed."},
	{types.RunningDigestMissing, "RegcheckRunningDigestMissing", "warning", "at-risk",
		workload + " runs a digest of " + image + " the registry no longer has",
		"The digest the container runs is gone from the registry (running-digest-missing): only node caches hold it, and a restart on another node pulls whatever the tag says now, or fails. " +
			"Put it back with `regcheck rescue " + image + "` from a node that runs it, or rebuild and push and pin the workload to the new digest; do not drain the node until then."},
	{types.PullAlwaysMutable, "RegcheckPullAlwaysMutable", "warning", "at-risk",
		workload + " pulls the tag " + image + " on every start (imagePullPolicy: Always)",
		"With imagePullPolicy Always on a tag (pull-always-mutable), every restart runs whatever the tag points at then. " +
			"Pin the image by digest (`regcheck pin --from-cluster -A --write MANIFESTS/`) or set the policy (`regcheck pin --pull-policy IfNotPresent --write MANIFESTS/`); `regcheck record` keeps the digest to roll back to."},
	{types.AttestationMissing, "RegcheckAttestationMissing", "warning", "at-risk",
		workload + " uses " + image + ": its attestation manifest is gone",
		"Only the attestation manifests of " + image + " are gone (attestation-missing): the image still runs, but provenance and SBOM checks of it fail. " +
			"Rebuild and push to restore them; a registry garbage collection with --delete-untagged on distribution 2.x deletes them again (`regcheck gc-check` before the next one)."},
	{types.PinnedDigestUntagged, "RegcheckPinnedDigestUntagged", "warning", "at-risk",
		workload + " is pinned to a digest of " + image + " that no tag points at",
		"No tag points at the pinned digest of " + image + " (pinned-digest-untagged): a registry garbage collection with --delete-untagged deletes it, and the pod cannot start again. " +
			"Tag the digest in the registry, or pin to a tagged digest (`regcheck pin --update --write MANIFESTS/`); check with `regcheck gc-check` before the next collection."},
}

// faultCodes are the codes that say a registry could not be asked.
func faultCodes() []string {
	var out []string
	for _, c := range types.Codes() {
		if c.Fault() {
			out = append(out, string(c))
		}
	}
	return out
}

// faultAdvice is a template that says, for the code label, what to do.
func faultAdvice() string {
	var b strings.Builder
	for i, c := range faultCodes() {
		if i == 0 {
			b.WriteString("{{ if ")
		} else {
			b.WriteString("{{ else if ")
		}
		advice := strings.TrimSuffix(types.Code(c).Advice("", ""), ".")
		fmt.Fprintf(&b, "eq $labels.%s %q }}%s", LabelCode, c, strings.ToUpper(advice[:1])+advice[1:])
	}
	b.WriteString("{{ end }}")
	return b.String()
}

// Rules returns regcheck's alerting rules: one per finding class (each
// code a person must act on; faults; inputs not read) and one for a run
// that has not succeeded. deploy/prometheus/ holds them as a rule file and
// as a PrometheusRule.
func Rules() []RuleGroup {
	var findings []Rule
	for _, c := range findingClasses {
		findings = append(findings, Rule{
			Alert:       c.name,
			Expr:        selector(UseFindings, LabelCode, "=", string(c.code)) + " > 0",
			Labels:      map[string]string{"severity": c.severity, "class": c.class},
			Annotations: map[string]string{"summary": c.summary, "description": c.description},
		})
	}
	unknown := []Rule{
		{
			Alert:  "RegcheckImageUnknown",
			Expr:   selector(UseFindings, LabelCode, "=~", strings.Join(faultCodes(), "|")) + " > 0",
			For:    FaultFor,
			Labels: map[string]string{"severity": "warning", "class": "unknown"},
			Annotations: map[string]string{
				"summary": workload + " uses " + image + ", which regcheck could not check for " + FaultFor + " (" + code + ")",
				"description": "The registry of " + image + " could not be asked (" + code + ") on every run for " + FaultFor + ": whether a node can still pull it is unknown. " +
					faultAdvice() + ". Then run `regcheck scan " + image + "` to see the verdict.",
			},
		},
		{
			Alert:  "RegcheckInputsNotRead",
			Expr:   selector(InputsSkipped, LabelKind, "=", SkippedError) + " > 0",
			For:    FaultFor,
			Labels: map[string]string{"severity": "warning", "class": "unknown"},
			Annotations: map[string]string{
				"summary": "regcheck could not read {{ $value }} of its inputs for " + FaultFor,
				"description": "Files or lines regcheck was told to read could not be read (a manifest that does not parse, a file that cannot be opened), so the images they name were not checked. " +
					selector(InputSkippedInfo, LabelKind, "=", SkippedError) + " names each file; `regcheck scan -f FILE` says what is wrong with it.",
			},
		},
	}
	stale := []Rule{
		{
			Alert:  "RegcheckNoRecentSuccess",
			Expr:   fmt.Sprintf(`(time() - %s) / 3600 > %d`, LastSuccess, StaleHours),
			Labels: map[string]string{"severity": "warning", "class": "stale"},
			Annotations: map[string]string{
				"summary": "regcheck " + command + " has not succeeded for {{ printf \"%.0f\" $value }} hours",
				"description": fmt.Sprintf("No run of regcheck "+command+" has finished for over %d hours, so every other regcheck alert is out of date: an image broken since then is not reported. ", StaleHours) +
					"Look at the last runs of the CronJob (`kubectl -n regcheck get jobs`, then `kubectl -n regcheck logs job/NAME`): exit 2 is a flag or configuration error, 3 a cluster or registry it could not read; a run that ends without pushing its metrics leaves this alert on.",
			},
		},
		{
			Alert:  "RegcheckNeverSucceeded",
			Expr:   "absent(" + selector(LastSuccess, LabelCommand, "=", CommandScan) + ")",
			For:    fmt.Sprintf("%dh", StaleHours),
			Labels: map[string]string{"severity": "warning", "class": "stale"},
			Annotations: map[string]string{
				"summary": fmt.Sprintf("no regcheck scan has reported its metrics for %d hours", StaleHours),
				"description": "Prometheus has no " + selector(LastSuccess, LabelCommand, "=", CommandScan) + ": regcheck scan has not run, has never finished, or its metrics are not collected. " +
					"Check the CronJob (`kubectl -n regcheck get cronjobs,jobs`), that it runs `regcheck scan --pushgateway URL` or `--metrics-file`, and that Prometheus scrapes that Pushgateway (with honor_labels: true) or node_exporter.",
			},
		},
	}
	return []RuleGroup{
		{Name: "regcheck-broken-and-at-risk", Rules: findings},
		{Name: "regcheck-unknown", Rules: unknown},
		{Name: "regcheck-stale", Rules: stale},
		{Name: "regcheck-watch", Rules: []Rule{unplannedUpgrade()}},
	}
}

// unplannedUpgrade is the alert on regcheck watch's
// regcheck_unplanned_upgrade: a running digest changed while the image
// string did not.
func unplannedUpgrade() Rule {
	l := func(name string) string { return "{{ $labels." + name + " }}" }
	owner := l(LabelOwnerKind) + " " + l(LabelNamespace) + "/" + l(LabelOwnerName) + " (container " + l(LabelContainer) + ")"
	history := "<(kubectl -n regcheck get configmap regcheck-history -o jsonpath='{.data.history\\.json}')"
	return Rule{
		Alert:  "RegcheckUnplannedUpgrade",
		Expr:   string(UnplannedUpgrade) + " == 1",
		Labels: map[string]string{"severity": "warning", "class": "at-risk"},
		Annotations: map[string]string{
			"summary": owner + " runs other bits than before while its image string did not change",
			"description": owner + " runs " + l(LabelTo) + " instead of " + l(LabelFrom) + ", and nobody changed its image string (unplanned-upgrade): a tag moved, then a restart or a reschedule pulled it. " +
				"regcheck watch's log says whether the previous digest is still whole in the registry and whether a crash loop began with the change. " +
				"To go back to " + l(LabelFrom) + ": `regcheck pin --from-records " + history + " --records-at TIME --write PATH` pins the manifests under PATH to the digest each container ran at TIME (and refuses one that is no longer whole), then apply them; " +
				"regcheck watch's warning for this change, and its unplanned-upgrade finding, give that command with TIME filled in (the millisecond before the change). " +
				"To keep the new bits, the same pin without `--records-at` pins to " + l(LabelTo) + ".",
		},
	}
}

// header heads the rule file: it is written by a test, not by hand. The
// Helm chart's PrometheusRule (charts/regcheck) carries the file as it is.
const header = "# Generated from metrics/rules.go by `go test ./metrics -run TestRulesFiles -update`: edit that, not this.\n" +
	"# regcheck's alerts: one per finding class, each naming the workload and image and saying what to run.\n"

// RuleFile returns the rules as a Prometheus rule file (rule_files:).
func RuleFile() ([]byte, error) {
	return encode(map[string]any{"groups": Rules()})
}

func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(header)
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Alerts lists the alerts' names, in the files' order.
func Alerts() []string {
	var out []string
	for _, g := range Rules() {
		for _, r := range g.Rules {
			out = append(out, r.Alert)
		}
	}
	return slices.Clip(out)
}

// Render renders an annotation template as Prometheus does, for the
// series labels and the alert's value, with Go's text/template: the
// templates use no function of Prometheus's own, so the two agree.
func Render(text string, labels map[string]string, value float64) (string, error) {
	tmpl, err := template.New("").Option("missingkey=zero").Parse("{{$labels := .Labels}}{{$value := .Value}}" + text)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	err = tmpl.Execute(&b, struct {
		Labels map[string]string
		Value  float64
	}{labels, value})
	return b.String(), err
}
