package types

import (
	"testing"
)

// TestCodes states each code's severity and whether it is a fault, written
// out here independently of the table, and checks that every code has a
// description and every fault or critical finding says what to do.
func TestCodes(t *testing.T) {
	want := map[Code]struct {
		severity         Severity
		fault, transient bool
	}{
		TagMissing:               {SeverityCritical, false, false},
		ManifestMissing:          {SeverityCritical, false, false},
		ChildMissing:             {SeverityCritical, false, false},
		BlobMissing:              {SeverityCritical, false, false},
		DigestMismatch:           {SeverityCritical, false, false},
		InvalidReference:         {SeverityCritical, false, false},
		AttestationMissing:       {SeverityWarning, false, false},
		UnsupportedMedia:         {SeverityWarning, false, false},
		ForeignLayer:             {SeverityInfo, false, false},
		Drift:                    {SeverityWarning, false, false},
		RunningDigestMissing:     {SeverityHigh, false, false},
		MutableReference:         {SeverityInfo, false, false},
		PullAlwaysMutable:        {SeverityWarning, false, false},
		PinnedDigestUntagged:     {SeverityWarning, false, false},
		ImageIDOnly:              {SeverityInfo, false, false},
		LostForSomeNodes:         {SeverityWarning, false, false},
		LostForOtherPlatform:     {SeverityInfo, false, false},
		UnplannedUpgrade:         {SeverityHigh, false, false},
		PlatformMismatch:         {SeverityCritical, false, false},
		SignatureMissing:         {SeverityCritical, false, false},
		SignedAttestationMissing: {SeverityCritical, false, false},
		ArtifactMissing:          {SeverityInfo, false, false},
		SignatureRefused:         {SeverityCritical, false, false},
		AttestationRefused:       {SeverityCritical, false, false},
		SignatureUnverifiable:    {SeverityWarning, true, false},
		MirrorOnly:               {SeverityWarning, false, false},
		MirrorLacks:              {SeverityInfo, false, false},
		MirrorStale:              {SeverityWarning, false, false},
		MirrorUnavailable:        {SeverityInfo, false, false},
		Unauthorized:             {SeverityWarning, true, false},
		Forbidden:                {SeverityWarning, true, false},
		RateLimited:              {SeverityWarning, true, true},
		RegistryFault:            {SeverityWarning, true, true},
		Unreachable:              {SeverityWarning, true, true},
		PingFailed:               {SeverityWarning, true, true},
		TokenFailed:              {SeverityWarning, true, true},
		TLSError:                 {SeverityWarning, true, false},
		BadResponse:              {SeverityWarning, true, true},
		LimitExceeded:            {SeverityWarning, true, false},
		CredentialsError:         {SeverityWarning, true, false},
		RateLimitBudget:          {SeverityWarning, true, false},
		TagDeleted:               {SeverityCritical, false, false},
		Archived:                 {SeverityCritical, false, false},
	}
	if got := len(Codes()); got != len(want) {
		t.Errorf("%d codes in the table, %d stated here", got, len(want))
	}
	for _, c := range Codes() {
		w, ok := want[c]
		if !ok {
			t.Errorf("code %s is not stated in this test", c)
			continue
		}
		if c.Severity() != w.severity || c.Fault() != w.fault || c.Transient() != w.transient {
			t.Errorf("%s: severity %s fault %v transient %v; want %s %v %v", c, c.Severity(), c.Fault(), c.Transient(), w.severity, w.fault, w.transient)
		}
		if c.Description() == "" {
			t.Errorf("%s has no description", c)
		}
		if (c.Fault() || c.Severity() == SeverityCritical) && c.Advice("linux/amd64", "sha256:0123456789abcdef") == "" {
			t.Errorf("%s says nothing to do", c)
		}
	}
}

func TestVerdictOf(t *testing.T) {
	f := func(c Code) Finding { return Finding{Code: c, Severity: c.Severity()} }
	for _, tc := range []struct {
		name string
		fs   []Finding
		want Verdict
	}{
		{"nothing", nil, OK},
		{"a tag reference alone", []Finding{f(MutableReference)}, OK},
		{"info only", []Finding{f(ForeignLayer), f(ImageIDOnly)}, OK},
		{"pull always on a tag", []Finding{f(MutableReference), f(PullAlwaysMutable)}, AtRisk},
		{"attestation lost", []Finding{f(AttestationMissing)}, AtRisk},
		{"a fault", []Finding{f(Unreachable)}, Unknown},
		{"a fault beside a risk", []Finding{f(Drift), f(TLSError)}, Unknown},
		{"a fault beside absence", []Finding{f(Unreachable), f(ChildMissing)}, Broken},
		{"absence", []Finding{f(BlobMissing)}, Broken},
		{"running digest gone", []Finding{f(RunningDigestMissing)}, AtRisk},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := VerdictOf(tc.fs); got != tc.want {
				t.Errorf("VerdictOf = %s, want %s", got, tc.want)
			}
		})
	}
}
