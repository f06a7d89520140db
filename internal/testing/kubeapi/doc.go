// Package kubeapi runs a real kube-apiserver and etcd on loopback for tests, and creates the workloads they inspect.
package kubeapi
