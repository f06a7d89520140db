package render

import (
	"fmt"
	"strconv"
	"strings"
	"text/template"
)

// What one render of a chart may count and build, all its templates
// together: a 400-byte template that loops 3,000,000 times (or twice
// nested, 1,000 by 1,000,000) writes more than memory holds. The counts
// of until, untilStep and seq are spent from maxLoop, the bytes repeat
// builds from maxRepeat; past either the chart is not rendered, with a
// notice naming the call.
const (
	maxLoop   = 1_000_000
	maxRepeat = 16 << 20
)

// budget is what is left of one render's bounds.
type budget struct {
	loop, repeat int
}

// boundedFuncs are Sprig's until, untilStep, seq and repeat, spending
// from a budget of their own, as Helm's CustomTemplateFuncs (which
// replace the built-in ones of the same name).
func boundedFuncs() template.FuncMap {
	b := &budget{loop: maxLoop, repeat: maxRepeat}
	return template.FuncMap{
		"until": func(count int) ([]int, error) {
			step := 1
			if count < 0 {
				step = -1
			}
			return b.untilStep("until "+strconv.Itoa(count), 0, count, step)
		},
		"untilStep": func(start, stop, step int) ([]int, error) {
			return b.untilStep(fmt.Sprintf("untilStep %d %d %d", start, stop, step), start, stop, step)
		},
		"seq":    b.seq,
		"repeat": b.repeatString,
	}
}

// untilStep is Sprig's, failing when the numbers it would list are more
// than the budget has left.
func (b *budget) untilStep(call string, start, stop, step int) ([]int, error) {
	var n float64
	switch {
	case stop < start && step < 0:
		n = (float64(start) - float64(stop)) / -float64(step)
	case stop > start && step > 0:
		n = (float64(stop) - float64(start)) / float64(step)
	}
	if n > float64(b.loop) {
		return nil, fmt.Errorf("%s counts more than regcheck renders of a chart (%d in all its loops)", call, maxLoop)
	}
	v := []int{}
	if stop < start {
		for i := start; step < 0 && i > stop; i += step {
			v = append(v, i)
		}
	} else {
		for i := start; step > 0 && i < stop; i += step {
			v = append(v, i)
		}
	}
	b.loop -= len(v)
	return v, nil
}

// seq is Sprig's, counted as untilStep is.
func (b *budget) seq(params ...int) (string, error) {
	call := "seq"
	for _, p := range params {
		call += " " + strconv.Itoa(p)
	}
	var v []int
	var err error
	switch len(params) {
	case 1:
		inc := 1
		if params[0] < 1 {
			inc = -1
		}
		v, err = b.untilStep(call, 1, params[0]+inc, inc)
	case 2:
		inc := 1
		if params[1] < params[0] {
			inc = -1
		}
		v, err = b.untilStep(call, params[0], params[1]+inc, inc)
	case 3:
		start, step, end := params[0], params[1], params[2]
		inc := 1
		if end < start {
			if inc = -1; step > 0 {
				return "", nil
			}
		}
		v, err = b.untilStep(call, start, end+inc, step)
	default:
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return strings.Trim(strings.Join(strings.Fields(fmt.Sprint(v)), " "), "[]"), nil
}

// repeatString is Sprig's repeat, failing past what the budget has left.
func (b *budget) repeatString(count int, str string) (string, error) {
	if count < 0 {
		return "", fmt.Errorf("repeat %d: a negative count", count)
	}
	if len(str) > 0 && count > b.repeat/len(str) {
		return "", fmt.Errorf("repeat %d of %d bytes builds more than regcheck renders of a chart (%d MiB in all)", count, len(str), maxRepeat>>20)
	}
	b.repeat -= count * len(str)
	return strings.Repeat(str, count), nil
}
