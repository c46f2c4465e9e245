/* SPDX-License-Identifier: MIT */
/*
 * A member is one block device or regular file that holds a slice of the
 * array.  Everything about it (size, logical block size, O_DIRECT
 * alignment, NVMe identity) is read from the system at open time, never
 * assumed.  How each kind of member is driven is its backend's business
 * (io/backend.h): block device, file, file in RAM, or the fault-injecting
 * backend in front of one of them (tests only).
 */
#ifndef FF_MEMBER_H
#define FF_MEMBER_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "io/ff_common.h"

struct ff_fault;
struct ff_backend;

struct ff_nvme_id {
	bool is_nvme;
	char model[41];
	char serial[21];
	char firmware[9];
	uint32_t nsid;
	uint32_t lba_bytes;          /* formatted LBA data size */
	uint32_t max_transfer_bytes; /* MDTS, 0 = no limit reported */
};

struct ff_member {
	char path[PATH_MAX];
	char abs_path[PATH_MAX]; /* path made absolute at open (the daemon chdirs to "/"):
				  * what the presence check (ff_member_presence) looks at */
	int fd;
	bool is_bdev;
	bool in_memory;      /* a file in tmpfs or ramfs: every write is a CPU copy into RAM */
	bool sync_io;        /* rings run its requests on their own thread (io/uring.h);
			      * set for in_memory members, a test or bench may clear it */
	bool read_only;
	dev_t st_dev;        /* identity of the underlying object, to refuse duplicates */
	ino_t st_ino;
	dev_t st_rdev;
	uint64_t diskseq;        /* block device: the kernel's sequence number of the disk
				  * opened (BLKGETDISKSEQ), 0 when unknown */
	bool is_loop;            /* a loop device (attached at open) */
	bool loop_autoclear;     /* ... already set to detach on last close at open */
	uint64_t size_bytes;
	uint32_t lbs;            /* logical block size: smallest I/O unit */
	uint32_t dio_mem_align;  /* O_DIRECT buffer alignment */
	uint32_t dio_off_align;  /* O_DIRECT offset/length alignment */
	struct ff_nvme_id nvme;
	const struct ff_backend *backend; /* io/backend.h; read with ff_member_backend() */
	struct ff_fault *fault;  /* the fault backend's state: NULL unless a test injects
				  * faults or simulates power loss (io/fault.h) */
};

/* Open path O_DIRECT (read-write unless read_only).  Fills every field from
 * the system.  -errno with a one-line message naming the path in err. */
int ff_member_open(struct ff_member *m, const char *path, bool read_only, struct ff_err *err);
void ff_member_close(struct ff_member *m);

/*
 * One writer per member: whoever assembles or adds a member locks it, a
 * writable member with an exclusive flock, a read-only one with a shared
 * lock, so a second daemon, mkfs or fsck cannot use members a mounted
 * volume is writing.  A lock held by a daemon whose volume is mounted is
 * -EBUSY at once, the message naming its pid and mountpoint; any other
 * busy lock (most often a daemon still writing out after its umount) is
 * waited for up to FF_MEMBER_LOCK_WAIT_MS, then -EBUSY.  Close releases it.
 */
#define FF_MEMBER_LOCK_WAIT_MS 5000u
/* ... and a holder whose process has exited (killed), whose open file the
 * kernel releases once its io_uring rings are torn down, up to this long. */
#define FF_MEMBER_LOCK_DEAD_WAIT_MS 60000u
int ff_member_lock(struct ff_member *m, struct ff_err *err);

/*
 * The daemon, once its volume is mounted at mnt_real (a real path): marks
 * every member this process has locked, and every one it locks from now
 * on, as held by a mounted volume, so that ff_member_lock in another
 * process refuses it at once.  -ENOENT when no framefs is mounted there.
 */
int ff_member_note_mounted(const char *mnt_real);
/* The same with the mount's device number (major << 20 | minor) given:
 * -EINVAL when it is 0 or too large to note. */
