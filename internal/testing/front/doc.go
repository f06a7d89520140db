// Package front is a reverse proxy in front of a registry that answers blob HEADs as a named product's front does (Harbor's proxy cache, Artifactory, ECR Public), for tests.
package front
