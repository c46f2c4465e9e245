/* SPDX-License-Identifier: MIT */
/*
 * Members and the io_uring ring on real files and a real loop device: what
 * a member is comes from the system (size, block size, O_DIRECT alignment,
 * NVMe or not); the ring completes requests, reports errors with the
 * member, and carries out each kind of injected fault.  The ring tests run
 * twice over a file in /dev/shm: _i = 0 the way it is opened (sync_io: on
 * the ring's thread), _i = 1 through io_uring (sync_io cleared).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "io/backend.h"
#include "io/bitmap.h"
#include "io/fault.h"
#include "io/lru.h"
#include "io/uring.h"

static char dir[256], file[300];

static void sized_file(const char *path, unsigned mb)
{
	int fd = open(path, O_CREAT | O_RDWR | O_TRUNC, 0600);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)mb << 20), 0);
	close(fd);
}

static void make_file(unsigned mb)
{
	snprintf(dir, sizeof(dir), "/dev/shm/ffio.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(file, sizeof(file), "%s/member.img", dir);
	sized_file(file, mb);
}

static void remove_file(void)
{
	unlink(file);
	rmdir(dir);
}

/* io/bitmap.h: word scans stop at nbits whatever the last word holds past
 * it; byte bitmaps put bit i in byte i / 8 whatever the host. */
START_TEST(bitmap_find_next_respects_bounds)
{
	uint64_t m[3] = { 0, 0, 0 };
	const uint64_t n = 150;
	uint8_t b[4] = { 0, 0, 0, 0 };
	_Atomic uint8_t ab[4] = { 0, 0, 0, 0 };

	ck_assert_uint_eq(ff_bit_find_next_set(m, n, 0), n);
	ck_assert_uint_eq(ff_bit_find_next_clear(m, n, 5), 5);
	ff_bit_set(m, 70);
	ff_bit_set(m, 149);
	ck_assert(ff_bit_test(m, 70) && !ff_bit_test(m, 69));
	ck_assert_uint_eq(ff_bit_find_next_set(m, n, 0), 70);
	ck_assert_uint_eq(ff_bit_find_next_set(m, n, 70), 70);
	ck_assert_uint_eq(ff_bit_find_next_set(m, n, 71), 149);
	ff_bit_clear(m, 149);
	m[2] |= ~0ull << (n % 64); /* garbage past nbits */
	ck_assert_uint_eq(ff_bit_find_next_set(m, n, 71), n);
	m[0] = m[1] = ~0ull;
	m[2] = ~0ull;
	ck_assert_uint_eq(ff_bit_find_next_clear(m, n, 0), n);
	ff_bit_clear(m, 128);
	ck_assert_uint_eq(ff_bit_find_next_clear(m, n, 3), 128);
	ff_bit8_set(b, 9);
	ck_assert_uint_eq(b[1], 2);
	ck_assert(ff_bit8_test(b, 9) && !ff_bit8_test(b, 8));
	ff_bit8_clear(b, 9);
	ck_assert_uint_eq(b[1], 0);
	ff_bit8_set_atomic(ab, 17);
	ff_bit8_set_atomic(ab, 16);
	ck_assert_uint_eq(ab[2], 3);
	ff_bit8_clear_atomic(ab, 16);
	ck_assert(ff_bit8_test_atomic(ab, 17) && !ff_bit8_test_atomic(ab, 16));
}
END_TEST

/* io/lru.h: eviction walks from the least recently used; a touch makes an
 * entry the newest, on the list or not; a removal from the middle keeps
 * the others' order, and removing twice does nothing. */
struct lru_item {
	int id;
	struct ff_lru_node node;
};

static void lru_expect(const struct ff_lru *l, const int *ids, unsigned n)
{
	const struct ff_lru_node *p = ff_lru_oldest(l);

	for (unsigned i = 0; i < n; i++, p = ff_lru_newer(l, p)) {
		ck_assert_ptr_nonnull(p);
		ck_assert_int_eq(FF_LRU_ENTRY(p, struct lru_item, node)->id, ids[i]);
	}
	ck_assert_ptr_null(p);
}

START_TEST(lru_evicts_oldest_first_and_touch_moves_to_the_front)
{
	struct lru_item it[5];
	struct ff_lru l;

	memset(it, 0, sizeof(it));
	ff_lru_init(&l);
	ck_assert_ptr_null(ff_lru_oldest(&l));
	for (int i = 0; i < 5; i++) {
		it[i].id = i;
		ck_assert(!ff_lru_linked(&it[i].node));
		ff_lru_touch(&l, &it[i].node);
	}
	lru_expect(&l, (const int[]){ 0, 1, 2, 3, 4 }, 5);
	ff_lru_touch(&l, &it[0].node);
	ff_lru_touch(&l, &it[2].node);
	lru_expect(&l, (const int[]){ 1, 3, 4, 0, 2 }, 5);
	ff_lru_touch(&l, &it[2].node); /* already the newest */
	lru_expect(&l, (const int[]){ 1, 3, 4, 0, 2 }, 5);
	ff_lru_remove(&it[4].node);
	ck_assert(!ff_lru_linked(&it[4].node));
	ff_lru_remove(&it[4].node);
	lru_expect(&l, (const int[]){ 1, 3, 0, 2 }, 4);
	ff_lru_remove(&it[1].node); /* the oldest: the next one is evicted next */
	lru_expect(&l, (const int[]){ 3, 0, 2 }, 3);
	ff_lru_remove(&it[2].node); /* the newest */
	lru_expect(&l, (const int[]){ 3, 0 }, 2);
	ff_lru_touch(&l, &it[4].node); /* back on, as the newest */
	lru_expect(&l, (const int[]){ 3, 0, 4 }, 3);
	ff_lru_remove(&it[3].node);
	ff_lru_remove(&it[0].node);
	ff_lru_remove(&it[4].node);
	ck_assert_ptr_null(ff_lru_oldest(&l));
}
END_TEST