int ff_member_notes_leave(uint64_t dev_note);

/*
 * The framefs mount (fuse.framefs in /proc/self/mountinfo) whose device is
 * dev_note when want_mnt is NULL, or the newest one on want_mnt (a real
 * path): true, with its mountpoint in mnt and its device in *dev_out.
 */
bool ff_framefs_mount_find(const char *want_mnt, uint64_t dev_note, char *mnt, size_t len,
			   uint64_t *dev_out);

/* Identity through libnvme (block devices); leaves is_nvme false for anything else. */
void ff_nvme_identify(struct ff_member *m);

/* "Samsung PM1733 S/N ... FW ..." or "not NVMe". */
const char *ff_member_describe(const struct ff_member *m, char *buf, size_t len);

/* True when m and other are the same underlying file or device. */
bool ff_member_same(const struct ff_member *m, const struct ff_member *other);

/*
 * Is the member still where it was opened?  Cheap (an fstat, a stat and a
 * few small sysfs reads), for a periodic check.  why gets one line for the
 * log and the status ("vanished: ..." for the first two answers).
 *
 *   FF_MEMBER_VANISHED   what is written to it now is lost or goes nowhere:
 *                        a file unlinked (also: replaced by another file at
 *                        its path), a block device removed (its
 *                        /sys/dev/block/MAJ:MIN gone, or that number now
 *                        belonging to another disk), a loop device whose
 *                        backing file was unlinked
 *   FF_MEMBER_VANISHING  a block device's path no longer names it (the node
 *                        is gone, or names another device): as udev removes
 *                        the node of a removed device; the caller fails it
 *                        when a later check still says so (udev may rewrite
 *                        a symlink for a moment)
 *   FF_MEMBER_MOVED      the member is intact but will not be found at its
 *                        path by the next assembly: a file renamed away (it
 *                        still has a link), a loop device detached with
 *                        `losetup -d` while in use (the kernel detaches it
 *                        when the array closes it): a warning, no failure
 *   FF_MEMBER_PRESENT    nothing to say (also when the check itself cannot
 *                        run: a failed fstat is left to the I/O path)
 */
enum ff_member_presence {
	FF_MEMBER_PRESENT = 0,
	FF_MEMBER_VANISHED = 1,
	FF_MEMBER_VANISHING = 2,
	FF_MEMBER_MOVED = 3,
};
enum ff_member_presence ff_member_presence(const struct ff_member *m, char *why, size_t len);

/* Synchronous O_DIRECT helpers for start-up paths (superblocks, assembly);
 * the data path goes through io/uring.h.  Short transfers are completed;
 * return 0 or -errno. */
int ff_member_pread(struct ff_member *m, void *buf, size_t len, uint64_t off);
int ff_member_pwrite(struct ff_member *m, const void *buf, size_t len, uint64_t off);
int ff_member_flush(struct ff_member *m);

/*
 * Tell the device that [off, off + len) holds nothing (NVMe Dataset
 * Management deallocate, TRIM): a block device's BLKDISCARD, issued in
 * pieces of FF_DISCARD_PIECE so that no single ioctl holds the caller for
 * long on a huge drive (a drive may take a second or more per piece).
 * What the range reads back afterwards is the device's business (zeros,
 * ones or the old data): no caller may rely on it.  *done gets the bytes
 * deallocated, also on an error (what the pieces before it did).
 * -EOPNOTSUPP: the device cannot deallocate, or the member is a file (its
 * space is the host filesystem's: io/file.c says why no hole is punched);
 * -EINVAL: the range is not whole logical blocks inside the member;
 * -EROFS: opened read-only.
 */
#define FF_DISCARD_PIECE (1ull << 30)
int ff_member_discard(struct ff_member *m, uint64_t off, uint64_t len, uint64_t *done);

#endif
