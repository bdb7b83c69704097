package device

import (
	"math"
	"slices"
)

// Bandwidth shared between tasks. Each task's run is simulated alone (its own cold L2
// and bandwidth calendar, sim_bandwidth.go), so the dispatcher charges the contention
// of tasks that overlap in time: a task moves its L2 and HBM bytes at an even rate over
// its standalone kernel time (assumed: the fluid approximation of its transfers), and
// when the tasks already placed leave less than that rate of the chip's total L2 or
// HBM bandwidth, the task progresses at the fraction of its standalone speed the
// bandwidth left allows, and its cores end later. As in a task's own calendar, earlier
// requests are served first: a task placed earlier keeps the bandwidth it was given,
// and a later one takes what it leaves. The total rate of the tasks on the timeline
// never exceeds the chip's L2 or HBM bandwidth. A task alone on the timeline, or one
// beside tasks that leave it enough bandwidth, keeps its standalone times.

// memUse is the bandwidth a placed task uses from cycle from to cycle to (bytes per
// cycle of the L2 and of the HBM).
type memUse struct {
	from, to int64
	l2, hbm  float64
}

// memTimeline holds the bandwidth booked by the tasks placed so far.
type memTimeline struct {
	l2Peak, hbmPeak float64 // bytes per cycle of the whole chip (0: not limited)
	uses            []memUse
}

func newMemTimeline(chip *Chip) *memTimeline {
	m := &memTimeline{hbmPeak: float64(chip.HBMBytesPerCycle)}
	if chip.L2Bytes > 0 {
		m.l2Peak = float64(chip.L2TotalBytesPerCycle)
	}
	return m
}

// taskTraffic is the bytes a task moves through the L2 and from / to the HBM: every GM
// byte it reads or writes passes the L2; the lines its loads missed and the bytes it
// wrote to HBM (written through, or dirty lines it evicted: TaskStats.HBMBytesWritten)
// cross the HBM. A chip without an L2 model sends every GM byte to the HBM.
func taskTraffic(chip *Chip, st *TaskStats) (l2, hbm float64) {
	gm := float64(st.GMBytesRead + st.GMBytesWritten)
	if chip.L2Bytes <= 0 {
		return 0, gm
	}
	return gm, float64(st.L2Misses*int64(chip.L2LineBytes) + st.HBMBytesWritten)
}

// booked is the bandwidth in use at cycle t and the next cycle after t at which that
// changes (math.MaxInt64 when it never does).
func (m *memTimeline) booked(t int64) (l2, hbm float64, next int64) {
	next = math.MaxInt64
	for _, u := range m.uses {
		switch {
		case u.from > t:
			next = min(next, u.from)
		case u.to > t:
			l2, hbm = l2+u.l2, hbm+u.hbm
			next = min(next, u.to)
		}
	}
	return l2, hbm, next
}

// warpPoint says that at cycle wall the task has done work cycles of its standalone
// run.
type warpPoint struct{ wall, work int64 }

// place books a task whose kernels start at cycle begin and run for span cycles alone,
// moving l2 and hbm bytes, and returns how its standalone time maps to the timeline:
// points (wall, work) between which the task progresses at a constant speed.
func (m *memTimeline) place(begin, span int64, l2, hbm float64) []warpPoint {
	points := []warpPoint{{begin, 0}}
	if span <= 0 || (l2 <= 0 && hbm <= 0) {
		return append(points, warpPoint{begin + max(span, 0), max(span, 0)})
	}
	// The task's own rates, alone. A rate above the peak (the bytes this model counts
	// exceed what the task's own calendar charged) is taken as the peak, so that a task
	// alone keeps its standalone time.
	r2, rh := l2/float64(span), hbm/float64(span)
	t, work := begin, int64(0)
	for work < span {
		b2, bh, next := m.booked(t)
		speed := 1.0
		if m.l2Peak > 0 && r2 > 0 {
			speed = min(speed, max(0, m.l2Peak-b2)/min(r2, m.l2Peak))
		}
		if m.hbmPeak > 0 && rh > 0 {
			speed = min(speed, max(0, m.hbmPeak-bh)/min(rh, m.hbmPeak))
		}
		if speed <= 0 { // stalled until a booked task's use ends (one is in use)
			t = next
			points = append(points, warpPoint{t, work})
			continue
		}
		end, step := t+int64(math.Ceil(float64(span-work)/speed)), span-work
		if next < end { // the piece ends where the booked bandwidth changes
			end, step = next, min(step, int64(float64(next-t)*speed))
		}
		m.uses = append(m.uses, memUse{from: t, to: end, l2: r2 * speed, hbm: rh * speed})
		t, work = end, work+step
		points = append(points, warpPoint{t, work})
	}
	return points
}

// warp is the cycle of the timeline at which a task of the given warp points has done
// work cycles of its standalone run.
func warp(points []warpPoint, work int64) int64 {
	i, _ := slices.BinarySearchFunc(points, work, func(p warpPoint, w int64) int {
		switch {
		case p.work < w:
			return -1
		case p.work > w:
			return 1
		}
		return 0
	})
	if i >= len(points) {
		p := points[len(points)-1]
		return p.wall + (work - p.work)
	}
	if points[i].work == work || i == 0 {
		// the first point reaching work (a stalled piece repeats the work of the one before)
		return points[i].wall
	}
	a, b := points[i-1], points[i]
	return a.wall + int64(math.Ceil(float64(work-a.work)*float64(b.wall-a.wall)/float64(b.work-a.work)))
}
