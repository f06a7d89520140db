// Package yamlfile finds container image references in Kubernetes (workload custom resources and GitOps objects included), docker-compose and kustomization YAML files.
package yamlfile
