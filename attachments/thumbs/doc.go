// Package thumbs makes thumbnails for the attachments image route
// (GET /attachments/image/{id}/{slug}?width=&height=&cropType=cover|contain).
//
// It is a pure image package: the caller does HTTP, caching and
// singleflight, sniffs the upload's MIME type (IsImageType), and hands the
// bytes to Resize.
package thumbs
