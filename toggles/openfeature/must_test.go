package openfeature_test

// must returns v, and panics when err is set: for constructors in tests,
// where an error is a mistake in the test itself.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
