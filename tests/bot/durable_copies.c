/* What a disk holds after a power cut, kept as the process runs: loaded with LD_PRELOAD, it
 * wraps fsync and fdatasync, and each time one of them returns for the SQLite database named by
 * DURABLE_WATCH (or its -wal or -journal file), it copies the file as it is then into the folder
 * DURABLE_COPIES (db, db-wal, db-journal). What was written and never synced is not there: the
 * copies are the last durable state, which is all a power cut is sure to leave.
 *
 * Writes made by another thread between the sync and the copy are copied too (the copy is a
 * little kinder than a power cut; never harsher). Used by tests/bot/test_power_loss.py. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t copying = PTHREAD_MUTEX_INITIALIZER;

static void keep(int fd) {
    const char *watch = getenv("DURABLE_WATCH");
    const char *into = getenv("DURABLE_COPIES");
    char link[64], path[PATH_MAX], final[PATH_MAX], partial[PATH_MAX + 8], buffer[65536];
    if (watch == NULL || into == NULL) return;
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t length = readlink(link, path, sizeof path - 1);
    if (length < 0) return;
    path[length] = '\0';
    size_t prefix = strlen(watch);
    if (strncmp(path, watch, prefix) != 0) return;
    const char *suffix = path + prefix;
    if (*suffix != '\0' && strcmp(suffix, "-wal") != 0 && strcmp(suffix, "-journal") != 0) return;
    snprintf(final, sizeof final, "%s/db%s", into, suffix);
    snprintf(partial, sizeof partial, "%s.part", final);
    pthread_mutex_lock(&copying);
    int out = open(partial, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (out >= 0) {
        off_t at = 0;
        ssize_t got;
        while ((got = pread(fd, buffer, sizeof buffer, at)) > 0) {
            if (write(out, buffer, (size_t)got) != got) break;
            at += got;
        }
        close(out);
        rename(partial, final);
    }
    pthread_mutex_unlock(&copying);
}

/* each wrapper calls the C library's own call, then copies the file if the sync succeeded */
#define KEEPING(name)                                                            \
    int name(int fd) {                                                           \
        static int (*real)(int);                                                 \
        if (real == NULL) real = (int (*)(int))dlsym(RTLD_NEXT, #name);          \
        int result = real(fd);                                                   \
        if (result == 0) keep(fd);                                               \
        return result;                                                           \
    }

KEEPING(fsync)
KEEPING(fdatasync)
