package notifications

import (
	"context"
	"embed"
	"errors"
	"net/url"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tenantkit/tenantkit/store"
)

//go:embed migrations
var migrationsFS embed.FS

// Migrations creates the area's table. tenantkit.Open applies it; a host
// using the package alone applies it with db.Migrate.
var Migrations = store.Migrations{Line: "notifications", FS: migrationsFS, Dir: "migrations"}

// Options tunes a Service. The zero value is ready to use.
type Options struct {
	// Store stores notifications (default NewSQLStore()). A host with its
	// own storage passes its Store; it must keep its data in db (see
	// Store) and pass notificationstest.Run.
	Store Store
	// Recipients resolves the people the feeds address (see
	// SetRecipients).
	Recipients Recipients
}

// Service keeps each user's inbox. Create adds a notification to any
// recipient of the scope's tenant (the feeds call it); the inbox methods
// (List, MarkRead, MarkUnread, MarkAllRead, Delete) act on the inbox of
// the scope's actor (store.Scope.ActorID) only.
type Service struct {
	db         *store.DB
	store      Store
	recipients Recipients
}

// New returns the service over db, whose migrations include Migrations.
// It starts nothing and reads nothing.
func New(db *store.DB, opts Options) (*Service, error) {
	s := &Service{db: db, store: opts.Store, recipients: opts.Recipients}
	if s.store == nil {
		s.store = NewSQLStore()
	}
	return s, nil
}

var typePattern = regexp.MustCompile(`^[a-z][a-z0-9._-]*$`)

func validate(in *CreateInput) error {
	v := &store.ValidationError{}
	text := func(field, value string, limit int, required bool) {
		switch {
		case required && strings.TrimSpace(value) == "":
			v.Add(field, "is required")
		case utf8.RuneCountInString(value) > limit:
			v.Add(field, "is too long")
		case !store.Storable(value):
			v.Add(field, "must be UTF-8 text without NUL characters")
		}
	}
	text("recipient", in.Recipient, MaxRecipientLength, true)
	switch {
	case in.Type == "":
		v.Add("type", "is required")
	case len(in.Type) > MaxTypeLength:
		v.Add("type", "is too long")
	case !typePattern.MatchString(in.Type):
		v.Add("type", "must start with a lowercase letter and hold only lowercase letters, digits, '.', '_' and '-'")
	}
	text("title", in.Title, MaxTitleLength, true)
	text("body", in.Body, MaxBodyLength, false)
	text("dedupKey", in.DedupKey, MaxRecipientLength, false)
	if in.Severity == "" {
		in.Severity = SeverityInfo
	}
	if !in.Severity.Valid() {
		v.Add("severity", "must be info, warning or error")
	}
	if in.Link != "" {
		text("link", in.Link, MaxLinkLength, false)
		if !validLink(in.Link) {
			v.Add("link", "must be a path starting with / or an http(s) URL")
		}
	}
	return v.Err()
}

