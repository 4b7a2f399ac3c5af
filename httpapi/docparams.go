package httpapi

// Query parameter documentation shared by the area route tables: each
// helper documents what the matching parser in list.go accepts.
