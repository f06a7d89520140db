// Package charts holds regcheck's Helm chart (regcheck/) and renders it with Helm's own engine, as helm template does; deploy/ is its render.
package charts
