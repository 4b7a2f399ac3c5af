package entitiesapi

import (
	"slices"
	"strconv"

	"github.com/tenantkit/tenantkit/entities"
	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
	"github.com/tenantkit/tenantkit/internal/jsoncanon"
	"github.com/tenantkit/tenantkit/internal/jsonenc"
)

// recordsPage is a records list's answer: its JSON is that of
// apikit.SearchPage{NewPage(rows, total, p), capped}, each row
// recordRow(record) of the record's values decoded, as an Encoder writes
// it (keys sorted byte-wise, HTML-escaped strings), byte for byte, but
// written without reflection and without building each row's map
// (jsonenc): encoding/json spent a large share of a list's process time
// on the page's maps. A record whose values come as the stored JSON
// (entities.ListedRecord.ValuesJSON) is written from that JSON
// (jsoncanon), without decoding it into a map either: the same bytes on
// both engines, whatever the order and spacing of PostgreSQL's jsonb.
type recordsPage struct {
	items []entities.ListedRecord
	total int
	// capped: total is a search's capped count (store.CapTotal), written
	// as "totalCapped":true after the page's fields.
	capped bool
	p      apikit.PageParams
}

// appendJSON appends the page's JSON (without the Encoder's trailing
// newline).
func (pg recordsPage) appendJSON(b []byte) ([]byte, error) {
	page := apikit.NewPage(pg.items, pg.total, pg.p)
	b = append(b, `{"items":[`...)
	var own ownMembers
	for i := range page.Items {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = own.appendRecord(b, &page.Items[i]); err != nil {
			return nil, err
		}
	}
	b = append(b, `],"total":`...)
	b = strconv.AppendInt(b, int64(page.Total), 10)
	b = append(b, `,"page":`...)
	b = strconv.AppendInt(b, int64(page.Page), 10)
	b = append(b, `,"pageSize":`...)
	b = strconv.AppendInt(b, int64(page.PageSize), 10)
	b = append(b, `,"totalPages":`...)
	b = strconv.AppendInt(b, int64(page.TotalPages), 10)
	if pg.capped {
		b = append(b, `,"totalCapped":true`...)
	}
	return append(b, '}'), nil
}

// ownMembers is the room a page's rows write their records' own keys in
// (id, createdAt, updatedAt, deletedAt once deleted), one row at a time.
type ownMembers struct {
	buf     [256]byte
	members [4]jsoncanon.Member
}

// appendRecord appends one row: the stored JSON of the record's values
// rewritten with the record's own keys among them, or, when it has none
// (a Store of the host's own) or jsoncanon declines it, its values
// decoded and written as a map.
func (o *ownMembers) appendRecord(b []byte, rec *entities.ListedRecord) ([]byte, error) {
	if rec.ValuesJSON != "" {
		members, err := o.of(&rec.Record)
		if err != nil {
			return nil, err
		}
		if out, ok := jsoncanon.AppendObject(b, rec.ValuesJSON, members); ok {
			return out, nil
		}
	}
	decoded, err := rec.Decoded()
	if err != nil {
		return nil, err
	}
	return appendRow(b, decoded)
}

// of returns the record's own keys with their JSON values (which win over
// values of the same keys), in key order.
func (o *ownMembers) of(rec *entities.Record) ([]jsoncanon.Member, error) {
	buf := o.buf[:0]
	buf, err := jsonenc.AppendTime(buf, rec.CreatedAt)
	if err != nil {
		return nil, err
	}
	created := len(buf)
	buf = jsonenc.AppendString(buf, rec.ID)
	id := len(buf)
	if buf, err = jsonenc.AppendTime(buf, rec.UpdatedAt); err != nil {
		return nil, err
	}
	updated := len(buf)
	members := append(o.members[:0],
		jsoncanon.Member{Key: "createdAt", Value: buf[:created]},
		jsoncanon.Member{Key: "id", Value: buf[created:id]},
		jsoncanon.Member{Key: "updatedAt", Value: buf[id:updated]})
	if rec.DeletedAt != nil {
		if buf, err = jsonenc.AppendTime(buf, *rec.DeletedAt); err != nil {
			return nil, err
		}
		members = append(members, jsoncanon.Member{Key: "deletedAt", Value: buf[updated:]})
	}
	return members, nil
}

// appendRow appends the row of a record with decoded values.
func appendRow(b []byte, rec *entities.Record) ([]byte, error) {
	// The row's keys: the values' and the record's own, each once (the
	// record's own win, as in recordRow).
	var keyBuf [32]string
	keys := keyBuf[:0]
	for k := range rec.Values {
		if !ownKey(rec, k) {
			keys = append(keys, k)
		}
	}
	keys = append(keys, "createdAt", "id", "updatedAt")
	if rec.DeletedAt != nil {
		keys = append(keys, "deletedAt")
	}
	slices.Sort(keys)
	b = append(b, '{')
	for j, k := range keys {
		if j > 0 {
			b = append(b, ',')
		}
		b = jsonenc.AppendString(b, k)
		b = append(b, ':')
		var err error
		switch {
		case k == "id":
			b = jsonenc.AppendString(b, rec.ID)
		case k == "createdAt":
			b, err = jsonenc.AppendTime(b, rec.CreatedAt)
		case k == "updatedAt":
			b, err = jsonenc.AppendTime(b, rec.UpdatedAt)
		case k == "deletedAt" && rec.DeletedAt != nil:
			b, err = jsonenc.AppendTime(b, *rec.DeletedAt)
		default:
			b, err = jsonenc.AppendValue(b, rec.Values[k])
		}
		if err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// ownKey reports whether a row takes key k from the record rather than
// from its values.
func ownKey(rec *entities.Record, k string) bool {
	switch k {
	case "id", "createdAt", "updatedAt":
		return true
	case "deletedAt":
		return rec.DeletedAt != nil
	}
	return false
}

// MarshalJSON implements json.Marshaler.
func (pg recordsPage) MarshalJSON() ([]byte, error) {
	return pg.appendJSON(make([]byte, 0, pg.size()))
}

// size estimates the page's JSON length, so that it is written into one
// buffer.
func (pg recordsPage) size() int {
	n := 96
	for _, rec := range pg.items {
		n += 128 + 48*len(rec.Values) + len(rec.ValuesJSON)
	}
	return n
}
