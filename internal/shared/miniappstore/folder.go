package miniappstore

import (
	"context"
	"errors"
	"io/fs"
	"path"

	"github.com/voicebox-go/voicebox/internal/shared/fsroot"
	"github.com/voicebox-go/voicebox/shared/refusal"
)

// Folder apps. A mini-app may be a folder: an index.html beside its scripts, modules, styles and
// images. Its entry is the index.html (found by discovery like any page one folder down), and its
// files are every file under that folder that the file tools could reach: the same containment
// (fsroot.Check: no "..", no dot names), so a dot file in the folder is never served. Relative
// URLs in the app resolve inside the folder and nowhere else; how the bytes reach the sandbox is
// the page's and the relay's business (public/mini-apps.js, internal/core/server AppFiles).
const (
	// FolderIndex is the file that makes a folder an app.
	FolderIndex = "index.html"
	// MaxFolderFiles bounds the files of one folder app, index.html included.
	MaxFolderFiles = 256
	// MaxFolderFileBytes bounds one file of a folder app.
	MaxFolderFileBytes = 4 << 20
	// MaxFolderBytes bounds a folder app's files together.
	MaxFolderBytes = 16 << 20
	// MaxFolderDepth bounds how many folders down a folder app's files may lie.
	MaxFolderDepth = 8
)

// FolderFile is one file of a folder app: its path inside the folder and its size.
type FolderFile struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
}

// FolderOf returns the folder of the app whose index file is at storagePath in its root, and
// whether it is a folder app: its file is FolderIndex, one folder down or more.
func FolderOf(storagePath string) (string, bool) {
	dir, file := path.Split(storagePath)
	if file != FolderIndex || dir == "" {
		return "", false
	}
	return path.Clean(dir), true
}

// FolderFiles lists the files of the folder app in dir of root, sorted by path, within the bounds
// above; a folder past them is refused mini-app-too-large.
func FolderFiles(ctx context.Context, root fsroot.Root, dir string) ([]FolderFile, error) {
	var files []FolderFile
	var total int64
	var list func(rel string, depth int) error
	list = func(rel string, depth int) error {
		entries, err := root.ReadDir(ctx, path.Join(dir, rel))
		if err != nil {
			return err
		}
		for _, e := range entries {
			p := path.Join(rel, e.Name)
			if e.Dir {
				if depth >= MaxFolderDepth {
					return refusal.New(refusal.MiniAppTooLarge, "the folder app %s has folders more than %d deep (%s)", dir, MaxFolderDepth, p)
				}
				if err := list(p, depth+1); err != nil && !errors.Is(err, fs.ErrNotExist) {
					return err
				}
				continue
			}
			if e.Size > MaxFolderFileBytes {
				return refusal.New(refusal.MiniAppTooLarge, "%s in the folder app %s is %d bytes; a file of a folder app may be at most %d", p, dir, e.Size, MaxFolderFileBytes)
			}
			total += e.Size
			files = append(files, FolderFile{Path: p, Size: e.Size})
			if len(files) > MaxFolderFiles || total > MaxFolderBytes {
				return refusal.New(refusal.MiniAppTooLarge, "the folder app %s has more than %d files or %d bytes", dir, MaxFolderFiles, MaxFolderBytes)
			}
		}
		return nil
	}
	if err := list("", 0); err != nil {
		return nil, err
	}
	return files, nil
}

// ReadFolderFile reads the file rel of the folder app in dir of root. rel must be a name
// fsroot.Check accepts (relative, no "..", no dot names), so it stays inside the folder however
// it is joined; anything else is refused with the check's rule.
func ReadFolderFile(ctx context.Context, root fsroot.Root, dir, rel string) ([]byte, error) {
	if err := fsroot.Check(rel); err != nil {
		return nil, err
	}
	data, size, err := fsroot.ReadPrefix(ctx, root, path.Join(dir, rel), MaxFolderFileBytes)
	if err != nil {
		return nil, err
	}
	if size > MaxFolderFileBytes {
		return nil, refusal.New(refusal.MiniAppTooLarge, "%s is %d bytes; a file of a folder app may be at most %d", rel, size, MaxFolderFileBytes)
	}
	return data, nil
}
