/* File-system helpers: directories, whole writes, durable renames, atomic file replacement. */
#ifndef ROTOR_FSUTIL_H
#define ROTOR_FSUTIL_H

#include <stddef.h>

/* mkdir -p: 0, or -1 with errno set (ENOTDIR when path is there but not a directory). */
int fs_try_mkdirs(const char *path);
/* fs_try_mkdirs that dies with a message naming the path on failure. */
void fs_mkdirs(const char *path);
/* Writes the n bytes at data to fd, through short writes and interruptions: 0, or -1 with
 * errno set. */
int fs_write_all(int fd, const void *data, size_t n);
/* fsync of the directory dir (fs_sync_parent: of the directory holding path), so that the
 * entries created or renamed in it are durable: 0, or -1 with errno set. File systems that
 * cannot sync directories answer EINVAL, which is not an error. */
int fs_sync_dir(const char *dir);
int fs_sync_parent(const char *path);
/* Writes PATH.tmp, fsyncs it, renames it over PATH and fsyncs the directory, so readers
 * see the old or the new content, never a partial one; a PATH that exists and is not a
 * regular file (/dev/stdout, a pipe) is written directly. Dies on I/O errors. */
void fs_write_atomic(const char *path, const void *data, size_t len);
/* The whole file as a NUL-terminated heap string (release with rt_free), its length in *len
 * when len is not NULL (the content may hold NUL bytes); NULL with errno set when it cannot be
 * read. */
char *fs_read_file(const char *path, size_t *len);
/* 1 if the path exists. */
int fs_exists(const char *path);
/* rm -rf; a missing path is not an error. Returns 0, or -1 with errno set. */
int fs_remove_tree(const char *path);

#endif
