package fsroot

import "context"

// Metadata is implemented by a root that keeps a hidden metadata area (MetaDir) beside the
// workspace. Meta returns a Root over that area, creating it if needed; its names are checked
// like any root's, and they are not names of the workspace root (which refuses every dot path).
// Holding the workspace root's concrete type is what grants it: code that only has a Root (a
// tool, a mini-app) never sees the area.
type Metadata interface {
	Meta(ctx context.Context) (Root, error)
}

// PrefixReader is implemented by a root that can read the start of a file without reading all of
// it. ReadFilePrefix returns at most n bytes from the start of the file name and the size of the
// whole file, both of one version of it (a replace in between cannot mix them).
type PrefixReader interface {
	ReadFilePrefix(ctx context.Context, name string, n int) (data []byte, size int64, err error)
}

// ReadPrefix returns at most n bytes from the start of the file name and the file's whole size,
// through the root's PrefixReader when it has one and ReadFile otherwise (which reads all of it).
func ReadPrefix(ctx context.Context, r Root, name string, n int) ([]byte, int64, error) {
	if pr, ok := r.(PrefixReader); ok {
		return pr.ReadFilePrefix(ctx, name, n)
	}
	data, err := r.ReadFile(ctx, name)
	if err != nil {
		return nil, 0, err
	}
	size := int64(len(data))
	if len(data) > n {
		data = data[:n:n]
	}
	return data, size, nil
}

// Renamer is a Root that can move a file or a folder (with everything in it) to another name in
// the root, in one step. Both names have passed Check; the parent of to must exist and to must
// not (fs.ErrExist), so a move never replaces anything; from missing is fs.ErrNotExist; a folder
// moved into itself is fs.ErrInvalid. Roots that cannot move (a browser that cannot move a
// folder) do not implement it, and the executor refuses the move.
type Renamer interface {
	Rename(ctx context.Context, from, to string) error
}
