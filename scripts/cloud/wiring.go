package main

// The wiring check: each worker's queue variables must name the queues its
// event source mappings feed, in every function that holds them. A swapped
// pair of queue URLs passes every template assertion and fails only when
// work reaches the wrong worker; here it fails the start, naming both.

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/moku/sellerapi/shared/resources"
)

// CheckWiring checks the resolved environment of every function against
// the queues' consumers.
func CheckWiring(tpl *Template) error {
	// resources.Names: the table is named after the stage's prefix, and
	// each function is <prefix>-<folder in functions/>.
	stack := tpl.Table.Name
	byURL := map[string]*Queue{}
	for _, q := range tpl.Queues {
		byURL[q.URL] = q
	}
	consumer := map[string]*Function{} // queue logical id → function
	for _, m := range tpl.QueueFeeds {
		consumer[m.Queue] = tpl.Functions[m.Function]
	}
	// The variable each worker's work is addressed by, and the queue its
	// mapping says it consumes.
	want := map[string]*Queue{} // variable → queue
	for _, w := range resources.Workers() {
		var q *Queue
		for id, f := range consumer {
			if f.Name == stack+"-"+w.Function && tpl.Queues[id].Name == stack+"-"+w.Name {
				q = tpl.Queues[id]
			}
		}
		if q == nil {
			return fmt.Errorf("no event source mapping feeds the %s function (%s) from the %s queue, which carries the %s work", w.Function, stack+"-"+w.Function, stack+"-"+w.Name, w.Queue)
		}
		want[w.URLEnv] = q
	}
	for _, id := range slices.Sorted(maps.Keys(tpl.Functions)) {
		f := tpl.Functions[id]
		for _, k := range slices.Sorted(maps.Keys(f.Env)) {
			if !strings.HasPrefix(k, "SELLERAPI_QUEUE_URL_") {
				continue
			}
			q, w := byURL[f.Env[k]], want[k]
			if w == nil {
				return fmt.Errorf("function %s: %s is no worker's queue variable", f.Name, k)
			}
			if q == nil {
				return fmt.Errorf("function %s: %s=%s is not a queue of the template", f.Name, k, f.Env[k])
			}
			if q != w {
				got := "no function"
				if c := consumer[q.Logical]; c != nil {
					got = c.Name
				}
				return fmt.Errorf("function %s: %s names queue %s, which feeds %s; the work it addresses is done by %s, fed by queue %s (are two queue URL variables swapped?)",
					f.Name, k, q.Name, got, consumer[w.Logical].Name, w.Name)
			}
		}
	}
	return nil
}
