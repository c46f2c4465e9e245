/* SPDX-License-Identifier: MIT */
/*
 * The array's label (raid/label.h): the rule for what a label may be, and
 * a new label written to every member superblock of an assembled array.
 */
#include "raid/label.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "raid/raid_i.h"
#include "raid/sb.h"

_Static_assert(FF_LABEL_MAX + 1 == sizeof(((struct ff_member_sb *)0)->label),
	       "a label and its NUL fill the superblock's field");
_Static_assert(sizeof(((struct ff_raid *)0)->label) == FF_LABEL_MAX + 1, "the array's copy");

int ff_label_check(const char *label, struct ff_err *err)
{
	size_t len = strnlen(label, FF_LABEL_MAX + 1);

	if (len > FF_LABEL_MAX) {
		ff_err_set(err, "the label is %zu bytes long; a label has at most %u bytes "
			   "(printable characters)", strlen(label), FF_LABEL_MAX);
		return -EINVAL;
	}
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)label[i];

		if (ch < 0x20 || ch == 0x7f) {
			ff_err_set(err, "the label has a control character (0x%02x at byte %zu); "
				   "give a label of printable characters, at most %u bytes",
				   ch, i + 1, FF_LABEL_MAX);
			return -EINVAL;
		}
	}
	return 0;
}

/*
 * A spare's superblock is its own (role FF_ROLE_SPARE, its member uuid):
 * read it, change the label, write it back the same way.  A spare that
 * keeps the old label is not found by LABEL=new; the array still is, and
 * status shows the spare missing from it.
 */
static unsigned relabel_spares(struct ff_raid *r, const char *label)
{
	struct ff_member_sb *sb = ff_alloc_aligned(sizeof(*sb));
	unsigned failed = 0;

	pthread_mutex_lock(&r->spare_lock);
	for (unsigned i = 0; i < r->nspares; i++) {
		int rc = sb ? ff_sb_read(&r->spare[i], sb) : -ENOMEM;

		if (rc == 0) {
			memset(sb->label, 0, sizeof(sb->label));
			memcpy(sb->label, label, strlen(label));
			rc = ff_sb_write(&r->spare[i], sb);
		}
		if (rc < 0) {
			ff_log(FF_LOG_ERR, "hot spare %s keeps its old label: %s", r->spare[i].path,
			       strerror(-rc));
			failed++;
		}
	}
	pthread_mutex_unlock(&r->spare_lock);
	free(sb);
	return failed;
}

int ff_raid_set_label(struct ff_raid *r, const char *label, struct ff_err *err)
{
	unsigned spares_failed;
	int rc = ff_label_check(label, err);

	if (rc < 0)
		return rc;
	if (r->read_only) {
		ff_err_set(err, "the array is open read-only: the label cannot change");
		return -EROFS;
	}
	pthread_mutex_lock(&r->sb_lock);
	memset(r->sb->label, 0, sizeof(r->sb->label));
	memcpy(r->sb->label, label, strlen(label));
	/* status reads r->label on the control thread, the one that asks for
	 * this change: no reader sees it half copied */
	memcpy(r->label, r->sb->label, sizeof(r->label));
	rc = ff_raid_sb_write_locked(r, ff_le32(r->sb->array_state));
	pthread_mutex_unlock(&r->sb_lock);
	if (rc < 0) {
		/* the members written carry the new label with the newest event count:
		 * assembly takes it from them; the others are stale, as after any
		 * failed superblock write */
		ff_err_set(err, "the new label could not be written to every member: %s (see the log)",
			   strerror(-rc));
		return rc;
	}
	spares_failed = relabel_spares(r, label);
	ff_raid_event(r, FF_EVENT_LABEL_CHANGED, -1, "%s", label);
	if (spares_failed) {
		ff_err_set(err, "the label is changed on the members, but %u hot spare(s) keep the old "
			   "one (see the log)", spares_failed);
		return -EIO;
	}
	return 0;
}
