package cleanup

// ECR lifecycle policies: reading the policy (its text, or what
// `aws ecr get-lifecycle-policy` prints) and checking it as ECR does when
// the policy is put. The evaluation is in ecr_run.go.
//
// Sources read (2026-12-03): AWS's "Lifecycle policy properties in Amazon
// ECR" (lifecycle_policy_parameters), "Examples of lifecycle policies"
// (lifecycle_policy_examples: the selection's storageClass, countType
// sinceImagePulled and sinceImageTransitioned, action transition with
// targetStorageClass archive), "Archiving an image" (archive-image: an
// archived image's pull answers 404; describe-images shows it ARCHIVED),
// the API reference's ImageDetail (imageStatus ACTIVE | ARCHIVED |
// ACTIVATING), and the evaluation rules AWS lists for lifecycle policies
// as copied into the Pulumi awsx LifecyclePolicyRule documentation.

import (
	"fmt"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// ecrPolicy is one ECR lifecycle policy: its rules sorted by rulePriority.
type ecrPolicy struct {
	file string
	// repository is the repositoryName get-lifecycle-policy names; empty
	// for the bare policy text.
	repository string
	rules      []ecrRule
}

// ecrRule is one rule of the policy as written.
type ecrRule struct {
	// index is the rule's place in the file's rules list.
	index       int
	Priority    int          `json:"rulePriority"`
	Description string       `json:"description"`
	Selection   ecrSelection `json:"selection"`
	Action      ecrAction    `json:"action"`
}

type ecrSelection struct {
	TagStatus      string   `json:"tagStatus"`
	TagPrefixList  []string `json:"tagPrefixList"`
	TagPatternList []string `json:"tagPatternList"`
	// StorageClass is the class the rule selects from: "standard" (the
	// default) or "archive".
	StorageClass string `json:"storageClass"`
	CountType    string `json:"countType"`
	CountUnit    string `json:"countUnit"`
	CountNumber  int    `json:"countNumber"`
}

type ecrAction struct {
	Type               string `json:"type"`
	TargetStorageClass string `json:"targetStorageClass"`
}

// ecrGetOutput is what `aws ecr get-lifecycle-policy` prints.
type ecrGetOutput struct {
	RegistryID          string `json:"registryId"`
	RepositoryName      string `json:"repositoryName"`
	LifecyclePolicyText string `json:"lifecyclePolicyText"`
}

// readECRPolicy reads an ECR lifecycle policy: the text itself
// ({"rules":[...]}) or get-lifecycle-policy's output wrapping it.
func readECRPolicy(file string, data []byte) ([]Policy, error) {
	var out ecrGetOutput
	if err := yaml.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("reading the policy: %w", err)
	}
	p := &ecrPolicy{file: file, repository: out.RepositoryName}
	text := data
	if out.LifecyclePolicyText != "" {
		text = []byte(out.LifecyclePolicyText)
	}
	var body struct {
		Rules []ecrRule `json:"rules"`
	}
	if err := yaml.Unmarshal(text, &body); err != nil {
		return nil, fmt.Errorf("reading lifecyclePolicyText: %w", err)
	}
	for i := range body.Rules {
		body.Rules[i].index = i
	}
	p.rules = body.Rules
	if err := p.check(); err != nil {
		return nil, err
	}
	sort.Slice(p.rules, func(i, j int) bool { return p.rules[i].Priority < p.rules[j].Priority })
	return []Policy{p}, nil
}

// check refuses a policy ECR would refuse, so that the model never runs
// rules whose meaning AWS does not define.
func (p *ecrPolicy) check() error {
	if len(p.rules) == 0 {
		return fmt.Errorf("the policy has no rules")
	}
	seen := map[int]bool{}
	maxPriority := p.rules[0].Priority
	for _, r := range p.rules {
		if seen[r.Priority] {
			return fmt.Errorf("%s: rulePriority %d is not unique", r.name(), r.Priority)
		}
		seen[r.Priority] = true
		maxPriority = max(maxPriority, r.Priority)
		if err := r.check(); err != nil {
			return fmt.Errorf("%s: %w", r.name(), err)
		}
	}
	for _, r := range p.rules {
		if r.Selection.TagStatus == "any" && r.Priority != maxPriority {
			return fmt.Errorf("%s: a rule with tagStatus any must have the highest rulePriority", r.name())
		}
	}
	return nil
}

