// Package atomicfile writes files so that a reader never finds one that looks complete
// but is not: the bytes go to a temporary file beside the destination, which is renamed
// over it only when every byte is written and synced. A failure (a directory that
// cannot be written, a full disk, a file-size limit) leaves the destination as it was
// and no temporary file behind, and the error names the destination.
package atomicfile

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// File is a file being written; Commit puts it in place, Abort drops it.
type File struct {
	tmp  *os.File
	path string
	done bool
}

// Create starts writing path.
func Create(path string) (*File, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".*.partial")
	if err != nil {
		return nil, fmt.Errorf("cannot write %s: %w", path, unwrapPath(err))
	}
	return &File{tmp: tmp, path: path}, nil
}

// Write writes to the temporary file.
func (f *File) Write(p []byte) (int, error) {
	n, err := f.tmp.Write(p)
	if err != nil {
		err = fmt.Errorf("cannot write %s: %w", f.path, unwrapPath(err))
	}
	return n, err
}

// Commit syncs the temporary file and renames it over the destination; on an error
// the temporary file is removed.
func (f *File) Commit() error {
	if f.done {
		return fmt.Errorf("%s: already committed or aborted", f.path)
	}
	f.done = true
	name := f.tmp.Name()
	err := f.tmp.Sync()
	if cerr := f.tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		if err = os.Chmod(name, 0o644); err == nil {
			err = os.Rename(name, f.path)
		}
	}
	if err != nil {
		os.Remove(name)
		return fmt.Errorf("cannot write %s: %w", f.path, unwrapPath(err))
	}
	return nil
}

// Abort removes the temporary file; the destination is untouched. It does nothing
// after Commit, so `defer f.Abort()` is safe.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	name := f.tmp.Name()
	f.tmp.Close()
	os.Remove(name)
}

// WriteFile writes data to path atomically.
func WriteFile(path string, data []byte) error {
	return WriteWith(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteWith writes path atomically with write.
func WriteWith(path string, write func(io.Writer) error) error {
	f, err := Create(path)
	if err != nil {
		return err
	}
	defer f.Abort()
	if err := write(f); err != nil {
		return err
	}
	return f.Commit()
}

// unwrapPath drops the temporary file's name from an *os.PathError: the caller's
// message names the destination, which is what the user asked for.
func unwrapPath(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	if le, ok := err.(*os.LinkError); ok {
		return le.Err
	}
	return err
}
