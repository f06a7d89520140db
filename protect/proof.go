package protect

import (
	"github.com/regcheck/regcheck/results/gcresult"
	"github.com/regcheck/regcheck/results/protectresult"
	"github.com/regcheck/regcheck/types"
)

// prove fills the proof from the prediction before the shield and over
// it: what still breaks, or is broken already, cannot be protected.
func prove(rep *protectresult.Report, before, after *gcresult.Report) {
	rep.Proof = protectresult.Proof{BreakBefore: broken(before.WouldBreak), BreakAfter: broken(after.WouldBreak), AlreadyBroken: broken(after.AlreadyBroken)}
	for _, e := range after.AlreadyBroken {
		if e.Verdict == types.Broken {
			rep.Unprotected = append(rep.Unprotected, protectresult.Unprotected{Reference: e.Reference, Reason: "already broken, before any run: " + e.Reason})
		}
	}
	for _, e := range after.WouldBreak {
		if e.Verdict == types.Broken {
			rep.Unprotected = append(rep.Unprotected, protectresult.Unprotected{Reference: e.Reference, Reason: "the run still breaks it over the shield: " + e.Reason})
		}
	}
	for _, sk := range after.Skipped {
		rep.Notes = append(rep.Notes, "not protected here: "+sk.Reference+": "+sk.Reason)
	}
	if after.Abort != nil {
		rep.Notes = append(rep.Notes, "over the shield the collector aborts, deleting nothing: "+after.Abort.Message)
	}
}

// broken counts the entries whose verdict is broken.
func broken(es []gcresult.Entry) int {
	n := 0
	for _, e := range es {
		if e.Verdict == types.Broken {
			n++
		}
	}
	return n
}

// count sums the report.
func count(rep *protectresult.Report) {
	c := protectresult.Counts{Keep: len(rep.Keep), Unprotected: len(rep.Unprotected), Released: len(rep.Released)}
	for _, k := range rep.Keep {
		if k.Tag != "" {
			c.Tags++
		}
		switch k.Status {
		case protectresult.Planned:
			c.Planned++
		case protectresult.Present:
			c.Present++
		case protectresult.Written:
			c.Written++
		case protectresult.Failed:
			c.Failed++
		}
	}
	rep.Counts = c
}
