"""The one I/O seam: every byte segmentlog reads or writes goes through a file system picked by
`filesystem.filesystem_for` (local files, or object stores and HDFS through pyarrow.fs)."""
