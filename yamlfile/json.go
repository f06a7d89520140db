package yamlfile

import "encoding/json"

// notObjects reports whether data is JSON that holds no Kubernetes object
// nor compose project (a Grafana dashboard, a package.json beside the
// manifests). Such a file is skipped with a notice, whether the YAML
// parser refused it or not (a .json file it reads): JSON is YAML only
// nearly: "\/" and a surrogate pair in "\u…" escapes, and a key longer
// than 1024 characters, are valid JSON the YAML parser refuses. Refused
// JSON that does hold an object stays an error: its images would be
// lost.
func notObjects(data []byte) bool {
	var v any
	if !json.Valid(data) || json.Unmarshal(data, &v) != nil {
		return false
	}
	return !holdsObject(v)
}

// holdsObject reports whether a decoded JSON value is, or lists, something
// regcheck reads: an object with apiVersion or kind (or items that
// hold one), or a compose project's services.
func holdsObject(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		for _, k := range []string{"apiVersion", "kind", "services"} {
			if _, ok := v[k]; ok {
				return true
			}
		}
		return holdsObject(v["items"])
	case []any:
		for _, e := range v {
			if holdsObject(e) {
				return true
			}
		}
	}
	return false
}
