package scan

import "github.com/regcheck/regcheck/types"

// The scan's data types are the vocabulary's (package types); these names
// keep the scan API whole for its callers.
type (
	// Use is types.Use.
	Use = types.Use
	// Target is types.Target.
	Target = types.Target
	// Image is types.Image.
	Image = types.Image
	// Result is types.Result.
	Result = types.Result
	// InputError is types.InputError.
	InputError = types.InputError
	// RequestCount is types.RequestCount.
	RequestCount = types.RequestCount
	// Shard is types.Shard.
	Shard = types.Shard
)
