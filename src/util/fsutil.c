#include "util/fsutil.h"

#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/error.h"

int fs_try_mkdirs(const char *path) {
    if (!*path) {
        errno = ENOENT;
        return -1;
    }
    char *p = rt_strdup(path);
    int rc = 0;
    for (char *s = p + 1;; s++) {
        if (*s != '/' && *s) continue;
        char c = *s;
        *s = '\0';
        if (mkdir(p, 0777) && errno != EEXIST) {
            rc = -1;
            break;
        }
        *s = c;
        if (!c) break;
    }
    int e = errno;
    rt_free(p);
    errno = e;
    struct stat sb;
    if (rc == 0 && stat(path, &sb))
        rc = -1;
    else if (rc == 0 && !S_ISDIR(sb.st_mode)) {
        errno = ENOTDIR;
        rc = -1;
    }
    return rc;
}

void fs_mkdirs(const char *path) {
    if (fs_try_mkdirs(path)) rt_die("cannot create directory %s: %s", path, strerror(errno));
}

int fs_write_all(int fd, const void *data, size_t n) {
    const char *p = data;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int fs_sync_dir(const char *dir) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -1;
    int rc = fsync(fd) && errno != EINVAL ? -1 : 0;
    close(fd);
    return rc;
}

int fs_sync_parent(const char *path) {
    char *copy = rt_strdup(path);
    int rc = fs_sync_dir(dirname(copy));
    int e = errno;
    rt_free(copy);
    errno = e;
    return rc;
}

char *fs_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t n = 0, cap = 4096, got;
    char *s = rt_malloc(cap);
    while ((got = fread(s + n, 1, cap - 1 - n, f)) > 0)
        if ((n += got) == cap - 1) s = rt_realloc(s, cap *= 2);
    int bad = ferror(f);
    int e = errno;
    fclose(f);
    if (bad) {
        rt_free(s);
        errno = e ? e : EIO;
        return NULL;
    }
    s[n] = '\0';
    if (len) *len = n;
    return s;
}

void fs_write_atomic(const char *path, const void *data, size_t len) {
    /* a device or a pipe (/dev/stdout, a FIFO) is written as it is: renaming over it would
     * replace it with a regular file */
    struct stat sb;
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
        int fd = open(path, O_WRONLY);
        if (fd < 0) rt_die("cannot write %s: %s", path, strerror(errno));
        if (fs_write_all(fd, data, len) || close(fd))
            rt_die("cannot write %s: %s", path, strerror(errno));
        return;
    }
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (fd < 0) rt_die("cannot write %s: %s", tmp, strerror(errno));
    if (fs_write_all(fd, data, len) || fsync(fd) || close(fd))
        rt_die("cannot write %s: %s", tmp, strerror(errno));
    if (rename(tmp, path)) rt_die("cannot rename %s to %s: %s", tmp, path, strerror(errno));
    fs_sync_parent(path); /* a file system that cannot make the rename durable leaves it as it is */
}

int fs_exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

int fs_remove_tree(const char *path) {
    struct stat sb;
    if (lstat(path, &sb)) return errno == ENOENT ? 0 : -1;
    if (!S_ISDIR(sb.st_mode)) return unlink(path);
    DIR *d = opendir(path);
    if (!d) return -1;
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char *child = rt_sprintf("%s/%s", path, e->d_name);
        if (fs_remove_tree(child)) rc = -1;
        rt_free(child);
    }
    closedir(d);
    return rc ? rc : rmdir(path);
}
