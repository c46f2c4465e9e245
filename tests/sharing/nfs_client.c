/* NFSv4 client steps of tests/sharing/nfs.sh, through libnfs (user space:
 * this kernel has no NFS client).
 *
 *   ff-nfs-client put URL LOCAL...
 *       copies each LOCAL file to URL/its name (URL names a directory of
 *       the export: nfs://127.0.0.1/framefs/dir?version=4&nfsport=N),
 *       fsync and close each, and prints "put BYTES SECONDS".
 *   ff-nfs-client stale URL MNT NAME
 *       the stale-handle case: looks up URL/NAME over NFS and keeps its
 *       file handle, unlinks MNT/NAME on the framefs mount, waits (bounded)
 *       until the daemon freed the inode, creates MNT/NAME.new until it
 *       reuses the inode number, then sends PUTFH(old handle) + GETATTR:
 *       the server must answer NFS4ERR_STALE, and the new file's handle
 *       must still answer NFS4_OK.
 *
 * Why not nfs-cp for writes: libnfs 4.0 (Debian 12) fails to encode an
 * NFSv4 WRITE of more than 3936 bytes ("ZDR error: Failed to encode
 * COMPOUND4args"), and nfs-cp writes larger blocks.  So this client writes
 * in 3936-byte WRITEs, many in flight at once.  Reads (nfs-cp, nfs-cat)
 * are not affected.
 *
 * Exit status 0 on success, 1 on a failed check (message on stderr).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-nfs4.h>

/* libnfs 4.0 declares struct nfs_fh without defining it; this is its layout
 * (libnfs-private.h): what nfs_get_fh() returns. */
struct nfs_fh {
	int len;
	char *val;
};

#define WRITE_CHUNK 3936u /* the largest NFSv4 WRITE libnfs 4.0 encodes */
#define INFLIGHT 64

