package opfs

import (
	"context"
	"io/fs"

	"github.com/voicebox-go/voicebox/internal/jsutil"
	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
)

var _ fsroot.RangeReader = (*Root)(nil)

// OpenRange opens name for reading in pieces through a File, the browser's snapshot of it (the
// asynchronous API, the same in OPFS and in a chosen folder): each piece is a slice of that File,
// so only the piece crosses into Go. The browser refuses to read a File whose file changed after
// it was taken (NotReadableError), which the reader reports as fsroot.ErrChanged.
func (r *Root) OpenRange(ctx context.Context, name string) (fsroot.FileReader, error) {
	const op = "read"
	if err := fsroot.Check(name); err != nil {
		return nil, fsroot.WithOp(err, op)
	}
	for attempt := range 2 {
		fh, err := r.fileHandle(ctx, op, name, false)
		if err != nil {
			return nil, err
		}
		file, err := jsutil.Call(ctx, fh, "getFile")
		if err == nil {
			v, err := file.Get("size")
			if err != nil {
				return nil, pathError(op, name, err, false)
			}
			size, err := v.Float()
			if err != nil {
				return nil, pathError(op, name, err, false)
			}
			return &fileReader{name: name, file: file, size: int64(size)}, nil
		}
		if attempt == 0 && jsutil.Name(err) == "NotFoundError" {
			r.forget(name) // the cached handle may be stale (removed by another context)
			continue
		}
		return nil, pathError(op, name, err, false)
	}
	return nil, fsroot.Err(op, name, fs.ErrNotExist)
}

// fileReader reads pieces of one File snapshot.
type fileReader struct {
	name   string
	file   jsutil.Value
	size   int64
	closed bool
}

func (f *fileReader) Size() int64 { return f.size }

func (f *fileReader) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	const op = "read"
	if err := fsroot.CheckReadAt(f.name, off, f.closed); err != nil {
		return 0, err
	}
	want := int(min(int64(len(p)), max(f.size-off, 0)))
	if want == 0 {
		return 0, nil
	}
	part, err := f.file.Call("slice", float64(off), float64(off+int64(want)))
	if err != nil {
		return 0, pathError(op, f.name, jsutil.Thrown(err), false)
	}
	ab, err := jsutil.Call(ctx, part, "arrayBuffer")
	if err != nil {
		switch jsutil.Name(err) {
		case "NotReadableError", "NotFoundError":
			return 0, fsroot.Err(op, f.name, fsroot.ErrChanged)
		}
		return 0, pathError(op, f.name, err, false)
	}
	view, err := jsutil.Global().Get("Uint8Array")
	if err == nil {
		view, err = view.New(ab)
	}
	if err != nil {
		return 0, pathError(op, f.name, err, false)
	}
	n, err := jsutil.CopyBytesToGo(p[:want], view)
	if err != nil {
		return 0, pathError(op, f.name, err, false)
	}
	if n < want {
		return 0, fsroot.Err(op, f.name, fsroot.ErrChanged)
	}
	return n, nil
}

func (f *fileReader) Close() error {
	f.closed = true
	f.file = jsutil.Value{}
	return nil
}
