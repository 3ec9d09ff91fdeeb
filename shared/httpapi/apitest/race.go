package apitest

import "sync"

// Race sends n requests at once from n goroutines, do(i) sending the i-th,
// and returns the responses in the order of i: the shape of every test of
// concurrent writers against the real store.
func Race(n int, do func(i int) *Resp) []*Resp {
	out := make([]*Resp, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = do(i)
		}()
	}
	wg.Wait()
	return out
}

// Statuses counts responses by status.
func Statuses(rs []*Resp) map[int]int {
	n := map[int]int{}
	for _, r := range rs {
		n[r.Status]++
	}
	return n
}
