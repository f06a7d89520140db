// Package yamlfile finds container image references in Kubernetes, docker-compose and kustomization YAML files.
package yamlfile
