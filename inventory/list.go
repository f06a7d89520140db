package inventory

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/regcheck/regcheck/internal/kubelist"
)

// pageSize is the Limit of every typed list call, as kubelist.PageSize
// is of the dynamic ones; List follows continue tokens.
const pageSize = kubelist.PageSize

// workloads are the objects List reads in one namespace, or in all.
type workloads struct {
	pods         []corev1.Pod
	deployments  []appsv1.Deployment
	replicaSets  []appsv1.ReplicaSet
	statefulSets []appsv1.StatefulSet
	daemonSets   []appsv1.DaemonSet
	jobs         []batchv1.Job
	cronJobs     []batchv1.CronJob
}

// listWorkloads lists every kind of workload in namespace ("" for all),
// one after the other, and stops at the first error.
func listWorkloads(ctx context.Context, c kubernetes.Interface, namespace string) (*workloads, error) {
	l := &lister{ctx: ctx, ns: namespace}
	w := &workloads{}
	core, apps, batch := c.CoreV1(), c.AppsV1(), c.BatchV1()
	listInto(l, &w.pods, "pods", core.Pods(namespace).List,
		func(r *corev1.PodList) []corev1.Pod { return r.Items })
	listInto(l, &w.deployments, "deployments.apps", apps.Deployments(namespace).List,
		func(r *appsv1.DeploymentList) []appsv1.Deployment { return r.Items })
	listInto(l, &w.replicaSets, "replicasets.apps", apps.ReplicaSets(namespace).List,
		func(r *appsv1.ReplicaSetList) []appsv1.ReplicaSet { return r.Items })
	listInto(l, &w.statefulSets, "statefulsets.apps", apps.StatefulSets(namespace).List,
		func(r *appsv1.StatefulSetList) []appsv1.StatefulSet { return r.Items })
	listInto(l, &w.daemonSets, "daemonsets.apps", apps.DaemonSets(namespace).List,
		func(r *appsv1.DaemonSetList) []appsv1.DaemonSet { return r.Items })
	listInto(l, &w.jobs, "jobs.batch", batch.Jobs(namespace).List,
		func(r *batchv1.JobList) []batchv1.Job { return r.Items })
	listInto(l, &w.cronJobs, "cronjobs.batch", batch.CronJobs(namespace).List,
		func(r *batchv1.CronJobList) []batchv1.CronJob { return r.Items })
	return w, l.err
}

// listNodes lists every node, whatever the namespace (for NodeImages).
// Node caches are a detail of the report: when listing nodes is forbidden,
// a user with namespace rights only still gets everything else, and a
// warning saying so.
func listNodes(ctx context.Context, c kubernetes.Interface) (nodes []corev1.Node, warnings []string, err error) {
	l := &lister{ctx: ctx, clusterScoped: true}
	listInto(l, &nodes, "nodes", c.CoreV1().Nodes().List, func(r *corev1.NodeList) []corev1.Node { return r.Items })
	if apierrors.IsForbidden(l.err) {
		return nil, []string{fmt.Sprintf("node image caches unknown: %v", l.err)}, nil
	}
	return nodes, nil, l.err
}

// lister carries what error messages need to say where a list ran, and the
// first error: once a list failed, the lists after it do not run.
type lister struct {
	ctx           context.Context
	ns            string
	clusterScoped bool
	err           error
}

func (l *lister) where() string {
	switch {
	case l.clusterScoped:
		return ""
	case l.ns == "":
		return " in all namespaces"
	default:
		return fmt.Sprintf(" in namespace %q", l.ns)
	}
}

// listInto lists resource into *dst with list, one page of pageSize at a
// time, following continue tokens until the list is complete; items gives
// a page's objects. An error, or ctx ending, is kept in l wrapped with the
// resource and where it was listed, keeping its API status.
func listInto[T any, L interface{ GetContinue() string }](l *lister, dst *[]T, resource string,
	list func(context.Context, metav1.ListOptions) (L, error), items func(L) []T) {
	if l.err != nil {
		return
	}
	opts := metav1.ListOptions{Limit: pageSize}
	for {
		if err := l.ctx.Err(); err != nil {
			l.err = fmt.Errorf("listing %s%s: %w", resource, l.where(), err)
			return
		}
		page, err := list(l.ctx, opts)
		if err != nil {
			l.err = fmt.Errorf("listing %s%s: %w", resource, l.where(), err)
			return
		}
		*dst = append(*dst, items(page)...)
		if opts.Continue = page.GetContinue(); opts.Continue == "" {
			return
		}
	}
}
