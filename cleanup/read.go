package cleanup

import (
	"errors"
	"fmt"

	"sigs.k8s.io/yaml"
)

// ErrUnknownFormat is returned for a file that is none of the cleanups
// Read knows.
var ErrUnknownFormat = errors.New("not a cleanup regcheck knows (a GitHub Actions workflow using a GHCR cleanup action, an ECR lifecycle policy, a GitLab cleanup policy or a Harbor retention policy)")

// format is one kind of cleanup file: how to tell it apart by content, and
// how to read it.
type format struct {
	name   string
	detect func(doc map[string]any) bool
	read   func(file string, data []byte) ([]Policy, error)
}

// formats are tried in order; the first whose detect says yes reads the
// file.
var formats = []format{
	{"GitHub Actions workflow", isWorkflow, readWorkflow},
	{"ECR lifecycle policy", isECRPolicy, readECRPolicy},
	{"GitLab cleanup policy", isGitLabPolicy, readGitLabPolicy},
	{"Harbor retention policy", isHarborPolicy, readHarborPolicy},
}

// Read reads the cleanups one file configures, telling its format apart by
// content (YAML or JSON). A workflow may hold several cleanup steps, or
// none: a workflow with no step regcheck models is an error naming the
// file.
func Read(file string, data []byte) ([]Policy, error) {
	var doc map[string]any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	for _, f := range formats {
		if f.detect(doc) {
			ps, err := f.read(file, data)
			if err != nil {
				return nil, fmt.Errorf("%s (%s): %w", file, f.name, err)
			}
			return ps, nil
		}
	}
	return nil, fmt.Errorf("%s: %w", file, ErrUnknownFormat)
}

// isWorkflow: a GitHub Actions workflow has jobs.
func isWorkflow(doc map[string]any) bool {
	_, ok := doc["jobs"].(map[string]any)
	return ok
}

// isECRPolicy: the policy text has rules with a rulePriority or a
// selection; aws ecr get-lifecycle-policy wraps it as lifecyclePolicyText.
func isECRPolicy(doc map[string]any) bool {
	if _, ok := doc["lifecyclePolicyText"].(string); ok {
		return true
	}
	return rulesHave(doc, "rulePriority", "selection")
}

// isGitLabPolicy: the Projects API has container_expiration_policy; the
// policy alone has keep_n, older_than or name_regex.
func isGitLabPolicy(doc map[string]any) bool {
	if _, ok := doc["container_expiration_policy"].(map[string]any); ok {
		return true
	}
	for _, k := range []string{"keep_n", "older_than", "name_regex", "name_regex_delete", "name_regex_keep"} {
		if _, ok := doc[k]; ok {
			return true
		}
	}
	return false
}

// isHarborPolicy: a retention policy has rules with a template, or
// scope_selectors and tag_selectors.
func isHarborPolicy(doc map[string]any) bool {
	return rulesHave(doc, "template", "tag_selectors", "scope_selectors")
}

// rulesHave says whether doc["rules"] is a list whose first map has one of
// keys.
func rulesHave(doc map[string]any, keys ...string) bool {
	rules, ok := doc["rules"].([]any)
	if !ok || len(rules) == 0 {
		return false
	}
	r, ok := rules[0].(map[string]any)
	if !ok {
		return false
	}
	for _, k := range keys {
		if _, ok := r[k]; ok {
			return true
		}
	}
	return false
}
