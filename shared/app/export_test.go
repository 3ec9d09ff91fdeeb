package app

import "github.com/moku/sellerapi/shared/queue"

// WithWorks runs works instead of the service's in the local background,
// so that a test of the pipeline's plumbing sees only its own work.
func WithWorks(works func(q queue.Sender) []Work) Option {
	return func(a *App) { a.works = works }
}
