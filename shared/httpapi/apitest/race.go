package apitest

import "github.com/moku/sellerapi/shared/domaintest"

// Race sends n requests at once from n goroutines, do(i) sending the i-th,
// and returns the responses in the order of i (domaintest.Race).
func Race(n int, do func(i int) *Resp) []*Resp { return domaintest.Race(n, do) }

// Statuses counts responses by status.
func Statuses(rs []*Resp) map[int]int {
	n := map[int]int{}
	for _, r := range rs {
		n[r.Status]++
	}
	return n
}
