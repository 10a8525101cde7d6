/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * An append-only journal of text records beside a snapshot file: the
 * agent's services state (agent/services.c) saves one change as one
 * record instead of rewriting every service.  One record per line,
 * "<16 hex digits of FNV-1a 64 over the text> <text>\n"; the text holds
 * no newline.  A record counts once its line is whole and fdatasync()ed.
 * Reading checks every line: a last line without its newline is a torn
 * append (a crash during the write, never acknowledged) and is cut off;
 * any other bad line (checksum, no separator) is damage.  Private to
 * agent/.
 */
#ifndef FLOWSDN_AGENT_JOURNAL_H
#define FLOWSDN_AGENT_JOURNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct journal;

/* Opens (creating, mode 0600) regular file @name in directory @dfd
 * without following a symlink.  -EBADFD when it is not a regular file,
 * -errno otherwise. */
int journal_open(int dfd, const char *name, struct journal **ret);
void journal_free(struct journal *j);

/* Calls @fn with each record's text (NUL-terminated, @len bytes) in
 * order, at most @max bytes of journal; a torn last line is cut off the
 * file (*ret_torn true).  -EBADMSG when a line is damaged (*ret_line its
 * number from 1; the file is left as it is), -EFBIG beyond @max, what
 * @fn returned when it failed, -errno. */
int journal_read(struct journal *j, size_t max, int (*fn)(const char *text, size_t len, void *userdata),
		 void *userdata, bool *ret_torn, size_t *ret_line);

/* Appends one record (@text of @len bytes, no newline in it) and waits
 * until it is on disk.  On failure the file is cut back to its length
 * before the call: -EINVAL (a newline in @text), -errno. */
int journal_append(struct journal *j, const char *text, size_t len);

/* Empties the journal (after its records went into a snapshot). */
int journal_reset(struct journal *j);

/* Bytes in the journal now. */
off_t journal_size(const struct journal *j);

#endif
