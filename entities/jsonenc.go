package entities

import (
	"github.com/tenantkit/tenantkit/internal/jsonenc"
)

// The JSON of records' values and of their events, written without
// reflection (internal/jsonenc): a batch of 1000 records writes each
// record's values twice (the record's data, its event), which
// encoding/json spent a tenth of an import's time on. The output is byte
// for byte json.Marshal's, so that stored data and event payloads do not
// depend on the path that wrote them.

// valuesJSON is json.Marshal(values) as a string.
func valuesJSON(values map[string]any) (string, error) {
	b, err := jsonenc.AppendObject(make([]byte, 0, 64+32*len(values)), values)
	return string(b), err
}

// The encoder's functions under the names the store's code uses.
var (
	appendValuesJSON = jsonenc.AppendObject
	appendJSONValue  = jsonenc.AppendValue
	appendJSONString = jsonenc.AppendString
	appendJSONTime   = jsonenc.AppendTime
)

// recordEventJSON is json.Marshal(eventOf(r)): the record as its events
// carry it, organizationId null for a record of the tenant's own.
func recordEventJSON(r *Record) ([]byte, error) {
	b := make([]byte, 0, 256+32*len(r.Values))
	b = append(b, `{"id":`...)
	b = appendJSONString(b, r.ID)
	b = append(b, `,"entityId":`...)
	b = appendJSONString(b, r.EntityID)
	b = append(b, `,"values":`...)
	b, err := appendValuesJSON(b, r.Values)
	if err != nil {
		return nil, err
	}
	b = append(b, `,"tenantId":`...)
	b = appendJSONString(b, r.TenantID)
	b = append(b, `,"createdAt":`...)
	if b, err = appendJSONTime(b, r.CreatedAt); err != nil {
		return nil, err
	}
	b = append(b, `,"updatedAt":`...)
	if b, err = appendJSONTime(b, r.UpdatedAt); err != nil {
		return nil, err
	}
	if r.DeletedAt != nil {
		b = append(b, `,"deletedAt":`...)
		if b, err = appendJSONTime(b, *r.DeletedAt); err != nil {
			return nil, err
		}
	}
	b = append(b, `,"organizationId":`...)
	if r.OrganizationID == "" {
		b = append(b, "null"...)
	} else {
		b = appendJSONString(b, r.OrganizationID)
	}
	return append(b, '}'), nil
}
