package types

import "fmt"

// Severity orders findings. Only cmd turns a severity into an exit code.
type Severity int

// Severities, lowest first.
const (
	SeverityInfo     Severity = iota // worth knowing; the image is fine
	SeverityWarning                  // the image pulls, but something around it is fragile
	SeverityHigh                     // the next pull or restart is likely to run other bits, or fail
	SeverityCritical                 // a node cannot pull the image: it is broken
)

var severityNames = []string{"info", "warning", "high", "critical"}

func (s Severity) String() string {
	if s < 0 || int(s) >= len(severityNames) {
		return fmt.Sprintf("severity(%d)", int(s))
	}
	return severityNames[s]
}

// ParseSeverity reads a severity name.
func ParseSeverity(s string) (Severity, error) {
	for i, n := range severityNames {
		if n == s {
			return Severity(i), nil
		}
	}
	return 0, fmt.Errorf("unknown severity %q (want info, warning, high or critical)", s)
}

// MarshalText writes the severity's name.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a severity's name.
func (s *Severity) UnmarshalText(b []byte) error {
	v, err := ParseSeverity(string(b))
	*s = v
	return err
}
