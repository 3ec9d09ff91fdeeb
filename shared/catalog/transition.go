package catalog

import (
	"context"
	"fmt"
	"strings"

	"github.com/moku/sellerapi/shared/datamodel"
	"github.com/moku/sellerapi/shared/errs"
	"github.com/moku/sellerapi/shared/event"
	"github.com/moku/sellerapi/shared/store"
)

// transitions is the lifecycle table: for an action and a current status,
// the status it leads to. The action's own target is a no-op; a status
// missing from an action's row is a 409.
var transitions = map[string]map[string]string{
	Publish:   {StatusDraft: StatusPublished, StatusPublished: StatusPublished},
	Unpublish: {StatusPublished: StatusDraft, StatusDraft: StatusDraft},
	Archive:   {StatusDraft: StatusArchived, StatusPublished: StatusArchived, StatusArchived: StatusArchived},
	Restore:   {StatusArchived: StatusDraft, StatusDraft: StatusDraft},
}

var eventOf = map[string]string{
	Publish: event.ProductPublished, Unpublish: event.ProductUnpublished,
	Archive: event.ProductArchived, Restore: event.ProductRestored,
}

// Transition moves a product through its lifecycle.
func (s Service) Transition(ctx context.Context, vendorID, productID, action string, t Transition) (Product, error) {
	return retryMoved(ctx, func() (Product, error) { return s.transition(ctx, vendorID, productID, action, t) })
}

func (s Service) transition(ctx context.Context, vendorID, productID, action string, t Transition) (Product, error) {
	row, ok := transitions[action]
	if !ok {
		return Product{}, fmt.Errorf("catalog: unknown action %q", action)
	}
	identity := action == Archive || action == Restore
	var masters func() (Masters, error)
	if identity {
		masters = MastersLater(ctx, s.Authority, vendorID)
	}
	p, _, err := s.Get(ctx, vendorID, productID)
	if err != nil {
		return Product{}, err
	}
	if t.ExpectedRevision != p.Revision {
		return Product{}, revisionConflict(p.Revision)
	}
	var m Masters
	if identity {
		// Archive and restore change the canonical identity: the caller must
		// hold both current source-authority bindings.
		if m, err = masters(); err != nil {
			return Product{}, err
		}
		if err := CheckBindings(m, t.Authority); err != nil {
			return Product{}, err
		}
	}
	to, ok := row[p.Status]
	if !ok {
		return Product{}, errs.Ef(errs.CodeProductState, "a %s product cannot be %s", p.Status, pastTense(action))
	}
	if to == p.Status {
		return p, nil // the contract's no-op rows
	}
	if action == Publish {
		if missing := p.incomplete(); len(missing) > 0 {
			return Product{}, errs.Ef(errs.CodeProductIncomplete, "the draft is not complete: %s", strings.Join(missing, "; "))
		}
	}
	now := s.Clock.Now()
	next := p
	next.Status, next.Revision, next.UpdatedAt = to, p.Revision+1, now
	switch to {
	case StatusPublished:
		next.PublishedAt = &now
	case StatusArchived:
		next.ArchivedAt, next.PublishedAt = &now, nil
	case StatusDraft:
		next.PublishedAt, next.ArchivedAt = nil, nil
	}
	data, err := Encode(next)
	if err != nil {
		return Product{}, err
	}
	ev, err := event.Op(event.New(now, vendorID, eventOf[action], "product", p.ID, map[string]any{"revision": next.Revision, "status": to}))
	if err != nil {
		return Product{}, err
	}
	err = s.Store.Transact(ctx, m.Fenced([]store.Op{store.Update(datamodel.ProductKey(vendorID, p.ID), data, next.Revision, nil, store.IfVersion(p.Revision)), ev})...)
	if store.IsCondition(err) {
		if err := Moved(ctx, s.Authority, vendorID, m); err != nil {
			return Product{}, err
		}
		return Product{}, s.explainConflict(ctx, vendorID, p.ID, p.Revision)
	}
	if err != nil {
		return Product{}, errs.Unavailablef(err, "the product could not be stored")
	}
	return next, nil
}

func pastTense(action string) string {
	if action == Unpublish || action == Publish {
		return action + "ed"
	}
	return action + "d"
}

// incomplete lists what a draft lacks before it can be published.
func (p Product) incomplete() []string {
	var missing []string
	if strings.TrimSpace(p.Description) == "" {
		missing = append(missing, "description is empty")
	}
	if strings.TrimSpace(p.Category) == "" {
		missing = append(missing, "category is empty")
	}
	if len(p.ImageURLs) == 0 {
		missing = append(missing, "image_urls has no image")
	}
	if p.Kind == KindVariable {
		active := 0
		for _, v := range p.Variations {
			if v.Status == VariationActive {
				active++
			}
		}
		if active == 0 {
			missing = append(missing, "a variable product needs at least one active variation")
		}
	}
	return missing
}
