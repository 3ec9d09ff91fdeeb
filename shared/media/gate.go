package media

import (
	"context"
	"sync"
)

// DefaultDecodeBudget is the memory a process lets its decodes hold at
// once, by their header estimates (Header.Cost); an image whose own
// estimate is larger is refused. A Lambda function has 512 MB; half of it
// leaves room for the runtime, the garbage collector's slack and the
// request's bytes.
const DefaultDecodeBudget = 256 << 20

// Gate bounds the decodes a process runs at once: their estimated memory
// together stays within a budget and their number within a count of slots
// (the cores: more CPU-bound decodes at once only make each slower).
// Decodes wait their turn in arrival order, so a large image is not starved
// by a stream of small ones. One Gate serves the whole process.
type Gate struct {
	mu       sync.Mutex
	budget   int64
	slots    int
	used     int64
	running  int
	queue    []*waiter
	peakUsed int64
	peakRun  int
}

type waiter struct {
	cost    int64
	ready   chan struct{}
	granted bool
}

// NewGate returns a gate of budget bytes and slots decodes (at least one
// each).
func NewGate(budget int64, slots int) *Gate {
	return &Gate{budget: max(budget, 1), slots: max(slots, 1)}
}

// Budget is the most one decode may cost.
func (g *Gate) Budget() int64 { return g.budget }

// Acquire waits until a decode of cost fits, or until ctx ends (its error
// is returned). The release function gives the room back; call it once.
func (g *Gate) Acquire(ctx context.Context, cost int64) (release func(), err error) {
	cost = min(max(cost, 0), g.budget)
	w := &waiter{cost: cost, ready: make(chan struct{})}
	g.mu.Lock()
	g.queue = append(g.queue, w)
	g.grant()
	g.mu.Unlock()
	select {
	case <-w.ready:
	case <-ctx.Done():
		g.mu.Lock()
		if !w.granted {
			for i, q := range g.queue {
				if q == w {
					g.queue = append(g.queue[:i], g.queue[i+1:]...)
					break
				}
			}
			g.grant() // the head may have changed
			g.mu.Unlock()
			return nil, ctx.Err()
		}
		g.mu.Unlock()
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			g.used -= w.cost
			g.running--
			g.grant()
			g.mu.Unlock()
		})
	}, nil
}

// grant admits waiters from the head of the queue while they fit.
func (g *Gate) grant() {
	for len(g.queue) > 0 {
		w := g.queue[0]
		if g.running >= g.slots || g.used+w.cost > g.budget {
			return
		}
		g.queue = g.queue[1:]
		g.used += w.cost
		g.running++
		g.peakUsed = max(g.peakUsed, g.used)
		g.peakRun = max(g.peakRun, g.running)
		w.granted = true
		close(w.ready)
	}
}

// GateStats is a gate's state and its high-water marks.
type GateStats struct {
	Used             int64 // estimated bytes held by running decodes
	Running, Waiting int
	PeakUsed         int64
	PeakRunning      int
	Budget           int64
	Slots            int
}

// Stats reports the gate's state.
func (g *Gate) Stats() GateStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	return GateStats{Used: g.used, Running: g.running, Waiting: len(g.queue), PeakUsed: g.peakUsed, PeakRunning: g.peakRun,
		Budget: g.budget, Slots: g.slots}
}
