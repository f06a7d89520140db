// Package kubelist asks a cluster for the objects of a resource that may
// not be installed: discovery first, then a paged list. The inventory's
// workload custom resources and OpenShift's mirror sets read through it.
package kubelist

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
)

// PageSize is the Limit of every list call; All follows continue tokens.
const PageSize = 500

// Served asks discovery once per group version which resources it
// serves. A group version discovery does not know (404) serves none; one
// whose discovery fails otherwise (a partial discovery error: an
// aggregated API down, say) is taken as served, so its list tells. With
// disc nil every resource is taken as served.
func Served(disc discovery.DiscoveryInterface) func(schema.GroupVersionResource) bool {
	if disc == nil {
		return func(schema.GroupVersionResource) bool { return true }
	}
	type answer struct {
		names map[string]bool
		known bool // discovery answered, so names is the whole truth
	}
	answers := map[string]answer{}
	return func(gvr schema.GroupVersionResource) bool {
		gv := gvr.GroupVersion().String()
		a, ok := answers[gv]
		if !ok {
			list, err := disc.ServerResourcesForGroupVersion(gv)
			switch {
			case apierrors.IsNotFound(err):
				a = answer{known: true}
			case err != nil || list == nil:
			default:
				a = answer{names: map[string]bool{}, known: true}
				for _, r := range list.APIResources {
					a.names[r.Name] = true
				}
			}
			answers[gv] = a
		}
		return !a.known || a.names[gvr.Resource]
	}
}

// All lists every object of r, following the continue tokens.
func All(ctx context.Context, r dynamic.ResourceInterface) ([]unstructured.Unstructured, error) {
	var out []unstructured.Unstructured
	opts := metav1.ListOptions{Limit: PageSize}
	for {
		l, err := r.List(ctx, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, l.Items...)
		if opts.Continue = l.GetContinue(); opts.Continue == "" {
			return out, nil
		}
	}
}