START_TEST(file_member_is_described_by_the_system)
{
	struct ff_member m;
	struct ff_err err = { "" };
	char d[200];

	make_file(16);
	ck_assert_msg(ff_member_open(&m, file, false, &err) == 0, "%s", err.msg);
	ck_assert(!m.is_bdev);
	ck_assert(m.in_memory); /* /dev/shm is tmpfs: writes are memory copies */
	ck_assert_str_eq(m.backend->name, "ram");
	ck_assert_uint_eq(m.size_bytes, 16u << 20);
	ck_assert(FF_IS_POW2(m.lbs) && m.lbs >= 512 && m.lbs <= 4096);
	ck_assert(m.dio_off_align > 0 && m.dio_mem_align > 0);
	ck_assert(!m.nvme.is_nvme);
	ck_assert_ptr_nonnull(strstr(ff_member_describe(&m, d, sizeof(d)), "not NVMe"));
	ff_member_close(&m);
	remove_file();
}
END_TEST

struct locker {
	struct ff_member m;
	pid_t tid;
	int rc;
	uint64_t ns;
};

static void *lock_member(void *arg)
{
	struct locker *l = arg;
	struct ff_err err = { "" };
	uint64_t t0 = ff_mono_ns();

	l->tid = (pid_t)syscall(SYS_gettid);
	l->rc = ff_member_lock(&l->m, &err);
	l->ns = ff_mono_ns() - t0;
	return NULL;
}

/* The system call thread tid is blocked in, from /proc (-1 if running). */
static long blocked_in(pid_t tid)
{
	char path[64], buf[64] = "";
	long nr = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
	f = fopen(path, "r");
	if (f) {
		if (fgets(buf, sizeof(buf), f))
			nr = strtol(buf, NULL, 10);
		fclose(f);
	}
	return nr;
}

/* Handshake: the waiter of l is asleep in system call nr (bounded: 5 s of
 * 1 ms looks at /proc). */
static void wait_asleep_in(struct locker *l, long want)
{
	struct timespec ms = { 0, 1000000 };
	long nr = -1;

	for (int i = 0; i < 5000 && nr != want; i++) {
		nanosleep(&ms, NULL);
		if (__atomic_load_n(&l->tid, __ATOMIC_ACQUIRE))
			nr = blocked_in(l->tid);
	}
	ck_assert_msg(nr == want, "the waiter never slept in system call %ld (it is in %ld)", want,
		      nr);
}

