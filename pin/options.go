package pin

import "fmt"

// Option configures Rewrite.
type Option func(*options)

type options struct {
	update     bool
	pullPolicy string
	// entryTags gives, by the position of its name: value, the newTag a
	// kustomization images entry without one gains with its digest (see
	// kustomizeEdit): pinning a rendered tree sets it.
	entryTags map[[2]int]string
}

// WithUpdate moves references that are already pinned (@digest) to the
// digest Lookup returns. By default they are left alone.
func WithUpdate() Option { return func(o *options) { o.update = true } }

// WithPullPolicy also rewrites "imagePullPolicy: Always" to policy
// ("IfNotPresent" or "Never") on each container whose image Rewrite pins,
// and "pullPolicy: Always" on each image volume: pulling a digest again is
// pointless. By default pull policies are not touched. Compose pull_policy
// is never touched.
func WithPullPolicy(policy string) Option { return func(o *options) { o.pullPolicy = policy } }

// makeOptions holds the defaults and rejects bad values.
func makeOptions(opts []Option) (options, error) {
	o := options{}
	for _, opt := range opts {
		opt(&o)
	}
	switch o.pullPolicy {
	case "", "IfNotPresent", "Never":
	default:
		return o, fmt.Errorf("pull policy %q: want IfNotPresent or Never", o.pullPolicy)
	}
	return o, nil
}
