// Package render reads a tree as kustomize and Helm deploy it, and says where each image reference it renders is set.
package render
