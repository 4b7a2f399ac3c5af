package entitiesapi

import (
	"slices"
	"strconv"

	"github.com/tenantkit/tenantkit/entities"
	"github.com/tenantkit/tenantkit/httpapi/internal/apikit"
	"github.com/tenantkit/tenantkit/internal/jsonenc"
)

// recordsPage is a records list's answer: its JSON is that of
// apikit.SearchPage{NewPage(rows, total, p), capped}, each row
// recordRow(record), as an
// Encoder writes it (keys sorted byte-wise, HTML-escaped strings), byte
// for byte, but written without reflection and without building each
// row's map (jsonenc): encoding/json spent a large share of a list's
// process time on the page's maps.
type recordsPage struct {
	items []*entities.Record
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
	var keyBuf [32]string
	for i, rec := range page.Items {
		if i > 0 {
			b = append(b, ',')
		}
		// The row's keys: the values' and the record's own, each once (the
		// record's own win, as in recordRow).
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
		b = append(b, '}')
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
		n += 128 + 48*len(rec.Values)
	}
	return n
}
