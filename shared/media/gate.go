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
//
// Slots are shared between tenants: one tenant (a vendor) runs at most
// PerTenant decodes at once, half the slots (at least one), and a waiter of
// a tenant at its share is passed over, not waited behind. So however many
// uploads one vendor sends, and however long their decodes run, another
// vendor's upload finds a slot as soon as the other tenants' decodes allow.
type Gate struct {
	mu        sync.Mutex
	budget    int64
	slots     int
	perTenant int
	used      int64
	running   int
	byTenant  map[string]int
	queue     []*waiter
	peakUsed  int64
	peakRun   int
}

type waiter struct {
	tenant  string
	cost    int64
	ready   chan struct{}
	granted bool
}

// NewGate returns a gate of budget bytes and slots decodes (at least one
// each).
func NewGate(budget int64, slots int) *Gate {
	slots = max(slots, 1)
	return &Gate{budget: max(budget, 1), slots: slots, perTenant: max(1, slots/2), byTenant: map[string]int{}}
}

// PerTenant is the most decodes one tenant runs at once.
func (g *Gate) PerTenant() int { return g.perTenant }

// Budget is the most one decode may cost.
func (g *Gate) Budget() int64 { return g.budget }

// Acquire waits until a decode of cost for tenant fits, or until ctx ends
// (its error is returned). The release function gives the room back; call
// it once, when the decode has ended (not when its caller stopped waiting
// for it: the room is in use until then).
func (g *Gate) Acquire(ctx context.Context, tenant string, cost int64) (release func(), err error) {
	cost = min(max(cost, 0), g.budget)
	w := &waiter{tenant: tenant, cost: cost, ready: make(chan struct{})}
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
			if g.byTenant[w.tenant]--; g.byTenant[w.tenant] == 0 {
				delete(g.byTenant, w.tenant)
			}
			g.grant()
			g.mu.Unlock()
		})
	}, nil
}

// grant admits waiters in arrival order while they fit, passing over those
// whose tenant runs its share; the first waiter that could run but does not
// fit the memory left stops the admissions, so it is not starved.
func (g *Gate) grant() {
	for i := 0; i < len(g.queue) && g.running < g.slots; {
		w := g.queue[i]
		if g.byTenant[w.tenant] >= g.perTenant {
			i++
			continue
		}
		if g.used+w.cost > g.budget {
			return
		}
		g.queue = append(g.queue[:i], g.queue[i+1:]...)
		g.used += w.cost
		g.running++
		g.byTenant[w.tenant]++
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
