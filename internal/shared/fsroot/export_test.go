//go:build !js

package fsroot

// SetOSFailWrites installs the OS root's write-failure hook, for the atomicity case.
func SetOSFailWrites(r *OSRoot, fail func(name string, written int64) error) { r.fail = fail }