// check refuses one rule AWS documents as invalid.
func (r ecrRule) check() error {
	s := r.Selection
	switch s.TagStatus {
	case "tagged":
		if len(s.TagPrefixList) == 0 && len(s.TagPatternList) == 0 {
			return fmt.Errorf("tagStatus tagged needs tagPrefixList or tagPatternList")
		}
	case "untagged", "any":
		if len(s.TagPrefixList) > 0 || len(s.TagPatternList) > 0 {
			return fmt.Errorf("tagStatus %s takes no tagPrefixList or tagPatternList", s.TagStatus)
		}
	default:
		return fmt.Errorf("tagStatus %q is none of tagged, untagged, any", s.TagStatus)
	}
	switch s.CountType {
	case "imageCountMoreThan":
	case "sinceImagePushed", "sinceImagePulled", "sinceImageTransitioned":
		if s.CountUnit != "days" {
			return fmt.Errorf("countType %s needs countUnit days, not %q", s.CountType, s.CountUnit)
		}
	default:
		return fmt.Errorf("countType %q is not one ECR knows", s.CountType)
	}
	if s.CountNumber < 1 {
		return fmt.Errorf("countNumber must be at least 1, not %d", s.CountNumber)
	}
	if s.CountType != "imageCountMoreThan" && s.CountNumber > maxDays {
		return fmt.Errorf("countNumber %d days is out of range (at most %d, about 292 years)", s.CountNumber, maxDays)
	}
	for _, p := range s.TagPatternList {
		if n := strings.Count(p, "*"); n > maxECRWildcards {
			return fmt.Errorf("tagPatternList entry %q has %d wildcards: ECR allows %d", p, n, maxECRWildcards)
		}
	}
	switch s.StorageClass {
	case "", "standard", "archive":
	default:
		return fmt.Errorf("storageClass %q is neither standard nor archive", s.StorageClass)
	}
	switch r.Action.Type {
	case "expire":
	case "transition":
		if !strings.EqualFold(r.Action.TargetStorageClass, "archive") {
			return fmt.Errorf("action transition needs targetStorageClass archive, not %q", r.Action.TargetStorageClass)
		}
		if r.archiveClass() {
			return fmt.Errorf("action transition selects from the standard storage class only")
		}
	default:
		return fmt.Errorf("action type %q is neither expire nor transition", r.Action.Type)
	}
	return nil
}

// archiveClass says the rule selects archived images.
func (r ecrRule) archiveClass() bool { return strings.EqualFold(r.Selection.StorageClass, "archive") }

// name is how a person finds the rule in the file.
func (r ecrRule) name() string {
	return fmt.Sprintf("rules[%d] (rulePriority %d)", r.index, r.Priority)
}

// text is the rule in the policy's words.
func (r ecrRule) text() string {
	s := r.Selection
	parts := []string{"tagStatus " + s.TagStatus}
	if len(s.TagPrefixList) > 0 {
		parts = append(parts, fmt.Sprintf("tagPrefixList %q", s.TagPrefixList))
	}
	if len(s.TagPatternList) > 0 {
		parts = append(parts, fmt.Sprintf("tagPatternList %q", s.TagPatternList))
	}
	if r.archiveClass() {
		parts = append(parts, "storageClass archive")
	}
	if s.CountType == "imageCountMoreThan" {
		parts = append(parts, fmt.Sprintf("imageCountMoreThan %d", s.CountNumber))
	} else {
		parts = append(parts, fmt.Sprintf("%s %d %s", s.CountType, s.CountNumber, s.CountUnit))
	}
	act := r.Action.Type
	if act == "transition" {
		act = "transition to archive"
	}
	parts = append(parts, act)
	return r.name() + ": " + strings.Join(parts, ", ")
}

// Name says which cleanup this is and what it applies to.
func (p *ecrPolicy) Name() string {
	if p.repository == "" {
		return "ECR lifecycle policy (the policy text alone: applied to every repository)"
	}
	return "ECR lifecycle policy of " + p.repository
}

// Source is the file the policy was read from.
func (p *ecrPolicy) Source() string { return p.file }

// Applies says whether the policy is the repository's: the one
// get-lifecycle-policy named, or any repository for the bare text.
func (p *ecrPolicy) Applies(repository string) bool {
	return p.repository == "" || p.repository == repository
}
