package pin

import "github.com/regcheck/regcheck/internal/atomicfile"

// WriteFile replaces the file at path with data atomically: it writes a
// temporary file in the same folder and renames it over path, keeping the
// file's mode (0644 for a new file). When path is a symlink, its target is
// replaced. When the file already holds data, nothing is written.
func WriteFile(path string, data []byte) error {
	return atomicfile.Write(path, data, 0o644)
}
