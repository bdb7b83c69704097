package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWriteFileReplacesTheDestinationWhole(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.json")
	require.NoError(t, os.WriteFile(path, []byte("old"), 0o644))
	require.NoError(t, WriteFile(path, []byte("new contents")))
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "new contents", string(got))
	entries, _ := os.ReadDir(dir)
	require.Len(t, entries, 1, "no temporary file left")
}

func TestAFailedWriteLeavesTheOldFileAndNoTemporary(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "trace.json")
	require.NoError(t, os.WriteFile(path, []byte("old"), 0o644))
	err := WriteWith(path, func(w io.Writer) error {
		if _, err := w.Write([]byte("half")); err != nil {
			return err
		}
		return errors.New("disk full")
	})
	require.EqualError(t, err, "disk full")
	got, _ := os.ReadFile(path)
	require.Equal(t, "old", string(got))
	entries, _ := os.ReadDir(dir)
	require.Len(t, entries, 1)
}

func TestAnUnwritableDirectoryNamesTheDestination(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "out.pto")
	err := WriteFile(path, []byte("x"))
	require.Error(t, err)
	require.True(t, strings.HasPrefix(err.Error(), "cannot write "+path+": "), err.Error())
	require.NotContains(t, err.Error(), ".partial")
}
