package pinresult

import (
	"bytes"
	"fmt"
)

// context is the number of unchanged lines shown around each change.
const context = 3

// Diff returns a unified diff of old and new with "--- a/path" and
// "+++ b/path" headers and 3 lines of context, as "diff -u" prints it, or
// nil when they are equal. A last line without a newline is marked
// "\ No newline at end of file".
func Diff(path string, old, new []byte) []byte {
	if bytes.Equal(old, new) {
		return nil
	}
	a, b := splitLines(old), splitLines(new)
	ops := diffLines(a, b)
	var out bytes.Buffer
	fmt.Fprintf(&out, "--- a/%s\n+++ b/%s\n", path, path)
	for _, h := range hunks(ops) {
		writeHunk(&out, h, a, b)
	}
	return out.Bytes()
}

// splitLines splits data after each "\n"; the last line may lack one.
func splitLines(data []byte) []string {
	var lines []string
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n') + 1
		if i == 0 {
			i = len(data)
		}
		lines = append(lines, string(data[:i]))
		data = data[i:]
	}
	return lines
}

// op is one step of an edit script: a line kept, deleted from a or
// inserted from b. ai and bi are the line indexes before the step.
type op struct {
	kind   byte // ' ', '-' or '+'
	ai, bi int
}

// diffLines returns a shortest edit script from a to b (Myers' algorithm),
// with each run of changes ordered deletions first.
func diffLines(a, b []string) []op {
	// Common prefix and suffix cost nothing and shrink the search.
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var ops []op
	for i := 0; i < pre; i++ {
		ops = append(ops, op{' ', i, i})
	}
	mid := myers(a[pre:len(a)-suf], b[pre:len(b)-suf])
	for _, o := range mid {
		ops = append(ops, op{o.kind, o.ai + pre, o.bi + pre})
	}
	for i := 0; i < suf; i++ {
		ops = append(ops, op{' ', len(a) - suf + i, len(b) - suf + i})
	}
	return ops
}

// myers returns a shortest edit script from a to b: the furthest-reaching
// paths forward, then the way back through them, changes ordered as diff
// prints them.
func myers(a, b []string) []op {
	if len(a)+len(b) == 0 {
		return nil
	}
	trace, off := myersTrace(a, b)
	ops := myersBack(trace, off, len(a), len(b))
	deletionsFirst(ops)
	return ops
}

// myersTrace runs Myers' forward search: for each number of changes d, the
// furthest x reached on each diagonal k (at v[off+k]) before step d.
func myersTrace(a, b []string) (trace [][]int, off int) {
	n, m := len(a), len(b)
	max := n + m
	off = max + 1
	v := make([]int, 2*max+3)
	for d := 0; d <= max; d++ {
		trace = append(trace, append([]int(nil), v...))
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || k != d && v[off+k-1] < v[off+k+1] {
				x = v[off+k+1] // down: insertion
			} else {
				x = v[off+k-1] + 1 // right: deletion
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x, y = x+1, y+1
			}
			v[off+k] = x
			if x >= n && y >= m {
				return trace, off
			}
		}
	}
	return trace, off
}

// myersBack walks back through the trace from (n, m) to (0, 0) and
// returns the edit script in order.
func myersBack(trace [][]int, off, n, m int) []op {
	var rev []op
	x, y := n, m
	for d := len(trace) - 1; d >= 0 && (x > 0 || y > 0); d-- {
		vd := trace[d]
		k := x - y
		var pk int
		if d == 0 {
			for x > 0 && y > 0 {
				x, y = x-1, y-1
				rev = append(rev, op{' ', x, y})
			}
			break
		}
		if k == -d || k != d && vd[off+k-1] < vd[off+k+1] {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := vd[off+pk]
		py := px - pk
		for x > px && y > py {
			x, y = x-1, y-1
			rev = append(rev, op{' ', x, y})
		}
		if pk == k+1 {
			y--
			rev = append(rev, op{'+', x, y})
		} else {
			x--
			rev = append(rev, op{'-', x, y})
		}
	}
	ops := make([]op, 0, len(rev))
	for i := len(rev) - 1; i >= 0; i-- {
		ops = append(ops, rev[i])
	}
	return ops
}

// deletionsFirst orders each run of changes deletions first, as diff
// prints them.
func deletionsFirst(ops []op) {
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		j := i
		for j < len(ops) && ops[j].kind != ' ' {
			j++
		}
		run := ops[i:j]
		ai, bi := run[0].ai, run[0].bi
		var del, ins []op
		for _, o := range run {
			if o.kind == '-' {
				del = append(del, op{'-', o.ai, bi})
			} else {
				ins = append(ins, op{'+', ai + len(del), o.bi})
			}
		}
		copy(run, append(del, ins...))
		i = j
	}
}

// hunks groups an edit script into hunks: changes closer than twice the
// context share one.
func hunks(ops []op) [][]op {
	var out [][]op
	i := 0
	for i < len(ops) {
		for i < len(ops) && ops[i].kind == ' ' {
			i++
		}
		if i == len(ops) {
			break
		}
		start := max(i-context, 0)
		end := i // one past the last change
		for j := i; j < len(ops); j++ {
			if ops[j].kind != ' ' {
				end = j + 1
				continue
			}
			if j-end >= 2*context {
				break
			}
		}
		stop := min(end+context, len(ops))
		out = append(out, ops[start:stop])
		i = stop
	}
	return out
}

func writeHunk(out *bytes.Buffer, h []op, a, b []string) {
	var na, nb int
	for _, o := range h {
		if o.kind != '+' {
			na++
		}
		if o.kind != '-' {
			nb++
		}
	}
	fmt.Fprintf(out, "@@ -%s +%s @@\n", hunkRange(h[0].ai, na), hunkRange(h[0].bi, nb))
	for _, o := range h {
		line := ""
		switch o.kind {
		case ' ', '-':
			line = a[o.ai]
		case '+':
			line = b[o.bi]
		}
		out.WriteByte(o.kind)
		out.WriteString(line)
		if len(line) == 0 || line[len(line)-1] != '\n' {
			out.WriteString("\n\\ No newline at end of file\n")
		}
	}
}

// hunkRange formats a hunk's line range as diff does: "3" for one line,
// "2,0" for none (the line before), "3,4" otherwise.
func hunkRange(start, n int) string {
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", start)
	case 1:
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}
