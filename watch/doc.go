// Package watch is regcheck watch: informers on pods and the workloads inventory reads record every running digest into record's history as it changes, flag the unplanned upgrade, export metrics and walk the images in use.
package watch
