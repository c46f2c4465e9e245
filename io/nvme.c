/* SPDX-License-Identifier: MIT */
/*
 * NVMe identity through libnvme.  Only namespaces answer NVME_IOCTL_ID;
 * files, loop devices and other disks fail it with ENOTTY and stay "not
 * NVMe".  The maximum transfer size is the kernel's (max_hw_sectors_kb),
 * which it derives from MDTS and the controller's minimum page size, so
 * nothing is assumed here.
 */
#include "io/member.h"

#include <ctype.h>
#include <nvme/ioctl.h>
#include <nvme/types.h>
#include <nvme/util.h>
#include <string.h>
#include <sys/sysmacros.h>

/* Identify strings are space padded, not terminated. */
static void copy_trimmed(char *dst, size_t dst_len, const char *src, size_t src_len)
{
	size_t n = FF_MIN(src_len, dst_len - 1);

	memcpy(dst, src, n);
	dst[n] = '\0';
	while (n > 0 && (dst[n - 1] == ' ' || dst[n - 1] == '\0'))
		dst[--n] = '\0';
	for (size_t i = 0; i < n; i++)
		if (!isprint((unsigned char)dst[i]))
			dst[i] = '?';
}

static uint32_t sysfs_max_transfer(dev_t rdev)
{
	char path[128];
	unsigned long kb = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/queue/max_hw_sectors_kb", major(rdev),
		 minor(rdev));
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (fscanf(f, "%lu", &kb) != 1)
		kb = 0;
	fclose(f);
	return (uint32_t)FF_MIN(kb * 1024, UINT32_MAX);
}

void ff_nvme_identify(struct ff_member *m)
{
	struct nvme_id_ctrl ctrl;
	struct nvme_id_ns ns;
	__u32 nsid = 0;
	__u8 lbaf = 0;

	memset(&m->nvme, 0, sizeof(m->nvme));
	if (!m->is_bdev || nvme_get_nsid(m->fd, &nsid) < 0)
		return;
	if (nvme_identify_ctrl(m->fd, &ctrl) != 0 || nvme_identify_ns(m->fd, nsid, &ns) != 0) {
		ff_log(FF_LOG_WARN, "%s: NVMe namespace %u does not answer Identify", m->path, nsid);
		return;
	}
	m->nvme.is_nvme = true;
	m->nvme.nsid = nsid;
	copy_trimmed(m->nvme.model, sizeof(m->nvme.model), ctrl.mn, sizeof(ctrl.mn));
	copy_trimmed(m->nvme.serial, sizeof(m->nvme.serial), ctrl.sn, sizeof(ctrl.sn));
	copy_trimmed(m->nvme.firmware, sizeof(m->nvme.firmware), ctrl.fr, sizeof(ctrl.fr));
	nvme_id_ns_flbas_to_lbaf_inuse(ns.flbas, &lbaf);
	if (lbaf < 64 && ns.lbaf[lbaf].ds < 32)
		m->nvme.lba_bytes = 1u << ns.lbaf[lbaf].ds;
	m->nvme.max_transfer_bytes = sysfs_max_transfer(m->st_rdev);
}