static void die(const char *what, struct nfs_context *nfs)
{
	fprintf(stderr, "ff-nfs-client: %s: %s\n", what, nfs ? nfs_get_error(nfs) : strerror(errno));
	exit(1);
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static struct nfs_context *connect_url(const char *url, struct nfs_url **u)
{
	struct nfs_context *nfs = nfs_init_context();

	if (!nfs)
		die("nfs_init_context", NULL);
	*u = nfs_parse_url_dir(nfs, url);
	if (!*u)
		die("cannot parse the URL", nfs);
	if (nfs_mount(nfs, (*u)->server, (*u)->path) != 0)
		die("mount", nfs);
	return nfs;
}

/* Run the context's event loop until *done (bounded: 60 s without it). */
static void wait_for(struct nfs_context *nfs, const int *pending, int target)
{
	double t0 = now_s();

	while (*pending > target) {
		struct pollfd p = { .fd = nfs_get_fd(nfs), .events = (short)nfs_which_events(nfs) };

		if (poll(&p, 1, 1000) < 0 && errno != EINTR)
			die("poll", NULL);
		if (nfs_service(nfs, p.revents) < 0)
			die("nfs_service", nfs);
		if (now_s() - t0 > 60)
			die("no reply from the server in 60 s", nfs);
	}
}

struct wstate {
	int pending;
	int failed;
	char err[256];
};

static void write_done(int status, struct nfs_context *nfs, void *data, void *priv)
{
	struct wstate *w = priv;

	(void)nfs;
	w->pending--;
	if (status < 0 && !w->failed) {
		w->failed = 1;
		snprintf(w->err, sizeof(w->err), "%s", (const char *)data);
	}
}

static int put_one(struct nfs_context *nfs, const char *dir, const char *local, long long *bytes)
{
	const char *base = strrchr(local, '/') ? strrchr(local, '/') + 1 : local;
	struct wstate w = { 0 };
	char path[4096], *buf;
	struct nfsfh *fh;
	struct stat st;
	uint64_t off;
	int fd = open(local, O_RDONLY);

	if (fd < 0 || fstat(fd, &st) != 0)
		die(local, NULL);
	buf = malloc((size_t)st.st_size + 1);
	if (!buf || read(fd, buf, (size_t)st.st_size) != st.st_size)
		die(local, NULL);
	close(fd);
	snprintf(path, sizeof(path), "%s/%s", dir, base);
	if (nfs_open(nfs, path, O_WRONLY | O_CREAT | O_TRUNC, &fh) != 0)
		die(path, nfs);
	for (off = 0; off < (uint64_t)st.st_size; off += WRITE_CHUNK) {
		uint64_t n = (uint64_t)st.st_size - off;

		if (n > WRITE_CHUNK)
			n = WRITE_CHUNK;
		wait_for(nfs, &w.pending, INFLIGHT - 1);
		if (nfs_pwrite_async(nfs, fh, off, n, buf + off, write_done, &w) != 0)
			die("nfs_pwrite_async", nfs);
		w.pending++;
	}
	wait_for(nfs, &w.pending, 0);
	if (w.failed) {
		fprintf(stderr, "ff-nfs-client: write %s: %s\n", path, w.err);
		exit(1);
	}
	if (nfs_fsync(nfs, fh) != 0)
		die("fsync", nfs);
	if (nfs_close(nfs, fh) != 0)
		die("close", nfs);
	free(buf);
	*bytes += st.st_size;
	return 0;
}

static int cmd_put(const char *url, int n, char **locals)
{
	struct nfs_url *u;
	struct nfs_context *nfs = connect_url(url, &u);
	long long bytes = 0;
	double t0 = now_s();
	int i;

	for (i = 0; i < n; i++)
		put_one(nfs, u->file ? u->file : "", locals[i], &bytes);
	printf("put %lld %.6f\n", bytes, now_s() - t0);
	nfs_destroy_url(u);
	nfs_destroy_context(nfs);
	return 0;
}

struct cstate {
	int pending;
	int rpc_status;
	nfsstat4 status;
};

static void compound_done(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct cstate *c = priv;
	COMPOUND4res *res = data;

	(void)rpc;
	c->pending = 0;
	c->rpc_status = status;
	c->status = (status == RPC_STATUS_SUCCESS && res) ? res->status : NFS4ERR_SERVERFAULT;
}

/* PUTFH(fh) + GETATTR(type, fileid): the compound's status. */
static nfsstat4 getattr_by_handle(struct nfs_context *nfs, const char *fh, unsigned len)
{
	uint32_t mask[1] = { (1u << FATTR4_TYPE) | (1u << FATTR4_FILEID) };
	nfs_argop4 op[2];
	COMPOUND4args args;
	struct cstate c = { .pending = 1 };

	memset(op, 0, sizeof(op));
	memset(&args, 0, sizeof(args));
	op[0].argop = OP_PUTFH;
	op[0].nfs_argop4_u.opputfh.object.nfs_fh4_len = len;
	op[0].nfs_argop4_u.opputfh.object.nfs_fh4_val = (char *)fh;
	op[1].argop = OP_GETATTR;
	op[1].nfs_argop4_u.opgetattr.attr_request.bitmap4_len = 1;
	op[1].nfs_argop4_u.opgetattr.attr_request.bitmap4_val = mask;
	args.minorversion = 0;
	args.argarray.argarray_len = 2;
	args.argarray.argarray_val = op;
	if (rpc_nfs4_compound_async(nfs_get_rpc_context(nfs), compound_done, &args, &c) != 0)
		die("rpc_nfs4_compound_async", nfs);
	wait_for(nfs, &c.pending, 0);
	if (c.rpc_status != RPC_STATUS_SUCCESS)
		die("COMPOUND PUTFH+GETATTR: RPC failed", nfs);
	return c.status;
}

/* The handle of PATH on the server: OPEN, keep the handle bytes, CLOSE
 * (the server holds no open file afterwards). */
static char *handle_of(struct nfs_context *nfs, const char *path, unsigned *len)
{
	struct nfsfh *fh;
	struct nfs_fh *h;
	char *copy;

	if (nfs_open(nfs, path, O_RDONLY, &fh) != 0)
		die(path, nfs);
	h = nfs_get_fh(fh);
	*len = (unsigned)h->len;
	copy = malloc(*len);
	if (!copy)
		die("malloc", NULL);
	memcpy(copy, h->val, *len);
	if (nfs_close(nfs, fh) != 0)
		die("close", nfs);
	return copy;
}

static int cmd_stale(const char *url, const char *mnt, const char *name)
{
	struct nfs_url *u;
	struct nfs_context *nfs = connect_url(url, &u);
	char path[4096], local[4096], fresh[4096], *old, *new;
	unsigned oldlen, newlen;
	struct stat a, b;
	double t0;
	nfsstat4 st;
	int fd, tries;

	snprintf(path, sizeof(path), "%s/%s", u->file ? u->file : "", name);
	snprintf(local, sizeof(local), "%s/%s", mnt, name);
	if (stat(local, &a) != 0)
		die(local, NULL);
	old = handle_of(nfs, path, &oldlen);
	st = getattr_by_handle(nfs, old, oldlen);
	if (st != NFS4_OK) {
		fprintf(stderr, "FAIL: the live file's handle answers %d, not NFS4_OK\n", st);
		return 1;
	}
	if (unlink(local) != 0)
		die("unlink on the mount", NULL);
	/* The daemon frees the inode when the kernel forgets it: retry the
	 * create (bounded, 20 s) until a new file takes the number back. */
	snprintf(fresh, sizeof(fresh), "%s/%s.new", mnt, name);
	t0 = now_s();
	for (tries = 0;; tries++) {
		fd = open(fresh, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd < 0 || write(fd, "new\n", 4) != 4 || fstat(fd, &b) != 0 || close(fd) != 0)
			die(fresh, NULL);
		if (b.st_ino == a.st_ino)
			break;
		if (unlink(fresh) != 0)
			die("unlink", NULL);
		if (now_s() - t0 > 20) {
			fprintf(stderr, "FAIL: inode %llu was not reused in 20 s (%d creates)\n",
				(unsigned long long)a.st_ino, tries + 1);
			return 1;
		}
		usleep(20000); /* poll interval of a bounded wait, not a synchronisation */
	}
	printf("inode %llu reused by %s.new after %d create(s)\n", (unsigned long long)a.st_ino, name,
	       tries + 1);
	st = getattr_by_handle(nfs, old, oldlen);
	if (st != NFS4ERR_STALE) {
		fprintf(stderr, "FAIL: the deleted file's handle answers %d, not NFS4ERR_STALE (%d)\n", st,
			NFS4ERR_STALE);
		return 1;
	}
	printf("old handle: NFS4ERR_STALE\n");
	snprintf(path, sizeof(path), "%s/%s.new", u->file ? u->file : "", name);
	new = handle_of(nfs, path, &newlen);
	if (newlen == oldlen && memcmp(new, old, oldlen) == 0) {
		fprintf(stderr, "FAIL: the new file has the old file's handle\n");
		return 1;
	}
	st = getattr_by_handle(nfs, new, newlen);
	if (st != NFS4_OK) {
		fprintf(stderr, "FAIL: the new file's handle answers %d, not NFS4_OK\n", st);
		return 1;
	}
	printf("new handle: NFS4_OK\n");
	free(old);
	free(new);
	nfs_destroy_url(u);
	nfs_destroy_context(nfs);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 4 && strcmp(argv[1], "put") == 0)
		return cmd_put(argv[2], argc - 3, argv + 3);
	if (argc == 5 && strcmp(argv[1], "stale") == 0)
		return cmd_stale(argv[2], argv[3], argv[4]);
	fprintf(stderr, "usage: ff-nfs-client put URL LOCAL... | stale URL MNT NAME\n");
	return 2;
}