/* The holder locks the member; l's thread starts waiting for it. */
static void hold_and_wait(struct ff_member *holder, struct locker *l, pthread_t *t)
{
	struct ff_err err = { "" };

	ck_assert_msg(ff_member_open(holder, file, false, &err) == 0, "%s", err.msg);
	ck_assert_msg(ff_member_lock(holder, &err) == 0, "%s", err.msg);
	ck_assert_msg(ff_member_open(&l->m, file, false, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(pthread_create(t, NULL, lock_member, l), 0);
	wait_asleep_in(l, SYS_flock);
}

/* l's thread took the lock, long before the deadline. */
static void took_it_at_once(struct locker *l, pthread_t t)
{
	pthread_join(t, NULL);
	ck_assert_msg(l->rc == 0, "the waiter did not take the released lock (rc %d after %llu ms)",
		      l->rc, (unsigned long long)(l->ns / 1000000));
	ck_assert_msg(l->ns < FF_MEMBER_LOCK_WAIT_MS * 1000000ull / 2,
		      "took the lock after %llu ms", (unsigned long long)(l->ns / 1000000));
	ff_member_close(&l->m);
}

/* A member locked by another user (here another open file of this process:
 * flock locks belong to the open file) is waited for without polling: the
 * waiter sleeps in flock(2) and takes the lock as soon as the holder closes
 * it, long before the deadline. */
START_TEST(busy_member_lock_waits_for_the_holders_close)
{
	struct ff_member holder;
	struct ff_err err = { "" };
	struct locker l = { .tid = 0 };
	pthread_t t;

	make_file(16);
	hold_and_wait(&holder, &l, &t);
	ff_member_close(&holder);
	took_it_at_once(&l, t);

	/* a holder that stays: busy at the deadline, with the message */
	ck_assert_msg(ff_member_open(&holder, file, false, &err) == 0, "%s", err.msg);
	ck_assert_msg(ff_member_lock(&holder, &err) == 0, "%s", err.msg);
	ck_assert_msg(ff_member_open(&l.m, file, false, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(ff_member_lock(&l.m, &err), -EBUSY);
	ck_assert_ptr_nonnull(strstr(err.msg, "in use by another process"));
	ff_member_close(&l.m);
	ff_member_close(&holder);
	remove_file();
}
END_TEST

/* The lock is waited for, not its holder's close: the kernel reports the
 * close of a file (inotify) before it drops the file's locks, so a waiter
 * woken by that report could find the lock still held and sleep on to its
 * deadline (CI's xattr-crash: a mount after kill -9 gave up after 60 s).
 * A holder that unlocks without closing shows the same gap deterministically:
 * first a close of another open file of the member (a report, lock still
 * held), then the unlock (no report).  The waiter must take the lock then. */
START_TEST(member_lock_follows_the_lock_not_the_close)
{
	struct ff_member holder, other;
	struct ff_err err = { "" };
	struct locker l = { .tid = 0 };
	pthread_t t;

	make_file(16);
	ck_assert_msg(ff_member_open(&other, file, true, &err) == 0, "%s", err.msg);
	hold_and_wait(&holder, &l, &t);
	ff_member_close(&other); /* a close while the lock is held */
	wait_asleep_in(&l, SYS_flock);
	ck_assert_int_eq(flock(holder.fd, LOCK_UN), 0); /* the lock goes, no close */
	took_it_at_once(&l, t);
	ff_member_close(&holder);
	remove_file();
}
END_TEST

/* Child: lock the member as a mounted daemon does (pid note and a mount
 * note), hand its open file to the parent over sock, exit. */
static void lock_and_pass_on(int sock)
{
	struct ff_member m;
	struct ff_err err = { "" };
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	char byte = 'x';
	struct iovec iov = { &byte, 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			      .msg_controllen = sizeof(cbuf) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);

	if (ff_member_open(&m, file, false, &err) < 0 || ff_member_lock(&m, &err) < 0 ||
	    ff_member_notes_leave(1) < 0)
		_exit(2);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &m.fd, sizeof(int));
	_exit(sendmsg(sock, &msg, 0) == 1 ? 0 : 3);
}

static int recv_fd(int sock)
{
	char cbuf[CMSG_SPACE(sizeof(int))] = { 0 };
	char byte;
	struct iovec iov = { &byte, 1 };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
			      .msg_controllen = sizeof(cbuf) };
	int fd = -1;

	if (recvmsg(sock, &msg, 0) == 1 && CMSG_FIRSTHDR(&msg))
		memcpy(&fd, CMSG_DATA(CMSG_FIRSTHDR(&msg)), sizeof(int));
	return fd;
}

/* A daemon killed with SIGKILL leaves its members' open files (with their
 * lock and notes) to the kernel, which releases them when it has torn
 * down the daemon's io_uring rings: seen to take over 5 s under load.
 * Here the dead daemon's open file is kept by this process instead (passed
 * over a socket): the waiter must wait past FF_MEMBER_LOCK_WAIT_MS for
 * a holder whose process is gone, and take the lock at the close. */
START_TEST(member_lock_waits_longer_for_a_dead_holders_file)
{
	struct locker l = { .tid = 0 };
	struct ff_err err = { "" };
	struct timespec until;
	int sv[2], st = -1, kept;
	pthread_t t;
	pid_t pid;

	make_file(16);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		lock_and_pass_on(sv[1]);
	kept = recv_fd(sv[0]);
	ck_assert_int_ge(kept, 0);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d", st);
	ck_assert_msg(ff_member_open(&l.m, file, false, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(pthread_create(&t, NULL, lock_member, &l), 0);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += FF_MEMBER_LOCK_WAIT_MS / 1000 + 2;
	ck_assert_msg(pthread_timedjoin_np(t, NULL, &until) == ETIMEDOUT,
		      "gave up on a dead holder's file after %llu ms (rc %d)",
		      (unsigned long long)(l.ns / 1000000), l.rc);
	close(kept); /* the kernel lets the dead daemon's file go */
	pthread_join(t, NULL);
	ck_assert_int_eq(l.rc, 0);
	ff_member_close(&l.m);
	close(sv[0]);
	close(sv[1]);
	remove_file();
}
END_TEST

/* A loop device over the test file (losetup OPTIONS), its path in dev. */
static void loop_attach(const char *options, char *dev, size_t len)
{
	char cmd[600];
	FILE *p;

	snprintf(cmd, sizeof(cmd), "losetup %s -f --show %s", options, file);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_nonnull(fgets(dev, (int)len, p));
	pclose(p);
	dev[strcspn(dev, "\n")] = '\0';
	ck_assert_msg(dev[0] == '/', "losetup gave no device");
}

/* losetup ACTION DEV (-d detaches, -c re-reads the capacity). */
static void loop_cmd(const char *action, const char *dev)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "losetup %s %s", action, dev);
	ck_assert_int_eq(system(cmd), 0);
}

/* A loop device with 4 KiB logical sectors: the member reports 4096. */
START_TEST(loop_device_block_size_comes_from_the_device)
{
	struct ff_member m;
	struct ff_err err = { "" };
	char dev[64] = "";

	make_file(32);
	loop_attach("--direct-io=on --sector-size 4096", dev, sizeof(dev));
	ck_assert_msg(ff_member_open(&m, dev, false, &err) == 0, "%s", err.msg);
	ck_assert(m.is_bdev);
	ck_assert(!m.in_memory); /* a device, even one over a tmpfs file */
	ck_assert_str_eq(m.backend->name, "bdev");
	ck_assert_uint_eq(m.lbs, 4096);
	ck_assert_uint_eq(m.size_bytes, 32u << 20);
	ck_assert(!m.nvme.is_nvme); /* a loop device answers no NVMe Identify */
	ff_member_close(&m);
	loop_cmd("-d", dev);
	remove_file();
}
END_TEST

/* A disk the kernel deleted (an NVMe drive pulled) has capacity 0 before
 * its sysfs entry goes, and its writes fail with ENOSPC: presence calls it
 * removed, and a device that shrank under the member vanished too.  A
 * loop device whose file is cut and whose capacity is re-read
 * (LOOP_SET_CAPACITY) does the same to the block device. */
START_TEST(bdev_whose_capacity_drops_has_vanished)
{
	struct ff_member m;
	struct ff_err err = { "" };
	char dev[64] = "", why[256];

	make_file(32);
	loop_attach("--direct-io=on", dev, sizeof(dev));
	ck_assert_msg(ff_member_open(&m, dev, false, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(ff_member_presence(&m, why, sizeof(why)), FF_MEMBER_PRESENT);
	ck_assert_int_eq(truncate(file, 16 << 20), 0);
	loop_cmd("-c", dev);
	ck_assert_int_eq(ff_member_presence(&m, why, sizeof(why)), FF_MEMBER_VANISHED);
	ck_assert_str_eq(why, "vanished: the device shrank to 16777216 bytes, below the member's "
			 "33554432");
	ck_assert_int_eq(truncate(file, 0), 0);
	loop_cmd("-c", dev);
	ck_assert_int_eq(ff_member_presence(&m, why, sizeof(why)), FF_MEMBER_VANISHED);
	ck_assert_str_eq(why, "vanished: the device was removed (the kernel set its capacity to 0)");
	ff_member_close(&m);
	loop_cmd("-d", dev);
	remove_file();
}
END_TEST

/* ff_member_discard: a loop device deallocates (a hole in its backing
 * file, st_blocks drops by the range and no more); an unaligned range, one
 * past the end, a read-only member, a file member and the fault backend
 * under the power-loss undo log are refused, and nothing is deallocated. */
START_TEST(discard_deallocates_only_its_range)
{
	struct ff_member m, f;
	struct ff_err err = { "" };
	char cmd[600], dev[64] = "";
	uint64_t done = 1;
	uint8_t *buf = ff_alloc_aligned(1 << 20);
	struct stat st;

	make_file(8);
	memset(buf, 0xff, 1 << 20);
	ck_assert_msg(ff_member_open(&f, file, false, &err) == 0, "%s", err.msg);
	for (unsigned i = 0; i < 8; i++)
		ck_assert_int_eq(ff_member_pwrite(&f, buf, 1 << 20, (uint64_t)i << 20), 0);
	ck_assert_int_eq(ff_member_discard(&f, 0, 1 << 20, &done), -EOPNOTSUPP);
	ck_assert_uint_eq(done, 0);
	ff_member_close(&f);
	ck_assert_int_eq(stat(file, &st), 0);
	ck_assert_int_eq(st.st_blocks * 512, 8 << 20); /* a file member is not punched */

	loop_attach("", dev, sizeof(dev));
	ck_assert_msg(ff_member_open(&m, dev, true, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(ff_member_discard(&m, 1 << 20, 1 << 20, &done), -EROFS);
	ff_member_close(&m);
	ck_assert_msg(ff_member_open(&m, dev, false, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(ff_member_discard(&m, 100, 1 << 20, &done), -EINVAL);
	ck_assert_int_eq(ff_member_discard(&m, 7 << 20, 2 << 20, &done), -EINVAL);
	ck_assert_msg(ff_undo_open(&m, dir, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(ff_member_discard(&m, 1 << 20, 1 << 20, &done), -EOPNOTSUPP);
	ff_member_close(&m);
	ff_fault_free(&m); /* the undo log's fault backend (LeakSanitizer) */
	ck_assert_int_eq(stat(file, &st), 0);
	ck_assert_int_eq(st.st_blocks * 512, 8 << 20);

	ck_assert_msg(ff_member_open(&m, dev, false, &err) == 0, "%s", err.msg);
	ck_assert_int_eq(ff_member_discard(&m, 1 << 20, 3 << 20, &done), 0);
	ck_assert_uint_eq(done, 3 << 20);
	ck_assert_int_eq(ff_member_pread(&m, buf, 1 << 20, 0), 0);
	ck_assert_uint_eq(buf[0], 0xff); /* before the range: untouched */
	ck_assert_int_eq(ff_member_pread(&m, buf, 1 << 20, 4 << 20), 0);
	ck_assert_uint_eq(buf[(1 << 20) - 1], 0xff); /* after it: untouched */
	ff_member_close(&m);
	ck_assert_int_eq(stat(file, &st), 0);
	ck_assert_int_eq(st.st_blocks * 512, 5 << 20);
	loop_cmd("-d", dev);
	unlink(file);
	snprintf(cmd, sizeof(cmd), "%s/%s.undo", dir, strrchr(dev, '/') + 1); /* ff_undo_open's */
	ck_assert_int_eq(unlink(cmd), 0);
	rmdir(dir);
	free(buf);
}
END_TEST

START_TEST(bad_members_are_refused_with_their_name)
{
	struct ff_member m;
	struct ff_err err = { "" };

	ck_assert_int_eq(ff_member_open(&m, "/nonexistent/member", false, &err), -ENOENT);
	ck_assert_ptr_nonnull(strstr(err.msg, "/nonexistent/member"));
	ck_assert_int_lt(ff_member_open(&m, "/dev/shm", false, &err), 0);
	ck_assert_ptr_nonnull(strstr(err.msg, "/dev/shm"));
}
END_TEST

struct fixture {
	struct ff_member m;
	struct ff_member *mp[1];
	struct ff_ring ring;
	uint8_t *buf;
};

/* The ring ran (sync) or did not run (through io_uring) f's requests itself. */
static void fx_check_path(struct fixture *f, int through_ring)
{
	if (through_ring)
		ck_assert_uint_eq(f->ring.sync_done, 0);
	else
		ck_assert_uint_gt(f->ring.sync_done, 0);
}

static void fx_open(struct fixture *f, int through_ring)
{
	struct ff_err err = { "" };

	make_file(8);
	ck_assert_msg(ff_member_open(&f->m, file, false, &err) == 0, "%s", err.msg);
	ck_assert(f->m.sync_io); /* a file in RAM */
	f->m.sync_io = !through_ring;
	f->mp[0] = &f->m;
	ck_assert_int_eq(ff_ring_init(&f->ring, f->mp, 1, 16), 0);
	f->buf = ff_alloc_aligned(1 << 20);
}

static void fx_close(struct fixture *f)
{
	ff_ring_exit(&f->ring);
	ff_member_close(&f->m);
	ff_fault_free(&f->m);
	free(f->buf);
	remove_file();
}

static int rw(struct fixture *f, int op, uint64_t off, void *buf, uint32_t len)
{
	struct ff_io_req q = { .op = (uint8_t)op, .member = 0, .off = off, .len = len, .buf = buf };

	return ff_ring_run(&f->ring, &q, 1);
}

START_TEST(ring_round_trip_with_and_without_registered_buffers)
{
	struct fixture f;
	struct iovec iov;
	uint8_t *back = ff_alloc_aligned(1 << 20);

	fx_open(&f, _i);
	for (unsigned i = 0; i < (1u << 20); i++)
		f.buf[i] = (uint8_t)(i * 7);
	ck_assert_int_eq(rw(&f, FF_IO_WRITE, 0, f.buf, 1 << 20), 0);
	memset(back, 0, 1 << 20);
	ck_assert_int_eq(rw(&f, FF_IO_READ, 0, back, 1 << 20), 0);
	ck_assert_int_eq(memcmp(f.buf, back, 1 << 20), 0);
	iov.iov_base = back;
	iov.iov_len = 1 << 20;
	ck_assert_int_eq(ff_ring_register_buffers(&f.ring, &iov, 1), 0); /* READ_FIXED now */
	memset(back, 0, 1 << 20);
	ck_assert_int_eq(rw(&f, FF_IO_READ, 0, back, 1 << 20), 0);
	ck_assert_int_eq(memcmp(f.buf, back, 1 << 20), 0);
	/* past the end of the member: an error, not silence */
	ck_assert_int_eq(rw(&f, FF_IO_READ, 8u << 20, back, 4096), -EIO);
	fx_check_path(&f, _i);
	free(back);
	fx_close(&f);
}
END_TEST

/* fault: reads of the member fail with EIO after 2 operations */
START_TEST(fault_error_after_n_ops)
{
	struct fixture f;
	struct ff_fault_rule rule;
	struct ff_err err;

	fx_open(&f, _i);
	ck_assert_int_eq(ff_fault_parse("op=r,err=EIO,after=2", &rule, &err), 0);
	ck_assert_int_eq(ff_fault_add(&f.m, &rule), 0);
	ck_assert_int_eq(rw(&f, FF_IO_READ, 0, f.buf, 4096), 0);
	ck_assert_int_eq(rw(&f, FF_IO_READ, 0, f.buf, 4096), 0);
	ck_assert_int_eq(rw(&f, FF_IO_READ, 0, f.buf, 4096), -EIO);
	ck_assert_int_eq(rw(&f, FF_IO_WRITE, 0, f.buf, 4096), 0); /* writes untouched */
	fx_check_path(&f, _i);
	fx_close(&f);
}
END_TEST

/* fault: 8 bits flipped in every read of [64K, 128K) only */
START_TEST(fault_flips_bits_in_a_range)
{
	struct fixture f;
	struct ff_fault_rule rule;
	struct ff_err err;
	uint8_t *back = ff_alloc_aligned(65536);
	unsigned diff = 0;

	fx_open(&f, _i);
	memset(f.buf, 0x42, 1 << 20);
	ck_assert_int_eq(rw(&f, FF_IO_WRITE, 0, f.buf, 1 << 20), 0);
	ck_assert_int_eq(ff_fault_parse("op=r,flip=8,from=64K,to=128K", &rule, &err), 0);
	ck_assert_int_eq(ff_fault_add(&f.m, &rule), 0);
	ck_assert_int_eq(rw(&f, FF_IO_READ, 0, back, 65536), 0);
	ck_assert_int_eq(memcmp(back, f.buf, 65536), 0);
	ck_assert_int_eq(rw(&f, FF_IO_READ, 65536, back, 65536), 0);
	for (unsigned i = 0; i < 65536; i++)
		diff += (unsigned)__builtin_popcount(back[i] ^ 0x42);
	ck_assert_uint_ge(diff, 1);
	ck_assert_uint_le(diff, 8);
	fx_check_path(&f, _i);
	free(back);
	fx_close(&f);
}
END_TEST

static void keep(struct ff_io_req *q)
{
	(void)q;
}

/* fault: 2 s latency on reads; the delayed request can be cancelled */
START_TEST(fault_latency_and_cancel)
{
	struct fixture f;
	struct ff_fault_rule rule;
	struct ff_err err;
	struct ff_io_req q = { .op = FF_IO_READ, .member = 0, .off = 0, .len = 4096 };
	uint64_t t0;

	fx_open(&f, _i);
	ck_assert_int_eq(ff_fault_parse("op=r,lat_ms=2000", &rule, &err), 0);
	ck_assert_int_eq(ff_fault_add(&f.m, &rule), 0);
	q.buf = f.buf;
	q.complete = keep;
	t0 = ff_mono_ns();
	ff_ring_queue(&f.ring, &q);
	ck_assert_int_eq(ff_ring_submit(&f.ring), 0);
	ck_assert_int_eq(ff_ring_cancel(&f.ring, &q), 0);
	while (ff_ring_reap(&f.ring, true) == 0)
		;
	ck_assert_int_eq(q.result, -ECANCELED);
	ck_assert_msg(ff_mono_ns() - t0 < 1000000000ull, "the cancel did not cut the delay short");
	ff_fault_clear(&f.m);
	t0 = ff_mono_ns();
	ck_assert_int_eq(ff_fault_parse("op=r,lat_ms=200", &rule, &err), 0);
	ck_assert_int_eq(ff_fault_add(&f.m, &rule), 0);
	ck_assert_int_eq(rw(&f, FF_IO_READ, 0, f.buf, 4096), 0);
	ck_assert_uint_ge(ff_mono_ns() - t0, 200000000ull);
	fx_check_path(&f, _i); /* the delayed read itself ran on the ring's thread */
	/* a delay with an error: the write fails when the delay ends, and
	 * writes nothing */
	ff_fault_clear(&f.m);
	ck_assert_int_eq(ff_fault_parse("op=w,lat_ms=150,err=EIO", &rule, &err), 0);
	ck_assert_int_eq(ff_fault_add(&f.m, &rule), 0);
	memset(f.buf, 0x77, 4096);
	t0 = ff_mono_ns();
	ck_assert_int_eq(rw(&f, FF_IO_WRITE, 0, f.buf, 4096), -EIO);
	ck_assert_uint_ge(ff_mono_ns() - t0, 150000000ull);
	ff_fault_clear(&f.m);
	ck_assert_int_eq(rw(&f, FF_IO_READ, 0, f.buf, 4096), 0);
	for (unsigned i = 0; i < 4096; i++)
		ck_assert_uint_ne(f.buf[i], 0x77);
	fx_close(&f);
}
END_TEST

/* The hold handshake: requests a latency rule holds are counted from their
 * dispatch until they complete, so a test can wait for them instead of
 * sleeping. */
START_TEST(fault_hold_is_counted_until_completion)
{
	struct fixture f;
	struct ff_fault_rule rule;
	struct ff_err err;
	struct ff_io_req q[3];
	unsigned left = 3;

	fx_open(&f, _i);
	ck_assert_uint_eq(ff_fault_held(&f.m, FF_FAULT_ANY), 0);
	ck_assert_int_eq(ff_fault_wait_held(&f.m, FF_FAULT_ANY, 1, 10), -ETIMEDOUT);
	ck_assert_int_eq(ff_fault_parse("op=w,err=EIO", &rule, &err), 0); /* rule 0: no hold */
	ck_assert_int_eq(ff_fault_add(&f.m, &rule), 0);
	ck_assert_int_eq(ff_fault_parse("op=r,lat_ms=10000", &rule, &err), 0); /* rule 1 */
	ck_assert_int_eq(ff_fault_add(&f.m, &rule), 0);
	for (unsigned i = 0; i < 3; i++) {
		q[i] = (struct ff_io_req){ .op = FF_IO_READ, .len = 4096, .off = i * 4096ull,
					   .buf = f.buf + i * 4096, .complete = keep };
		ff_ring_queue(&f.ring, &q[i]);
	}
	ck_assert_int_eq(ff_ring_submit(&f.ring), 0);
	ck_assert_int_eq(ff_fault_wait_held(&f.m, 1, 3, 5000), 0);
	ck_assert_uint_eq(ff_fault_held(&f.m, 1), 3);
	ck_assert_uint_eq(ff_fault_held(&f.m, 0), 0);
	ck_assert_uint_eq(ff_fault_held(&f.m, FF_FAULT_ANY), 3);
	ck_assert_int_eq(ff_fault_wait_held(&f.m, 1, 4, 20), -ETIMEDOUT);
	for (unsigned i = 0; i < 3; i++)
		ck_assert_int_eq(ff_ring_cancel(&f.ring, &q[i]), 0);
	while (left) {
		int n = ff_ring_reap(&f.ring, true);

		ck_assert_int_ge(n, 0);
		left -= (unsigned)n;
	}
	for (unsigned i = 0; i < 3; i++)
		ck_assert_int_eq(q[i].result, -ECANCELED);
	ck_assert_uint_eq(ff_fault_held(&f.m, FF_FAULT_ANY), 0);
	fx_close(&f);
}
END_TEST

/* Power-loss simulation: with an undo dir given, a member logs what each
 * write overwrites, and a completed flush empties the log of what it covers. */
START_TEST(undo_log_keeps_what_unflushed_writes_overwrote)
{
	struct ff_err err = { "" };
	struct ff_undo_rec rec;
	struct fixture f;
	char log[400];
	uint8_t *old = malloc(4096);
	struct stat st;
	int fd;

	make_file(8);
	ck_assert_msg(ff_member_open(&f.m, file, false, &err) == 0, "%s", err.msg);
	ck_assert_msg(ff_undo_open(&f.m, dir, &err) == 0, "%s", err.msg);
	ck_assert_ptr_nonnull(f.m.fault);
	f.m.sync_io = !_i;
	f.mp[0] = &f.m;
	ck_assert_int_eq(ff_ring_init(&f.ring, f.mp, 1, 16), 0);
	f.buf = ff_alloc_aligned(1 << 20);
	snprintf(log, sizeof(log), "%s/member.img.undo", dir);

	memset(f.buf, 0xaa, 4096);
	ck_assert_int_eq(rw(&f, FF_IO_WRITE, 0, f.buf, 4096), 0);
	ck_assert_int_eq(stat(log, &st), 0);
	ck_assert_int_eq(st.st_size, sizeof(rec) + 4096);
	ck_assert_int_eq(rw(&f, FF_IO_FSYNC, 0, NULL, 0), 0); /* covers it: the log empties */
	ck_assert_int_eq(stat(log, &st), 0);
	ck_assert_int_eq(st.st_size, 0);

	memset(f.buf, 0xbb, 4096);
	ck_assert_int_eq(rw(&f, FF_IO_WRITE, 0, f.buf, 4096), 0);
	memset(f.buf, 0xcc, 4096);
	ck_assert_int_eq(ff_member_pwrite(&f.m, f.buf, 4096, 8192), 0);
	fd = open(log, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(read(fd, &rec, sizeof(rec)), sizeof(rec));
	ck_assert(rec.kind == FF_UNDO_WRITE && rec.seq == 2 && rec.off == 0 && rec.len == 4096);
	ck_assert_int_eq(read(fd, old, 4096), 4096);
	for (unsigned i = 0; i < 4096; i++)
		ck_assert_uint_eq(old[i], 0xaa); /* what the second write overwrote */
	ck_assert_int_eq(read(fd, &rec, sizeof(rec)), sizeof(rec));
	ck_assert(rec.kind == FF_UNDO_WRITE && rec.seq == 3 && rec.off == 8192 && rec.len == 4096);
	ck_assert_int_eq(read(fd, old, 4096), 4096);
	for (unsigned i = 0; i < 4096; i++)
		ck_assert_uint_eq(old[i], 0);
	close(fd);
	ck_assert_int_eq(ff_member_flush(&f.m), 0);
	ck_assert_int_eq(stat(log, &st), 0);
	ck_assert_int_eq(st.st_size, 0);
	fx_check_path(&f, _i);
	unlink(log);
	free(old);
	fx_close(&f);
}
END_TEST

static unsigned open_fds(void)
{
	char path[64];
	unsigned n = 0;

	for (int fd = 0; fd < 1024; fd++) {
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		n += access(path, F_OK) == 0;
	}
	return n;
}

/* A member slot pointed at another file (a member replaced): the ring's
 * requests go to the new file at once, whichever path they take, and the
 * fd the ring held for the old one is closed by the ring's own thread. */
START_TEST(member_update_moves_requests_to_the_new_file)
{
	struct ff_err err = { "" };
	struct ff_member m2;
	struct fixture f;
	char file2[320];
	uint8_t *back = ff_alloc_aligned(4096);
	unsigned fds0 = open_fds();

	fx_open(&f, _i);
	snprintf(file2, sizeof(file2), "%s/second.img", dir);
	sized_file(file2, 8);
	ck_assert_msg(ff_member_open(&m2, file2, false, &err) == 0, "%s", err.msg);
	m2.sync_io = !_i;
	f.mp[0] = &m2;
	/* twice before the ring's thread runs: the first hand-over is closed by
	 * the second update (open_fds below counts every fd) */
	ck_assert_int_eq(ff_ring_update_member(&f.ring, 0, m2.fd), 0);
	ck_assert_int_eq(ff_ring_update_member(&f.ring, 0, m2.fd), 0);
	if (!_i) { /* the new dup waits for the ring's thread, which still has the old */
		ck_assert_int_ge(atomic_load(&f.ring.sync_next[0]), 0);
		ck_assert_int_ge(f.ring.sync_fd[0], 0);
	} else { /* through io_uring: no dups at all */
		ck_assert_int_eq(atomic_load(&f.ring.sync_next[0]), -1);
		ck_assert_int_eq(f.ring.sync_fd[0], -1);
	}
	memset(f.buf, 0x5e, 4096);
	ck_assert_int_eq(rw(&f, FF_IO_WRITE, 4096, f.buf, 4096), 0);
	ck_assert_int_eq(atomic_load(&f.ring.sync_next[0]), FF_RING_NO_UPDATE); /* taken */
	ck_assert_int_eq(ff_member_pread(&m2, back, 4096, 4096), 0);
	ck_assert_int_eq(memcmp(back, f.buf, 4096), 0);
	ck_assert_int_eq(ff_member_pread(&f.m, back, 4096, 4096), 0);
	for (unsigned i = 0; i < 4096; i++)
		ck_assert_uint_eq(back[i], 0); /* the first file was not written */
	fx_check_path(&f, _i);
	ff_member_close(&m2);
	unlink(file2);
	free(back);
	fx_close(&f);
	ck_assert_uint_eq(open_fds(), fds0); /* the ring's duplicates are all closed */
}
END_TEST

START_TEST(fault_text_names_members)
{
	struct fixture f;
	struct ff_err err = { "" };

	fx_open(&f, _i);
	ck_assert_int_eq(ff_fault_apply_text(f.mp, 1, "member.img@op=w,err=ENOSPC", &err), 0);
	ck_assert_int_eq(rw(&f, FF_IO_WRITE, 0, f.buf, 4096), -ENOSPC);
	ck_assert_int_lt(ff_fault_apply_text(f.mp, 1, "other.img@op=w,err=EIO", &err), 0);
	ck_assert_ptr_nonnull(strstr(err.msg, "not a member"));
	ck_assert_int_lt(ff_fault_apply_text(f.mp, 1, "member.img@op=w", &err), 0);
	ck_assert_ptr_nonnull(strstr(err.msg, "does nothing"));
	fx_close(&f);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("io");
	TCase *tc = tcase_create("members-and-rings");
	SRunner *sr;
	int failed;

	ff_log_set_level(getenv("FRAMEFS_LOG") ? FF_LOG_DEBUG : FF_LOG_ERR);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, bitmap_find_next_respects_bounds);
	tcase_add_test(tc, lru_evicts_oldest_first_and_touch_moves_to_the_front);
	tcase_add_test(tc, file_member_is_described_by_the_system);
	tcase_add_test(tc, busy_member_lock_waits_for_the_holders_close);
	tcase_add_test(tc, member_lock_follows_the_lock_not_the_close);
	tcase_add_test(tc, member_lock_waits_longer_for_a_dead_holders_file);
	tcase_add_test(tc, loop_device_block_size_comes_from_the_device);
	tcase_add_test(tc, bdev_whose_capacity_drops_has_vanished);
	tcase_add_test(tc, bad_members_are_refused_with_their_name);
	tcase_add_test(tc, discard_deallocates_only_its_range);
	tcase_add_loop_test(tc, ring_round_trip_with_and_without_registered_buffers, 0, 2);
	tcase_add_loop_test(tc, fault_error_after_n_ops, 0, 2);
	tcase_add_loop_test(tc, fault_flips_bits_in_a_range, 0, 2);
	tcase_add_loop_test(tc, fault_latency_and_cancel, 0, 2);
	tcase_add_loop_test(tc, fault_text_names_members, 0, 2);
	tcase_add_loop_test(tc, fault_hold_is_counted_until_completion, 0, 2);
	tcase_add_loop_test(tc, undo_log_keeps_what_unflushed_writes_overwrote, 0, 2);
	tcase_add_loop_test(tc, member_update_moves_requests_to_the_new_file, 0, 2);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
