package types

// Verdict is what a scan concludes about one image.
type Verdict string

// Verdicts, from best to worst for ordering purposes in Rank.
const (
	OK      Verdict = "ok"      // every manifest and blob a node needs is there
	AtRisk  Verdict = "at-risk" // it pulls today, but the next pull may fail or run other bits
	Unknown Verdict = "unknown" // the registry could not be asked everything; nothing broken was found
	Broken  Verdict = "broken"  // a node cannot pull it
)

// Rank orders verdicts for reports: broken first, ok last.
func (v Verdict) Rank() int {
	switch v {
	case Broken:
		return 0
	case Unknown:
		return 1
	case AtRisk:
		return 2
	}
	return 3
}

// VerdictOf derives a verdict from findings: any critical finding that is
// not a fault is broken; else any fault is unknown; else any warning or
// worse is at-risk; else ok. Info findings never change a verdict.
func VerdictOf(fs []Finding) Verdict {
	v := OK
	for _, f := range fs {
		switch {
		case f.Severity >= SeverityCritical && !f.Code.Fault():
			return Broken
		case f.Code.Fault():
			v = Unknown
		case f.Severity >= SeverityWarning && v == OK:
			v = AtRisk
		}
	}
	return v
}
