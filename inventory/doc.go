// Package inventory lists the containers a Kubernetes cluster runs and will run, with the image each one was asked for and the digest it actually runs.
package inventory