// validLink accepts a path on the host's UI ("/webhooks/1", not
// "//elsewhere") or an absolute http(s) URL: never a javascript: or data:
// link a UI would follow.
func validLink(link string) bool {
	if strings.HasPrefix(link, "/") {
		return !strings.HasPrefix(link, "//") && !strings.HasPrefix(link, `/\`)
	}
	u, err := url.Parse(link)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// Create adds a notification to in.Recipient's inbox in the scope's
// tenant and emits notifications.notification.created in the same
// transaction. With a DedupKey the inbox already holds, it adds nothing
// and returns (nil, nil). Invalid input is a store.ValidationError naming
// recipient, type, title, body, severity, link or dedupKey.
func (s *Service) Create(ctx context.Context, in CreateInput) (*Notification, error) {
	var n *Notification
	err := s.db.Tx(ctx, func(tx *store.Tx) error {
		var err error
		n, err = s.CreateTx(ctx, tx, in)
		return err
	})
	return n, err
}

// CreateTx is Create in the caller's transaction.
func (s *Service) CreateTx(ctx context.Context, tx *store.Tx, in CreateInput) (*Notification, error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return nil, err
	}
	if err := validate(&in); err != nil {
		return nil, err
	}
	n := &Notification{ID: store.NewID(), TenantID: sc.TenantID, Recipient: in.Recipient, Type: in.Type, Title: in.Title,
		Body: in.Body, Severity: in.Severity, Link: in.Link, DedupKey: in.DedupKey, CreatedAt: tx.Now()}
	inserted, err := s.store.Insert(ctx, tx, n)
	if err != nil || !inserted {
		return nil, err
	}
	_, err = tx.EmitData(ctx, EventNotificationCreated, store.Scope{TenantID: sc.TenantID}, NotificationEvent{ID: n.ID,
		Recipient: n.Recipient, Type: n.Type, Severity: n.Severity})
	if err != nil {
		return nil, err
	}
	return n, nil
}

// inbox returns the scope's tenant and actor: the inbox the caller reads.
func inbox(ctx context.Context) (tenantID, recipient string, err error) {
	sc, err := store.ScopeFrom(ctx)
	if err != nil {
		return "", "", err
	}
	if sc.ActorID == "" {
		return "", "", ErrNoRecipient
	}
	return sc.TenantID, sc.ActorID, nil
}

// List returns a page of the caller's inbox, newest first, with the
// number of notifications the options select and of unread ones. A
// Limit out of 0…MaxPageSize or a negative Offset is a
// store.ValidationError naming pageSize or page.
func (s *Service) List(ctx context.Context, opts ListOptions) (*Page, error) {
	tenantID, recipient, err := inbox(ctx)
	if err != nil {
		return nil, err
	}
	v := &store.ValidationError{}
	if opts.Limit < 0 || opts.Limit > MaxPageSize {
		v.Add("pageSize", "must be between 1 and 100")
	}
	if opts.Offset < 0 {
		v.Add("page", "must be positive")
	}
	if err := v.Err(); err != nil {
		return nil, err
	}
	if opts.Limit == 0 {
		opts.Limit = DefaultPageSize
	}
	p := &Page{}
	if p.Items, err = s.store.List(ctx, s.db, tenantID, recipient, opts.UnreadOnly, opts.Limit, opts.Offset); err != nil {
		return nil, err
	}
	if p.Total, err = s.store.Count(ctx, s.db, tenantID, recipient, opts.UnreadOnly); err != nil {
		return nil, err
	}
	if opts.UnreadOnly {
		p.UnreadCount = p.Total
	} else if p.UnreadCount, err = s.store.Count(ctx, s.db, tenantID, recipient, true); err != nil {
		return nil, err
	}
	return p, nil
}

// Get returns one notification of the caller's inbox, or
// ErrNotificationNotFound.
func (s *Service) Get(ctx context.Context, id string) (*Notification, error) {
	tenantID, recipient, err := inbox(ctx)
	if err != nil {
		return nil, err
	}
	return notFound(s.store.Get(ctx, s.db, tenantID, recipient, strings.ToLower(id)))
}

func notFound[T any](v T, err error) (T, error) {
	if errors.Is(err, store.ErrNotFound) {
		err = ErrNotificationNotFound
	}
	return v, err
}

// MarkRead marks a notification of the caller's inbox read (one already
// read keeps its ReadAt) and returns it; ErrNotificationNotFound for an
// id not in the inbox.
func (s *Service) MarkRead(ctx context.Context, id string) (*Notification, error) {
	return s.setRead(ctx, id, true)
}

// MarkUnread marks a notification of the caller's inbox unread and
// returns it; ErrNotificationNotFound for an id not in the inbox.
func (s *Service) MarkUnread(ctx context.Context, id string) (*Notification, error) {
	return s.setRead(ctx, id, false)
}

func (s *Service) setRead(ctx context.Context, id string, read bool) (*Notification, error) {
	tenantID, recipient, err := inbox(ctx)
	if err != nil {
		return nil, err
	}
	id = strings.ToLower(id)
	var n *Notification
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		var err error
		if n, err = s.store.Get(ctx, tx, tenantID, recipient, id); err != nil {
			return err
		}
		var at *time.Time
		if read {
			if n.ReadAt != nil {
				return nil
			}
			now := tx.Now()
			at = &now
		} else if n.ReadAt == nil {
			return nil
		}
		n.ReadAt = at
		return s.store.SetRead(ctx, tx, tenantID, recipient, id, at)
	})
	return notFound(n, err)
}

// MarkAllRead marks every unread notification of the caller's inbox read
// and returns how many it marked.
func (s *Service) MarkAllRead(ctx context.Context) (int64, error) {
	tenantID, recipient, err := inbox(ctx)
	if err != nil {
		return 0, err
	}
	var n int64
	err = s.db.Tx(ctx, func(tx *store.Tx) error {
		n, err = s.store.ReadAll(ctx, tx, tenantID, recipient, tx.Now())
		return err
	})
	return n, err
}

// Delete removes a notification from the caller's inbox;
// ErrNotificationNotFound for an id not in the inbox.
func (s *Service) Delete(ctx context.Context, id string) error {
	tenantID, recipient, err := inbox(ctx)
	if err != nil {
		return err
	}
	_, err = notFound(struct{}{}, s.db.Tx(ctx, func(tx *store.Tx) error {
		return s.store.Delete(ctx, tx, tenantID, recipient, strings.ToLower(id))
	}))
	return err
}
